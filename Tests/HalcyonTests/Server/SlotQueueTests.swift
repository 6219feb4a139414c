import Halcyon
@testable import HalcyonServer
import Testing

/// The admission's slot queue under races its callers cannot arrange by hand.
@Suite("Server: admission slot queue")
struct SlotQueueTests {
    @Test("A slot given back while a caller decides to queue goes to that caller, not to the count behind its back")
    func releaseBetweenDecisionAndQueueing() async {
        let holder = Locked<SlotQueue?>(nil)
        // The hook runs after the caller found no free slot and before it queues: the holder of the only slot
        // finishes right then, and its release finds no waiter.
        let limiter = SlotQueue(limit: 1, queue: 4, beforeQueueing: { holder.withLock { $0 }?.release() })
        holder.withLock { $0 = limiter }
        #expect(await limiter.acquire(), "the first caller takes the only slot")
        let second = await limiter.acquire(waitingAtMost: .seconds(3))
        #expect(second, "the second caller got the slot that came free (before: it waited out its 3 s and was refused)")
        #expect(limiter.running == 1 && limiter.waiting == 0)
        limiter.release()
        #expect(limiter.running == 0)
    }

    @Test("Waiters are served in order, refused past the queue, and a timed-out waiter leaves the queue")
    func queueOrderAndTimeout() async {
        let limiter = SlotQueue(limit: 1, queue: 1)
        #expect(await limiter.acquire())
        async let queued = limiter.acquire(waitingAtMost: .seconds(5))
        while limiter.waiting == 0 { await Task.yield() }
        #expect(await limiter.acquire(waitingAtMost: .seconds(5)) == false, "the queue of one is full")
        limiter.release()
        #expect(await queued, "the waiter took the released slot")
        #expect(await limiter.acquire(waitingAtMost: .milliseconds(50)) == false, "timed out")
        #expect(limiter.waiting == 0 && limiter.running == 1)
        limiter.release()
    }
}
