import Foundation

/// One caller's continuation, resumed by whichever comes first: the result or a cancellation.
final class Waiter<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var pending: Result<Value, any Error>?
        var finished = false
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
