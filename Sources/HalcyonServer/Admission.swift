import Foundation
import Halcyon
import NIOCore

/// Admits a request's image work, in order, and makes it stop when its request stops.
///
/// The handler calls `run(on:options:output:_:)` once per request. The request takes a processing slot,
/// waiting in a bounded queue at most the queue timeout (else 429 `too_many_requests`); its work then runs with a
/// `Ticket`: it fetches the source, opens the header and hands it to `Ticket.reserve(_:source:)`, which checks
/// the result's size (422) and reserves the memory estimate from the budget, suspending while the budget is short
/// (429 `memory_busy` after the queue timeout, 413 when over the whole budget); then it processes. When `run`
/// returns, the work has ended and its memory, then its slot, are given back.
///
/// The work races the request's deadline (504) and a stop signal: the client hanging up (499; the connection's
/// handler reports it through `HangUpSignals`, no polling) or ``cancelAll()`` at the shutdown deadline (503).
/// The first to end wins and the others are cancelled; cancellation reaches libvips (through Halcyon's
/// `RenderCancellation`) and a memory wait, so the work ends within milliseconds. No thread is held while
/// waiting for a slot or memory.
/// One lock guards the running work; the slots and the budget each have their own.
public final class Admission: Sendable {
    /// Why a request's work was stopped.
    enum StopReason: Sendable { case timeout, hangUp, shutdown }

    /// How a race between work and its stops ended.
    private enum Outcome<T: Sendable>: Sendable {
        case finished(Result<T, any Error>)
        case stopped(StopReason)
        /// A racer that lost (cancelled, or its signal ended).
        case lost
    }

    /// The running work's stop callbacks, by id.
    private struct Running {
        var stops: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 0
    }

    private let slots: SlotQueue
    /// The process-wide budget of image memory the tickets reserve from.
    let memory: MemoryBudget
    private let queueTimeout: Duration
    private let requestTimeout: Duration
    private let maxResultPixels: Int
    private let maxResultSide: Int
    private let hangUps: HangUpSignals
    private let running = Locked(Running())

    /// Makes the admission over its slots and memory budget; a queued request waits at most `queueTimeout` for a
    /// slot and, again, for memory; results are limited to `maxResultPixels` (all frames) and `maxResultSide`.
    init(
        slots: SlotQueue, memory: MemoryBudget, queueTimeout: Duration, requestTimeout: Duration,
        maxResultPixels: Int = .max, maxResultSide: Int = .max, hangUps: HangUpSignals
    ) {
        self.slots = slots
        self.memory = memory
        self.queueTimeout = queueTimeout
        self.requestTimeout = requestTimeout
        self.maxResultPixels = maxResultPixels
        self.maxResultSide = maxResultSide
        self.hangUps = hangUps
    }

    /// Makes the admission of a server from its settings (`max-in-flight`, `max-queue`, the memory budget, the queue
    /// and request timeouts, the result limits); `hangUps` are its connections' signals.
    convenience init(configuration: ServerConfiguration, hangUps: HangUpSignals) {
        self.init(
            slots: SlotQueue(limit: configuration.maxInFlight, queue: configuration.maxQueue),
            memory: MemoryBudget(capacity: configuration.memoryBudgetMegabytes * 1024 * 1024),
            queueTimeout: .seconds(configuration.queueTimeout), requestTimeout: .seconds(configuration.requestTimeout),
            maxResultPixels: Int(configuration.maxResultMegapixels * 1_000_000), maxResultSide: configuration.maxResultDimension,
            hangUps: hangUps)
    }

    /// How many requests run now.
    public var runningCount: Int { running.withLock { $0.stops.count } }

    /// Runs `work` for a request on `channel`: a slot, then `work` with the request's ticket, estimated for `options`
    /// encoded as `output` (nil: the source's format); see the type.
    ///
    /// `channel` is nil when the request did not come through Halcyon's own connection handler (routes mounted in
    /// another Hummingbird app, whose context has no channel to watch): there is then no hang-up signal, and the
    /// work ends at the request's deadline, at ``cancelAll()``, or when the calling task is cancelled.
    ///
    /// Throws `ServerError` 429 when no slot comes free in time, 499 when the client hung up (before the work
    /// starts too), 504 at the request's deadline and 503 at shutdown, else what `work` throws;
    /// `CancellationError` when the calling task itself is cancelled. Returns only once `work` has ended, its memory
    /// and slot given back.
    func run<T: Sendable>(
        on channel: (any Channel)?, options: ProcessingOptions = ProcessingOptions(), output: ImageFormat? = nil,
        _ work: @escaping @Sendable (Ticket) async throws -> T
    ) async throws -> T {
        guard await slots.acquire(waitingAtMost: queueTimeout) else {
            throw ServerError(status: 429, code: "too_many_requests", message: "too many requests in flight", retryAfter: 1)
        }
        defer { slots.release() }
        let ticket = Ticket(budget: memory, options: options, output: output, maxResultPixels: maxResultPixels,
                            maxResultSide: maxResultSide, wait: queueTimeout)
        // Runs before the slot's release: a request waiting for the slot finds the memory free.
        defer { ticket.release() }
        let (stops, stop) = AsyncStream.makeStream(of: StopReason.self, bufferingPolicy: .bufferingOldest(1))
        defer { stop.finish() }
        // A client that hung up while its request waited in the queue gets no work started.
        var hangUp: HangUpSignals.Registration?
        if let channel {
            guard let registration = hangUps.register(channel, { stop.yield(.hangUp) }) else { throw error(for: .hangUp) }
            hangUp = registration
        }
        defer { if let hangUp { hangUps.cancel(hangUp) } }
        let id = register { stop.yield(.shutdown) }
        defer { _ = running.withLock { $0.stops.removeValue(forKey: id) } }
        switch await race({ try await work(ticket) }, against: stops) {
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

    /// Stops every running request's work (the shutdown deadline): each answers 503 once its work has ended.
    /// Safe from any thread.
    public func cancelAll() {
        let cancels = running.withLock { Array($0.stops.values) }
        cancels.forEach { $0() }
    }

    /// Records a running work's stop callback under a new id.
    private func register(_ cancel: @escaping @Sendable () -> Void) -> UInt64 {
        running.withLock { running -> UInt64 in
            running.nextID += 1
            running.stops[running.nextID] = cancel
            return running.nextID
        }
    }
}
