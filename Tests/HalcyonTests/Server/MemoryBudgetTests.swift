import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

/// The memory budget suspends its waiters: no thread is held while a job waits for bytes.
@Suite("Memory budget")
struct MemoryBudgetTests {
    static let mebibyte = 1 << 20

    /// Waits (suspending, polling a condition that has no event) until `condition` holds or 5 s pass.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    @Test("Free bytes are taken at once; a job over the whole budget is refused without waiting")
    func immediateAndTooLarge() async throws {
        let budget = MemoryBudget(capacity: 8 * Self.mebibyte)
        let held = try await budget.reserve(6 * Self.mebibyte, waitingAtMost: .zero)
        #expect(budget.usedBytes == 6 * Self.mebibyte)
        await #expect(throws: HalcyonError.self) { _ = try await budget.reserve(9 * Self.mebibyte, waitingAtMost: .seconds(10)) }
        held.release()
        held.release()
        #expect(budget.usedBytes == 0)
    }

    @Test("Waiters are admitted in the order they came: a later, smaller one does not pass a waiting larger one")
    func laterWaiterDoesNotPass() async throws {
        let budget = MemoryBudget(capacity: 4 * Self.mebibyte)
        let held = try await budget.reserve(3 * Self.mebibyte, waitingAtMost: .zero)
        let first = Task { try await budget.reserve(2 * Self.mebibyte, waitingAtMost: .seconds(10)) }
        #expect(await Self.eventually { budget.waitingCount == 1 })
        // 1 MiB is free, but the first waiter came before.
        let second = Task { try await budget.reserve(1 * Self.mebibyte, waitingAtMost: .seconds(10)) }
        #expect(await Self.eventually { budget.waitingCount == 2 })
        #expect(budget.usedBytes == 3 * Self.mebibyte)
        held.release()
        let one = try await first.value
        let two = try await second.value
        #expect(budget.usedBytes == 3 * Self.mebibyte)
        one.release()
        two.release()
        #expect(budget.usedBytes == 0)
    }

    @Test("Bytes coming back admit the first waiter; the next one waits until it fits too")
    func headOfQueueFirst() async throws {
        let budget = MemoryBudget(capacity: 4 * Self.mebibyte)
        let held = try await budget.reserve(4 * Self.mebibyte, waitingAtMost: .zero)
        let first = Task { try await budget.reserve(3 * Self.mebibyte, waitingAtMost: .seconds(10)) }
        #expect(await Self.eventually { budget.waitingCount == 1 })
        let second = Task { try await budget.reserve(2 * Self.mebibyte, waitingAtMost: .seconds(10)) }
        #expect(await Self.eventually { budget.waitingCount == 2 })
        held.release()
        let one = try await first.value
        #expect(budget.usedBytes == 3 * Self.mebibyte)
        #expect(budget.waitingCount == 1, "the second waiter does not fit beside the first")
        one.release()
        let two = try await second.value
        #expect(budget.usedBytes == 2 * Self.mebibyte)
        two.release()
        #expect(budget.usedBytes == 0)
    }

    @Test("A waiter whose deadline passes is refused with waited: true; its place frees the ones behind it")
    func deadline() async throws {
        let budget = MemoryBudget(capacity: 4 * Self.mebibyte)
        let held = try await budget.reserve(2 * Self.mebibyte, waitingAtMost: .zero)
        let started = ContinuousClock.now
        do {
            _ = try await budget.reserve(3 * Self.mebibyte, waitingAtMost: .milliseconds(200))
            Issue.record("the reservation must time out")
        } catch {
            guard case .processorError(.memoryBudgetExceeded(_, _, let waited)) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(waited)
        }
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(budget.waitingCount == 0)
        // A zero deadline still takes bytes that are free.
        let free = try await budget.reserve(2 * Self.mebibyte, waitingAtMost: .zero)
        free.release()
        held.release()
        #expect(budget.usedBytes == 0)
    }

    @Test("Cancelling a waiting task ends its wait at once with taskCancelled, and takes nothing")
    func cancellation() async throws {
        let budget = MemoryBudget(capacity: 4 * Self.mebibyte)
        let held = try await budget.reserve(4 * Self.mebibyte, waitingAtMost: .zero)
        let waiting = Task { try await budget.reserve(1 * Self.mebibyte, waitingAtMost: .seconds(30)) }
        #expect(await Self.eventually { budget.waitingCount == 1 })
        let started = ContinuousClock.now
        waiting.cancel()
        let result = await waiting.result
        #expect(ContinuousClock.now - started < .seconds(1))
        guard case .failure(let error) = result, case .requestError(.taskCancelled) = error as? HalcyonError else {
            Issue.record("expected taskCancelled, got \(result)")
            return
        }
        #expect(budget.waitingCount == 0)
        held.release()
        #expect(budget.usedBytes == 0)

        // A task cancelled before it asks is refused too, even with bytes free.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await budget.reserve(1 * Self.mebibyte, waitingAtMost: .seconds(30))
        }
        await #expect(throws: HalcyonError.self) { _ = try await early.value }
        #expect(budget.usedBytes == 0)
    }

    @Test("Many waiters on a small budget all finish and give everything back")
    func manyWaiters() async throws {
        let budget = MemoryBudget(capacity: 2 * Self.mebibyte)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    let reservation = try await budget.reserve((1 + index % 2) * Self.mebibyte, waitingAtMost: .seconds(20))
                    #expect(budget.usedBytes <= 2 * Self.mebibyte)
                    try await Task.sleep(for: .milliseconds(1))
                    reservation.release()
                }
            }
            try await group.waitForAll()
        }
        #expect(budget.usedBytes == 0)
        #expect(budget.waitingCount == 0)
    }
}
