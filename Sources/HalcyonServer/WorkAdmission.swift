import Foundation
import Halcyon
import NIOCore

/// Admits image work and makes it stop when its request stops.
///
/// A request takes a processing slot (waiting in the queue at most
/// `queueTimeout`, else 429), then runs its work in a task of its own. A
/// watcher cancels that task when the request times out (504), when the
/// client hangs up, or when ``cancelAll()`` is called at the shutdown
/// deadline; cancellation reaches libvips (``RenderCancellation``), so the
/// work ends within milliseconds. The slot is given back only once the work
/// has really ended. One lock guards the set of running work.
public final class WorkAdmission: Sendable {
    /// Why a request's work was stopped.
    enum StopReason: Sendable { case timeout, hangUp, shutdown }

    private let limiter: InFlightLimiter
    private let queueTimeout: Duration
    private let requestTimeout: Duration
    private let connections: ConnectionLimits
    private let running = Locked<[UInt64: @Sendable () -> Void]>([:])
    private let nextID = Locked<UInt64>(0)

    /// Makes the admission over a limiter and the connections' hang-up watch.
    init(limiter: InFlightLimiter, queueTimeout: Duration, requestTimeout: Duration, connections: ConnectionLimits) {
        self.limiter = limiter
        self.queueTimeout = queueTimeout
        self.requestTimeout = requestTimeout
        self.connections = connections
    }

    /// How many requests run now.
    public var runningCount: Int { running.withLock { $0.count } }

    /// Runs `work` for a request on `channel` under the slot, timeout and hang-up rules; see the type.
    func run<T: Sendable>(on channel: any Channel, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        guard await limiter.acquire(waitingAtMost: queueTimeout) else {
            throw ServerError(status: 429, code: "too_many_requests", message: "too many requests in flight", retryAfter: 1)
        }
        defer { limiter.release() }
        // A client that hung up while its request waited in the queue gets no work started.
        if connections.clientHungUp(channel) {
            throw ServerError(status: 499, code: "client_closed", message: "the client closed the connection")
        }
        let stopped = Locked<StopReason?>(nil)
        let task = Task { try await work() }
        let id = register { stopped.withLock { $0 = $0 ?? .shutdown }; task.cancel() }
        defer { _ = running.withLock { $0.removeValue(forKey: id) } }
        let watcher = Task { await watch(channel, task: task, stopped: stopped) }
        defer { watcher.cancel() }
        let result = await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
        switch stopped.withLock({ $0 }) {
        case .timeout:
            let seconds = Double(requestTimeout.components.seconds) + Double(requestTimeout.components.attoseconds) / 1e18
            throw ServerError(status: 504, code: "request_timeout", message: "the request took longer than \(seconds) s")
        case .hangUp:
            throw ServerError(status: 499, code: "client_closed", message: "the client closed the connection")
        case .shutdown:
            throw ServerError(status: 503, code: "shutting_down", message: "the server is shutting down", retryAfter: 1)
        case nil:
            return try result.get()
        }
    }

    /// Cancels every running request's work (the shutdown deadline).
    public func cancelAll() {
        let cancels = running.withLock { Array($0.values) }
        cancels.forEach { $0() }
    }

    private func register(_ cancel: @escaping @Sendable () -> Void) -> UInt64 {
        let id = nextID.withLock { id -> UInt64 in
            id += 1
            return id
        }
        running.withLock { $0[id] = cancel }
        return id
    }

    /// Polls every 50 ms until the deadline or a hang-up, then cancels `task`.
    private func watch(_ channel: any Channel, task: Task<some Sendable, any Error>, stopped: Locked<StopReason?>) async {
        let deadline = ContinuousClock.now + requestTimeout
        while !Task.isCancelled {
            let now = ContinuousClock.now
            let reason: StopReason? = now >= deadline ? .timeout : connections.clientHungUp(channel) ? .hangUp : nil
            if let reason {
                stopped.withLock { $0 = $0 ?? reason }
                task.cancel()
                return
            }
            try? await Task.sleep(for: min(.milliseconds(50), deadline - now))
        }
    }
}
