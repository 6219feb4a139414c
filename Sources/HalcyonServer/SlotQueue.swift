import Foundation
import Halcyon

/// The processing slots of an ``Admission``: up to `limit` requests run, up to
/// `queue` wait (first come, first served) for at most their deadline, the
/// rest are refused at once (the admission answers 429). A waiter suspends (no
/// thread is held) and is resumed by a release, its deadline or the
/// cancellation of its task. One lock guards the counts and the waiters.
final class SlotQueue: Sendable {
    /// The slots taken and the waiters, in arrival order, under the lock.
    private struct State {
        var running = 0
        var nextID = 0
        var waiters: [(id: Int, continuation: CheckedContinuation<Bool, Never>)] = []
    }

    /// Most running at once.
    let limit: Int
    /// Most waiting.
    let queue: Int
    private let state = Locked(State())

    /// Called between deciding to queue and queueing (tests: a release in that window).
    private let beforeQueueing: (@Sendable () -> Void)?

    /// Makes the slots: `limit` (at least 1) run, `queue` (at least 0) wait; `beforeQueueing` is for tests.
    init(limit: Int, queue: Int, beforeQueueing: (@Sendable () -> Void)? = nil) {
        self.limit = max(1, limit)
        self.queue = max(0, queue)
        self.beforeQueueing = beforeQueueing
    }

    /// How many run now.
    var running: Int { state.withLock { $0.running } }

    /// How many wait now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Takes a slot, waiting in the queue if there is room for at most `timeout`
    /// (nil: no deadline); false when refused, timed out or cancelled while waiting.
    /// A waiter suspends; a cancelled task leaves the queue at once.
    func acquire(waitingAtMost timeout: Duration? = nil) async -> Bool {
        enum Decision { case granted, refused, wait(Int) }
        let decision = state.withLock { state -> Decision in
            if state.running < limit {
                state.running += 1
                return .granted
            }
            guard state.waiters.count < queue else { return .refused }
            state.nextID += 1
            return .wait(state.nextID)
        }
        switch decision {
        case .granted: return true
        case .refused: return false
        case .wait(let id):
            beforeQueueing?()
            var deadline: Task<Void, Never>?
            defer { deadline?.cancel() }
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    // Looked at again under the lock that queues it: a slot freed, or the queue filled, since the
                    // decision (a release then found no waiter and gave its slot back to the count).
                    let answer = state.withLock { state -> Bool? in
                        if Task.isCancelled { return false }
                        if state.running < limit {
                            state.running += 1
                            return true
                        }
                        guard state.waiters.count < queue else { return false }
                        state.waiters.append((id, continuation))
                        return nil
                    }
                    if let answer {
                        continuation.resume(returning: answer)
                        return
                    }
                    // Started once queued, so giving up always finds the waiter.
                    deadline = timeout.map { timeout in
                        Task { [weak self] in
                            try? await Task.sleep(for: timeout)
                            guard !Task.isCancelled else { return }
                            self?.giveUp(id)
                        }
                    }
                }
            } onCancel: {
                giveUp(id)
            }
        }
    }

    /// Takes waiter `id` out of the queue and tells it no, if it still waits.
    private func giveUp(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index).continuation
        }
        waiter?.resume(returning: false)
    }

    /// Gives a slot back, to the first waiter if there is one.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if !state.waiters.isEmpty { return state.waiters.removeFirst().continuation }
            state.running -= 1
            return nil
        }
        next?.resume(returning: true)
    }
}
