import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// One HTTP answer as AsyncHTTPClient's delegate receives it on its connection's event loop: the head for the task
/// that waits for it, then the whole body gathered on the event loop, with no hop to that task per chunk.
///
/// The body is not read until ``readBody(_:after:)`` asks for it (the head's future holds the connection's reads), so a
/// head that fails its checks costs no body bytes; ``finish()`` ends an answer whose body is not wanted. On the event
/// loop, each chunk is counted against the limit as it arrives (over it, the request fails with `tooLarge`), touches
/// the idle watch, reports progress and is handed to the task's data receivers. Reading the body as an async
/// sequence instead (one element at a time) woke the reading task and the event loop for every chunk: about 100
/// context switches for a 5 MB source, and a core idle a tenth of the time with two requests on two cores.
final class ResponseCollector: HTTPClientResponseDelegate, Sendable {
    typealias Response = Void

    /// The status line and headers.
    struct Head: Sendable {
        let status: HTTPResponseStatus
        let headers: HTTPHeaders
    }

    /// What a body read needs: its limit, and what each chunk reports to.
    struct Reading: Sendable {
        var limit: Int
        var url: URL
        var activity: IdleMonitor.Watch
        /// Progress and data receivers; nil for a body that is only counted and dropped (a redirect's).
        var task: SessionDataTask?
        var expectedTotal: Int?
    }

    private struct State {
        var head: Result<Head, any Error>?
        var headWaiter: CheckedContinuation<Head, any Error>?
        /// The head's future, until it is settled once: the body is wanted (success) or never will be (failure).
        var demand: EventLoopPromise<Void>?
        var reading: Reading?
        var body = BodyAccumulator(prefix: Data())
    }

    private let state = Locked(State())
    /// The request while it runs (dropped when it ends: it holds this delegate), and its result.
    private let request = Locked<(task: HTTPClient.Task<Void>?, result: EventLoopFuture<Void>?)>((nil, nil))

    /// Starts `request` on `client` with this collector as its delegate.
    func start(_ request: HTTPClient.Request, on client: HTTPClient, deadline: NIODeadline) {
        let task = client.execute(request: request, delegate: self, deadline: deadline)
        self.request.withLock { $0 = (task, task.futureResult) }
        task.futureResult.whenComplete { [self] _ in self.request.withLock { $0.task = nil } }
        task.futureResult.whenFailure { [self] error in
            let (waiter, demand) = state.withLock { state -> (CheckedContinuation<Head, any Error>?, EventLoopPromise<Void>?) in
                if state.head == nil { state.head = .failure(error) }
                defer { state.headWaiter = nil }
                return (state.headWaiter, Self.settle(&state))
            }
            waiter?.resume(throwing: error)
            demand?.fail(error)
        }
    }

    /// The answer's head; throws what ended the request before one arrived. Cancelling the task cancels the request.
    func head() async throws -> Head {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Head, any Error>) in
                let ready = state.withLock { state -> Result<Head, any Error>? in
                    if state.head == nil { state.headWaiter = waiter }
                    return state.head
                }
                if let ready { waiter.resume(with: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Reads the whole body after `body` (a resumed prefix, or empty); throws what ended the request, with the bytes
    /// so far (``Failure``). Cancelling the task cancels the request.
    func readBody(_ reading: Reading, after body: BodyAccumulator) async throws -> BodyAccumulator {
        let demand = state.withLock { state -> EventLoopPromise<Void>? in
            state.reading = reading
            state.body = body
            return Self.settle(&state)
        }
        demand?.succeed()
        guard let result = request.withLock({ $0.result }) else { return body }
        do {
            try await withTaskCancellationHandler {
                try await result.get()
            } onCancel: {
                cancel()
            }
        } catch {
            throw Failure(cause: error, received: state.withLock { $0.body })
        }
        return state.withLock { $0.body }
    }

    /// Ends the answer when its body is not read: the request is cancelled and its connection closed.
    func finish() {
        let demand = state.withLock { Self.settle(&$0) }
        guard let demand else { return }
        demand.fail(CancellationError())
        cancel()
    }

    /// What ended a body read, with the bytes that had arrived.
    struct Failure: Error {
        let cause: any Error
        let received: BodyAccumulator
    }

    private func cancel() {
        request.withLock { $0.task }?.cancel()
    }

    /// The demand promise, once: nil when it was settled already (or no head has come).
    private static func settle(_ state: inout State) -> EventLoopPromise<Void>? {
        defer { state.demand = nil }
        return state.demand
    }

    // MARK: - Delegate (on the event loop)

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let demand = task.eventLoop.makePromise(of: Void.self)
        let answer = Head(status: head.status, headers: head.headers)
        let waiter = state.withLock { state -> CheckedContinuation<Head, any Error>? in
            state.head = .success(answer)
            state.demand = demand
            defer { state.headWaiter = nil }
            return state.headWaiter
        }
        waiter?.resume(returning: answer)
        return demand.futureResult
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let arrived = state.withLock { state -> (count: Int, reading: Reading)? in
            guard let reading = state.reading else { return nil }
            if reading.task == nil { state.body.skip(buffer.readableBytes) } else { state.body.append(buffer) }
            return (state.body.count, reading)
        }
        guard let (count, reading) = arrived else { return task.eventLoop.makeSucceededVoidFuture() }
        reading.activity.touch()
        if count > reading.limit {
            let error = HalcyonError.responseError(reason: .tooLarge(url: reading.url, limit: reading.limit, received: count))
            return task.eventLoop.makeFailedFuture(error)
        }
        if let session = reading.task {
            session.reportProgress(received: count, expected: reading.expectedTotal)
            if session.hasDataReceivers { session.reportData(Data(buffer: buffer)) }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {}
}
