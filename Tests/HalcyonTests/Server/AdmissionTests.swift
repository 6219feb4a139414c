import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

/// The one admission a request goes through: its ticket's memory and its slot are held while the work runs and
/// given back when `run` returns, however the work ends.
@Suite("Server: admission (slot, memory ticket, stops)")
struct AdmissionTests {
    /// An admission of one slot over a budget of `budget` MiB, with the connections' hang-up signals of `limits`.
    static func admission(budget: Int, limits: ConnectionLimits, maxResultSide: Int = .max) -> Admission {
        Admission(slots: SlotQueue(limit: 1, queue: 0), memory: MemoryBudget(capacity: budget << 20), queueTimeout: .seconds(5),
                  requestTimeout: .seconds(5), maxResultSide: maxResultSide, hangUps: limits.hangUps)
    }

    /// Polls `condition` (there is no event to wait for) until it holds or 5 s pass.
    static func eventually(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        return condition()
    }

    /// The status a finished `run` answered with (200 for success).
    static func status(_ result: Result<Void, any Error>) -> Int? {
        switch result {
        case .success: return 200
        case .failure(let error): return (error as? ServerError)?.statusCode
        }
    }

    @Test("The ticket's reservation is held while the work runs and given back, with the slot, when the work is stopped at shutdown")
    func memoryGivenBackWhenStopped() async throws {
        let limits = ConnectionLimits(maxConnections: 4, headerTimeout: .seconds(10))
        let channel = try await ConnectionTableTests.activeChannel()
        let admission = Self.admission(budget: 64, limits: limits)
        let png = try TestImages.encodedGradient(.png(), width: 320, height: 200)
        let run = Task {
            try await admission.run(on: channel, output: .png) { ticket in
                try await ticket.reserve(ImageDecoder.open(png), source: png)
                try await Task.sleep(for: .seconds(30))
            }
        }
        #expect(try await Self.eventually { admission.memory.usedBytes > 0 }, "the work reserved its estimate")
        admission.cancelAll()
        #expect(Self.status(await run.result) == 503)
        #expect(admission.memory.usedBytes == 0 && admission.runningCount == 0)
        // The slot came back too: the only one is free for the next request.
        #expect(Self.status(await Task { try await admission.run(on: channel) { _ in } }.result) == 200)
        _ = try? await channel.finish()
    }

    @Test("Work waiting for memory is stopped by its client's hang-up (499) and leaves the budget's queue, taking nothing")
    func memoryWaitStoppedByHangUp() async throws {
        let limits = ConnectionLimits(maxConnections: 4, headerTimeout: .seconds(10))
        let channel = try await ConnectionTableTests.activeChannel()
        let admission = Self.admission(budget: 64, limits: limits)
        let held = try await admission.memory.reserve(63 << 20, waitingAtMost: .zero)
        let png = try TestImages.encodedGradient(.png(), width: 320, height: 200)
        let run = Task {
            try await admission.run(on: channel, output: .png) { ticket in
                try await ticket.reserve(ImageDecoder.open(png), source: png)
            }
        }
        #expect(try await Self.eventually { admission.memory.waitingCount == 1 }, "the work waits for memory")
        limits.hangUps.hungUp(channel)
        #expect(Self.status(await run.result) == 499)
        #expect(admission.memory.waitingCount == 0 && admission.memory.usedBytes == 63 << 20)
        held.release()
        #expect(admission.memory.usedBytes == 0)
        _ = try? await channel.finish()
    }

    @Test("A result over the per-side limit is refused from the header (422) before anything is reserved")
    func resultTooLargeFromHeader() async throws {
        let limits = ConnectionLimits(maxConnections: 4, headerTimeout: .seconds(10))
        let channel = try await ConnectionTableTests.activeChannel()
        let admission = Self.admission(budget: 64, limits: limits, maxResultSide: 256)
        let png = try TestImages.encodedGradient(.png(), width: 320, height: 200)
        let reserved = Locked(-1)
        let result = await Task {
            try await admission.run(on: channel) { ticket in
                do throws(HalcyonError) {
                    try await ticket.reserve(ImageDecoder.open(png), source: png)
                } catch {
                    reserved.withLock { $0 = admission.memory.usedBytes }
                    throw ServerError.from(error)
                }
            }
        }.result
        #expect(Self.status(result) == 422)
        #expect(reserved.withLock { $0 } == 0, "nothing was reserved when the size was refused")
        _ = try? await channel.finish()
    }
}
