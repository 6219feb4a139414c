import Foundation
import Halcyon
import NIOCore

/// Admits image work and makes it stop when its request stops.
///
/// A request takes a processing slot (waiting in the queue at most
/// `queueTimeout`, else 429), then runs its work in a task group that races
/// it against the request's deadline (504) and against a stop signal: the
/// client hanging up (499; the connection's handler reports it through
/// ``HangUpSignals``, no polling) or ``cancelAll()`` at the shutdown
/// deadline (503). The first to end wins and the others are cancelled;
/// cancellation reaches libvips (``RenderCancellation``), so the work ends
/// within milliseconds. The group returns, and the slot is given back, only
/// once the work has really ended. One lock guards the set of running work.
public final class WorkAdmission: Sendable {
    /// Why a request's work was stopped.
    enum StopReason: Sendable { case timeout, hangUp, shutdown }

    /// How a race between work and its stops ended.
    private enum Outcome<T: Sendable>: Sendable {
        case finished(Result<T, any Error>)
        case stopped(StopReason)
        /// A racer that lost (cancelled, or its signal ended).
        case lost
    }

    private let limiter: InFlightLimiter
    private let queueTimeout: Duration
    private let requestTimeout: Duration
    private let hangUps: HangUpSignals
    private let running = Locked<[UInt64: @Sendable () -> Void]>([:])
    private let nextID = Locked<UInt64>(0)

    /// Makes the admission over a limiter and the connections' hang-up signals.
    init(limiter: InFlightLimiter, queueTimeout: Duration, requestTimeout: Duration, connections: ConnectionLimits) {
        self.limiter = limiter
        self.queueTimeout = queueTimeout
        self.requestTimeout = requestTimeout
        self.hangUps = connections.hangUps
    }

    /// How many requests run now.
    public var runningCount: Int { running.withLock { $0.count } }

    /// Runs `work` for a request on `channel` under the slot, timeout and hang-up rules; see the type.
    func run<T: Sendable>(on channel: any Channel, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        guard await limiter.acquire(waitingAtMost: queueTimeout) else {
            throw ServerError(status: 429, code: "too_many_requests", message: "too many requests in flight", retryAfter: 1)
        }
        defer { limiter.release() }
        let (stops, stop) = AsyncStream.makeStream(of: StopReason.self, bufferingPolicy: .bufferingOldest(1))
        defer { stop.finish() }
        // A client that hung up while its request waited in the queue gets no work started.
        guard let hangUp = hangUps.register(channel, { stop.yield(.hangUp) }) else { throw error(for: .hangUp) }
        defer { hangUps.cancel(hangUp) }
        let id = register { stop.yield(.shutdown) }
        defer { _ = running.withLock { $0.removeValue(forKey: id) } }
        switch await race(work, against: stops) {
        case .finished(let result): return try result.get()
        case .stopped(let reason): throw error(for: reason)
        // Only when every racer lost: the request itself was cancelled.
        case .lost: throw CancellationError()
        }
    }

    /// Runs `work`, a sleep to the request's deadline and a wait for the first of `stops` side by side: the first
    /// to end gives the outcome, the others are cancelled, and all have ended when this returns.
    private func race<T: Sendable>(
        _ work: @escaping @Sendable () async throws -> T, against stops: AsyncStream<StopReason>
    ) async -> Outcome<T> {
        let timeout = requestTimeout
        return await withTaskGroup(of: Outcome<T>.self) { group in
            group.addTask {
                do { return .finished(.success(try await work())) } catch { return .finished(.failure(error)) }
            }
            group.addTask {
                do { try await Task.sleep(for: timeout) } catch { return .lost }
                return .stopped(.timeout)
            }
            group.addTask {
                for await reason in stops { return .stopped(reason) }
                return .lost
            }
            while let outcome = await group.next() {
                if case .lost = outcome { continue }
                group.cancelAll()
                return outcome
            }
            return .lost
        }
    }

    /// The error a request stopped for `reason` answers with.
    private func error(for reason: StopReason) -> ServerError {
        switch reason {
        case .timeout:
            let seconds = Double(requestTimeout.components.seconds) + Double(requestTimeout.components.attoseconds) / 1e18
            return ServerError(status: 504, code: "request_timeout", message: "the request took longer than \(seconds) s")
        case .hangUp:
            return ServerError(status: 499, code: "client_closed", message: "the client closed the connection")
        case .shutdown:
            return ServerError(status: 503, code: "shutting_down", message: "the server is shutting down", retryAfter: 1)
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
}
