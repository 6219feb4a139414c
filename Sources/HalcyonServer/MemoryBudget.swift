import Foundation
import Halcyon

/// The process-wide budget of bytes for images being worked on, held by the
/// ``Admission``, so concurrent requests cannot together decode more pixels
/// than the machine should hold.
///
/// A job estimates what it needs (decoded source plus results, all frames)
/// and ``reserve(_:waitingAtMost:)`` admits it before any pixel is decoded:
/// at once when the bytes are free, after waiting when others hold them, or
/// never when the job alone is over the whole budget. A waiting job suspends
/// (no thread is held); it is resumed when a ``MemoryReservation`` gives bytes
/// back and it fits, when its deadline passes, or when its task is cancelled.
/// Waiters that fit are resumed in the order they came. One lock.
final class MemoryBudget: Sendable {
    /// The budget in bytes.
    let capacity: Int

    /// A job waiting for `bytes`, resumed through its continuation (nil: admitted).
    private struct Waiter {
        let id: UInt64
        let bytes: Int
        let continuation: CheckedContinuation<HalcyonError?, Never>
    }

    /// The bytes held and the waiters, in arrival order, under the lock.
    private struct State {
        var used = 0
        var nextID: UInt64 = 0
        var waiters: [Waiter] = []
        /// Waits begun but not yet queued or admitted.
        var pending: Set<UInt64> = []
        /// How a pending wait ended before it was queued (its task cancelled, or a deadline of zero passed).
        var endedEarly: [UInt64: HalcyonError] = [:]
    }

    private let state = Locked(State())

    /// Makes a budget of `capacity` bytes (at least 1 MiB).
    init(capacity: Int) {
        self.capacity = max(1 << 20, capacity)
    }

    /// Bytes held by reservations now.
    var usedBytes: Int { state.withLock { $0.used } }

    /// Jobs waiting for bytes now.
    var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Takes `bytes` from the budget, suspending up to `timeout` for them to come free.
    ///
    /// Throws `processorError(.memoryBudgetExceeded)` with `waited: false` when
    /// `bytes` exceeds the whole budget (nothing is waited for), with `waited:
    /// true` when the deadline passed, and `requestError(.taskCancelled)` when
    /// the calling task is cancelled while waiting.
    func reserve(_ bytes: Int, waitingAtMost timeout: Duration) async throws(HalcyonError) -> MemoryReservation {
        let needed = max(0, bytes)
        guard needed <= capacity else {
            throw .processorError(reason: .memoryBudgetExceeded(neededBytes: needed, budgetBytes: capacity, waited: false))
        }
        // The common case, bytes free and nobody waiting, needs no deadline, continuation or queue.
        if !Task.isCancelled, state.withLock({ Self.take(needed, from: &$0, capacity: capacity) }) {
            return MemoryReservation(bytes: needed, budget: self)
        }
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            state.pending.insert(state.nextID)
            return state.nextID
        }
        let deadline = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.end(id, with: .processorError(reason: .memoryBudgetExceeded(
                neededBytes: needed, budgetBytes: self?.capacity ?? 0, waited: true)))
        }
        defer { deadline.cancel() }
        let failure = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in wait(id, bytes: needed, continuation) }
        } onCancel: {
            end(id, with: .requestError(reason: .taskCancelled(task: nil, token: nil)))
        }
        if let failure { throw failure }
        return MemoryReservation(bytes: needed, budget: self)
    }

    /// Takes the bytes at once when they are free and nobody waits before (unless the task was cancelled);
    /// else ends the wait when its deadline already passed, or queues it.
    private func wait(_ id: UInt64, bytes: Int, _ continuation: CheckedContinuation<HalcyonError?, Never>) {
        let answer = state.withLock { state -> HalcyonError?? in
            state.pending.remove(id)
            let early = state.endedEarly.removeValue(forKey: id)
            if case .requestError = early { return .some(early) }
            if Self.take(bytes, from: &state, capacity: capacity) { return .some(nil) }
            if let early { return .some(early) }
            state.waiters.append(Waiter(id: id, bytes: bytes, continuation: continuation))
            return .none
        }
        if case .some(let failure) = answer { continuation.resume(returning: failure) }
    }

    /// Ends the wait `id` with `failure` (deadline or cancellation), if it still waits.
    private func end(_ id: UInt64, with failure: HalcyonError) {
        let (waiter, admitted) = state.withLock { state -> (Waiter?, [Waiter]) in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                if state.pending.contains(id), state.endedEarly[id] == nil { state.endedEarly[id] = failure }
                return (nil, [])
            }
            let waiter = state.waiters.remove(at: index)
            // A large waiter leaving may let smaller ones behind it in.
            return (waiter, Self.admitWaiters(&state, capacity: capacity))
        }
        waiter?.continuation.resume(returning: failure)
        admitted.forEach { $0.continuation.resume(returning: nil) }
    }

    /// Takes `bytes` back from a released reservation and resumes the waiters that now fit, in order.
    fileprivate func giveBack(_ bytes: Int) {
        let admitted = state.withLock { state -> [Waiter] in
            state.used -= bytes
            return Self.admitWaiters(&state, capacity: capacity)
        }
        admitted.forEach { $0.continuation.resume(returning: nil) }
    }

    /// Takes `bytes` when they are free and nobody waits before them.
    private static func take(_ bytes: Int, from state: inout State, capacity: Int) -> Bool {
        guard state.waiters.isEmpty, state.used + bytes <= capacity else { return false }
        state.used += bytes
        return true
    }

    /// Takes the bytes of the waiters at the head of the queue while they fit, in order; gives them back to resume.
    private static func admitWaiters(_ state: inout State, capacity: Int) -> [Waiter] {
        var admitted: [Waiter] = []
        while let first = state.waiters.first, state.used + first.bytes <= capacity {
            state.used += first.bytes
            admitted.append(state.waiters.removeFirst())
        }
        return admitted
    }
}

/// Bytes held from a ``MemoryBudget``; given back once, by ``release()`` or when freed.
final class MemoryReservation: Sendable {
    /// The bytes held.
    let bytes: Int
    private let budget: MemoryBudget
    private let released = Locked(false)

    fileprivate init(bytes: Int, budget: MemoryBudget) {
        self.bytes = bytes
        self.budget = budget
    }

    deinit { release() }

    /// Gives the bytes back; later calls do nothing.
    func release() {
        let first = released.withLock { released -> Bool in
            defer { released = true }
            return !released
        }
        if first { budget.giveBack(bytes) }
    }
}
