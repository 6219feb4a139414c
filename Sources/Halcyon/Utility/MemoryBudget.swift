import Foundation

/// A process-wide budget of bytes for images being worked on, so concurrent
/// jobs cannot together decode more pixels than the machine should hold.
///
/// A job estimates what it needs (decoded source plus results, all frames)
/// and ``reserve(_:waitingAtMost:)`` admits it before any pixel is decoded:
/// at once when the bytes are free, after waiting when others hold them, or
/// never when the job alone is over the whole budget. Reservations are given
/// back by ``MemoryReservation/release()`` (or when they are freed).
/// Waiting blocks the calling thread (work runs on processing threads), in
/// slices, so a cancelled ``RenderCancellation`` ends the wait at once.
///
/// `@unchecked Sendable`: `used` is only read or written with `condition` locked.
package final class MemoryBudget: @unchecked Sendable {
    /// The budget in bytes.
    package let capacity: Int
    private let condition = NSCondition()
    private var used = 0

    /// Makes a budget of `capacity` bytes (at least 1 MiB).
    package init(capacity: Int) {
        self.capacity = max(1 << 20, capacity)
    }

    /// Bytes held by reservations now.
    package var usedBytes: Int {
        condition.lock()
        defer { condition.unlock() }
        return used
    }

    /// Takes `bytes` from the budget, waiting up to `timeout` for them to come free.
    ///
    /// Throws `processorError(.memoryBudgetExceeded)` with `waited: false` when
    /// `bytes` exceeds the whole budget (nothing is waited for), with `waited:
    /// true` when the deadline passed, and `requestError(.taskCancelled)` when
    /// the thread's ``RenderCancellation`` is cancelled while waiting.
    package func reserve(_ bytes: Int, waitingAtMost timeout: Duration) throws(HalcyonError) -> MemoryReservation {
        let needed = max(0, bytes)
        guard needed <= capacity else {
            throw .processorError(reason: .memoryBudgetExceeded(neededBytes: needed, budgetBytes: capacity, waited: false))
        }
        let deadline = Date().addingTimeInterval(timeout.timeInterval)
        condition.lock()
        defer { condition.unlock() }
        while used + needed > capacity {
            if RenderCancellation.currentIsCancelled { throw .requestError(reason: .taskCancelled(task: nil, token: nil)) }
            let now = Date()
            guard now < deadline else {
                throw .processorError(reason: .memoryBudgetExceeded(neededBytes: needed, budgetBytes: capacity, waited: true))
            }
            _ = condition.wait(until: min(deadline, now.addingTimeInterval(0.02)))
        }
        used += needed
        return MemoryReservation(bytes: needed, budget: self)
    }

    fileprivate func giveBack(_ bytes: Int) {
        condition.lock()
        used -= bytes
        condition.broadcast()
        condition.unlock()
    }
}

/// Bytes held from a ``MemoryBudget``; given back once, by ``release()`` or when freed.
package final class MemoryReservation: Sendable {
    /// The bytes held.
    package let bytes: Int
    private let budget: MemoryBudget
    private let released = Locked(false)

    fileprivate init(bytes: Int, budget: MemoryBudget) {
        self.bytes = bytes
        self.budget = budget
    }

    deinit { release() }

    /// Gives the bytes back; later calls do nothing.
    package func release() {
        let first = released.withLock { released -> Bool in
            defer { released = true }
            return !released
        }
        if first { budget.giveBack(bytes) }
    }
}
