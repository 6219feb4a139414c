import Foundation
@testable import Halcyon
import Testing

/// ``Locked``: one mutex and one value in one heap block, shared by every copy.
@Suite struct LockedTests {
    private final class Payload: Sendable {}

    @Test func copiesShareTheValueAndTheLastCopyReleasesIt() {
        weak var released: Payload?
        do {
            let payload = Payload()
            released = payload
            let first = Locked<(payload: Payload?, count: Int)>((payload, 0))
            let second = first
            second.withLock { $0.count += 1 }
            #expect(first.withLock { $0.count } == 1)
            #expect(first.withLock { $0.payload } === payload)
        }
        #expect(released == nil)
    }

    /// Many threads at once, including on an empty value (the handoff `awaitDelivery` uses); under
    /// ThreadSanitizer (`make test-tsan`) this reported the empty value's accesses as races when the value
    /// was the block's header.
    @Test func concurrentUseCountsEveryIncrement() async {
        let counter = Locked(0)
        let handoff = Locked(())
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<1_000 {
                        counter.withLock { $0 += 1 }
                        handoff.withLock { _ in }
                    }
                }
            }
        }
        #expect(counter.withLock { $0 } == 8_000)
    }

    @Test func throwsThroughTheLock() {
        struct Failure: Error {}
        let value = Locked(1)
        #expect(throws: Failure.self) { try value.withLock { _ throws(Failure) in throw Failure() } }
        // The lock was released by the throw.
        #expect(value.withLock { $0 } == 1)
    }
}
