import Foundation
import Halcyon

/// Host-name lookups that a caller can stop waiting for.
///
/// The resolver (getaddrinfo by default) blocks its thread and cannot be
/// interrupted. Lookups therefore run on at most `threads` threads of their
/// own (not Dispatch's: blocked workers of a global queue stall every other
/// user of it until Dispatch adds threads, about one a second), and a caller
/// only waits for one: it stops waiting when its task is
/// cancelled or after `timeout`, and the abandoned lookup finishes later on its
/// thread without holding anything of the caller's (a downloader slot, a
/// request). Callers asking for the same name share one lookup. At most
/// `maxInFlight` names are looked up or waiting for a thread at once (running
/// lookups count until they return, even when nobody waits for them any more);
/// past that a new name is refused at once with ``Failure/busy``. A queued name
/// whose callers all gave up is dropped before it starts.
///
/// One lock guards the state; callers are resumed outside it.
final class HostLookup: Sendable {
    /// Why a lookup gave no answer.
    enum Failure: Error, Equatable {
        /// The lookup took longer than the timeout.
        case timedOut
        /// The waiting task was cancelled.
        case cancelled
        /// Too many names were being looked up already.
        case busy
    }

    typealias Outcome = Result<[IPAddress], Failure>

    private struct Waiter {
        var continuation: CheckedContinuation<Outcome, Never>
        var timer: Task<Void, Never>
    }

    private struct Job {
        var waiters: [Int: Waiter] = [:]
        var started = false
    }

    private struct State {
        var jobs: [String: Job] = [:]
        var queue: [String] = []
        var running = 0
        var nextWaiter = 0
        /// Waiters not registered yet, and those of them cancelled meanwhile.
        var unregistered: Set<Int> = []
        var cancelledEarly: Set<Int> = []
    }

    /// Most lookups running at once (each blocks a thread).
    let threads: Int
    /// Most names looked up or queued at once.
    let maxInFlight: Int
    /// How long a caller waits for an answer.
    let timeout: Duration
    private let resolver: @Sendable (String) -> [IPAddress]
    private let state = Locked(State())

    /// Makes a lookup service over `resolver`, a blocking function from a host name to its addresses.
    init(threads: Int = 16, maxInFlight: Int = 64, timeout: Duration, resolver: @escaping @Sendable (String) -> [IPAddress]) {
        self.threads = max(1, threads)
        self.maxInFlight = max(self.threads, maxInFlight)
        self.timeout = timeout
        self.resolver = resolver
    }

    /// How many names are being looked up or wait for a thread.
    var inFlight: Int { state.withLock { $0.jobs.count } }

    /// How many lookups are running on their threads now (abandoned ones included).
    var running: Int { state.withLock { $0.running } }

    /// The addresses of `name` (empty when it does not resolve), or why there are none.
    func addresses(of name: String) async -> Outcome {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter += 1 }
            state.unregistered.insert(state.nextWaiter)
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                register(id, for: name, continuation)
            }
        } onCancel: {
            finish(id, of: name, with: .failure(.cancelled))
        }
    }

    // MARK: - Steps

    private func register(_ id: Int, for name: String, _ continuation: CheckedContinuation<Outcome, Never>) {
        let timeout = self.timeout
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.finish(id, of: name, with: .failure(.timedOut))
        }
        let refusal = state.withLock { state -> Failure? in
            if state.cancelledEarly.remove(id) != nil { return .cancelled }
            state.unregistered.remove(id)
            if state.jobs[name] == nil {
                guard state.jobs.count < maxInFlight else { return .busy }
                state.jobs[name] = Job()
                state.queue.append(name)
            }
            state.jobs[name]?.waiters[id] = Waiter(continuation: continuation, timer: timer)
            return nil
        }
        if let refusal {
            timer.cancel()
            continuation.resume(returning: .failure(refusal))
            return
        }
        pump()
    }

    /// Resumes waiter `id` with `outcome` unless it was resumed already; a queued name nobody waits for is dropped.
    private func finish(_ id: Int, of name: String, with outcome: Outcome) {
        let waiter = state.withLock { state -> Waiter? in
            guard var job = state.jobs[name], let waiter = job.waiters.removeValue(forKey: id) else {
                if state.unregistered.remove(id) != nil { state.cancelledEarly.insert(id) }
                return nil
            }
            if job.waiters.isEmpty && !job.started {
                state.jobs[name] = nil
                state.queue.removeAll { $0 == name }
            } else {
                state.jobs[name] = job
            }
            return waiter
        }
        waiter?.timer.cancel()
        waiter?.continuation.resume(returning: outcome)
    }

    /// Starts queued lookups while threads are free.
    private func pump() {
        let starting = state.withLock { state -> [String] in
            var starting: [String] = []
            while state.running < threads, !state.queue.isEmpty {
                let name = state.queue.removeFirst()
                guard state.jobs[name] != nil else { continue }
                state.jobs[name]?.started = true
                state.running += 1
                starting.append(name)
            }
            return starting
        }
        for name in starting {
            let thread = Thread { [self] in
                let addresses = resolver(name)
                complete(name, with: addresses)
            }
            thread.name = "halcyon-lookup"
            thread.stackSize = 1024 * 1024
            thread.start()
        }
    }

    private func complete(_ name: String, with addresses: [IPAddress]) {
        let waiters = state.withLock { state -> [Waiter] in
            state.running -= 1
            let job = state.jobs.removeValue(forKey: name)
            return job.map { Array($0.waiters.values) } ?? []
        }
        pump()
        for waiter in waiters {
            waiter.timer.cancel()
            waiter.continuation.resume(returning: .success(addresses))
        }
    }
}
