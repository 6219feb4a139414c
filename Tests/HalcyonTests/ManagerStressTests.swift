import Foundation
import Testing
@testable import Halcyon

/// Many callers, few URLs, random cancellations: the manager's coalescing under load.
@Suite("HalcyonManager under concurrent load")
struct ManagerStressTests {
    /// What one caller saw.
    private struct CallerRecord {
        var callbacks = 0
        var succeeded = 0
        var cancelled = 0
        var otherErrors: [String] = []
        var wrongSize = 0
    }

    @Test("1000 concurrent retrieves over 50 URLs with random cancellations: one callback each, one request per URL, nothing left running")
    func thousandRetrievesOverFiftyURLs() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        fixture.downloader.downloadTimeout = 20

        let urlCount = 50
        let callerCount = 1000
        let seed = UInt64(Date().timeIntervalSince1970 * 1000)
        var random = SeededGenerator(state: seed)
        let targets = (0..<urlCount).map { "/delayed/stress-\($0)?delay=\(100 + $0 * 4)" }
        // Processing takes 100 ms, so callers keep arriving after a download has ended but
        // before its image is in the memory cache: they must join that load, not download again.
        let processor = CountingProcessor(identifier: "stress.slow", delay: 0.1)
        let options: HalcyonOptionsInfo = [.processor(processor)]

        // Callers start over 600 ms. The first caller of each URL starts at once and is never
        // cancelled, so every URL's load must survive the cancellation of any caller that joined it.
        let startAfter: [Int] = (0..<callerCount).map { $0 < urlCount ? 0 : Int.random(in: 0...600, using: &random) }
        let cancelAfter: [Int?] = (0..<callerCount).map { index in
            guard index >= urlCount, Double.random(in: 0..<1, using: &random) < 0.35 else { return nil }
            return startAfter[index] + Int.random(in: 0...400, using: &random)
        }
        let records = Locked([CallerRecord](repeating: CallerRecord(), count: callerCount))
        let record = { @Sendable (index: Int, result: Result<RetrieveImageResult, HalcyonError>) in
            records.withLock { records in
                records[index].callbacks += 1
                switch result {
                case .success(let value):
                    records[index].succeeded += 1
                    if value.image.width != 16 || value.image.height != 12 { records[index].wrongSize += 1 }
                case .failure(let error) where error.isTaskCancelled:
                    records[index].cancelled += 1
                case .failure(let error):
                    records[index].otherErrors.append("\(error)")
                }
            }
        }

        // Half the callers use completion handlers (cancelled through their task), half
        // async/await (cancelled by cancelling the calling task).
        let started = ContinuousClock.now
        let manager = fixture.manager
        var callers: [Task<Void, Never>] = []
        for index in 0..<callerCount {
            let source = Source.network(fixture.url(targets[index % urlCount]))
            let cancelAt = cancelAfter[index].map { started + .milliseconds($0) }
            callers.append(Task {
                try? await Task.sleep(until: started + .milliseconds(startAfter[index]))
                if index.isMultiple(of: 2) {
                    let task = manager.retrieveImage(with: source, options: options) { record(index, $0) }
                    if let cancelAt {
                        try? await Task.sleep(until: cancelAt)
                        task?.cancel()
                    }
                } else {
                    let retrieval = Task {
                        do throws(HalcyonError) {
                            record(index, .success(try await manager.retrieveImage(with: source, options: options)))
                        } catch {
                            record(index, .failure(error))
                        }
                    }
                    if let cancelAt {
                        try? await Task.sleep(until: cancelAt)
                        retrieval.cancel()
                    }
                    await retrieval.value
                }
            })
        }

        let everyoneHeard = await fixture.server.wait(timeout: 30) {
            records.withLock { $0.allSatisfy { $0.callbacks > 0 } }
        }
        #expect(everyoneHeard, "seed \(seed): some callers never heard back")
        if everyoneHeard {
            for task in callers { await task.value }
        }
        // A second callback would come right after the first; give it time to show.
        try await Task.sleep(for: .milliseconds(300))

        let final = records.withLock { $0 }
        let cancelledCount = cancelAfter.compactMap { $0 }.count
        for (index, caller) in final.enumerated() {
            #expect(caller.callbacks == 1, "seed \(seed): caller \(index) heard back \(caller.callbacks) times")
            #expect(caller.otherErrors.isEmpty, "seed \(seed): caller \(index) failed: \(caller.otherErrors)")
            #expect(caller.wrongSize == 0, "seed \(seed): caller \(index) got an image of the wrong size")
            if cancelAfter[index] == nil {
                #expect(caller.succeeded == 1, "seed \(seed): caller \(index) was not cancelled but got no image")
            }
        }
        let cancelledHeard = final.reduce(0) { $0 + $1.cancelled }
        #expect(cancelledHeard <= cancelledCount, "seed \(seed): more cancellations than cancel calls")
        #expect(cancelledHeard > 0, "seed \(seed): no cancellation arrived before its image; the test exercised nothing")

        // One request per URL: coalescing held through every cancellation.
        for target in targets {
            #expect(fixture.server.hits(target) == 1, "seed \(seed): \(target) was requested \(fixture.server.hits(target)) times")
        }
        #expect(fixture.server.totalHits == urlCount, "seed \(seed)")
        #expect(processor.runCount == urlCount, "seed \(seed): \(processor.runCount) processor runs for \(urlCount) images")

        // Nothing left running: no download, no shared processing job, no open request.
        let idle = await fixture.server.wait(timeout: 5) {
            fixture.downloader.activeRequestCount == 0 && fixture.manager.processingInFlightCount == 0
                && fixture.manager.loadsInFlightCount == 0 && fixture.server.inFlight == 0
        }
        #expect(idle, """
            seed \(seed): still running: \(fixture.downloader.activeRequestCount) downloads, \
            \(fixture.manager.processingInFlightCount) processing jobs, \(fixture.manager.loadsInFlightCount) shared loads, \
            \(fixture.server.inFlight) open requests
            """)
    }
}
