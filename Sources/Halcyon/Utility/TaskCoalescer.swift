import Foundation

/// Runs one piece of work per key at a time and shares its result with every
/// caller that asks for the same key meanwhile.
///
/// A caller that is cancelled stops waiting at once and gets
/// `CancellationError`; the work itself is cancelled only when its last
/// waiting caller is gone (Nuke's rule), and that caller returns once the
/// work has ended. Every caller is resumed exactly once.
/// Thread-safe.
final class TaskCoalescer<Value: Sendable>: Sendable {
    private struct Entry {
        let task: Task<Value, any Error>
        var waiting: Int
    }

    private let entries = Locked<[String: Entry]>([:])

    /// How many keys have work in flight.
    var inFlightCount: Int { entries.withLock { $0.count } }

    /// The result of `work` for `key`, started now or shared with a caller already waiting.
    func value(forKey key: String, work: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let task = entries.withLock { entries -> Task<Value, any Error> in
            if var entry = entries[key] {
                entry.waiting += 1
                entries[key] = entry
                return entry.task
            }
            let task = Task<Value, any Error> { try await work() }
            entries[key] = Entry(task: task, waiting: 1)
            return task
        }
        let waiter = Waiter<Value>()
        defer { waiter.acknowledge() }
        let value = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                waiter.attach(continuation)
                Task {
                    let result = await task.result
                    if waiter.finish(with: result), waiter.claimLeave(unlessFinished: false) { self.leave(key, task: task) }
                }
            }
        } onCancel: {
            // The last caller cancels the work and waits for it to end (its
            // result is then dropped below), so when a cancelled caller returns
            // no work it started is still running. Others leave at once.
            guard waiter.claimLeave(unlessFinished: true) else { return }
            if self.leaveOnCancel(key, task: task) {
                task.cancel()
            } else {
                _ = waiter.finish(with: .failure(CancellationError()))
            }
        }
        return try checked(value)
    }

    /// The result of `value(forKey:work:)` for a caller, who must not see a value once cancelled.
    private func checked(_ value: Value) throws -> Value {
        try Task.checkCancellation()
        return value
    }

    private func leave(_ key: String, task: Task<Value, any Error>) {
        entries.withLock { entries in
            guard var entry = entries[key], entry.task == task else { return }
            entry.waiting -= 1
            entries[key] = entry.waiting <= 0 ? nil : entry
        }
    }

    /// Leaves when others still wait (false), or removes the entry when this is the last caller (true).
    private func leaveOnCancel(_ key: String, task: Task<Value, any Error>) -> Bool {
        entries.withLock { entries -> Bool in
            guard var entry = entries[key], entry.task == task else { return false }
            if entry.waiting <= 1 {
                entries[key] = nil
                return true
            }
            entry.waiting -= 1
            entries[key] = entry
            return false
        }
    }
}

/// One caller's continuation, resumed by whichever comes first: the result or a cancellation.
private final class Waiter<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var pending: Result<Value, any Error>?
        var finished = false
        var left = false
    }

    private let state = Locked(State())

    func attach(_ continuation: CheckedContinuation<Value, any Error>) {
        let pending = state.withLock { state -> Result<Value, any Error>? in
            if let pending = state.pending {
                state.pending = nil
                return pending
            }
            state.continuation = continuation
            return nil
        }
        if let pending { continuation.resume(with: pending) }
    }

    /// Takes the waiter's lock once the caller has resumed, so ThreadSanitizer sees the value's
    /// handoff (it misses the one a continuation gives; see ``awaitDelivery(_:)``).
    func acknowledge() {
        state.withLock { _ in }
    }

    /// Marks the caller as counted out of its entry; false when it already was, or
    /// (with `unlessFinished`) when its result has already been delivered.
    func claimLeave(unlessFinished: Bool) -> Bool {
        state.withLock { state -> Bool in
            guard !state.left, !(unlessFinished && state.finished) else { return false }
            state.left = true
            return true
        }
    }

    /// Resumes the caller with `result` unless it was resumed already; true the first time.
    func finish(with result: Result<Value, any Error>) -> Bool {
        let (first, continuation) = state.withLock { state -> (Bool, CheckedContinuation<Value, any Error>?) in
            guard !state.finished else { return (false, nil) }
            state.finished = true
            guard let continuation = state.continuation else {
                state.pending = result
                return (true, nil)
            }
            state.continuation = nil
            return (true, continuation)
        }
        continuation?.resume(with: result)
        return first
    }
}
