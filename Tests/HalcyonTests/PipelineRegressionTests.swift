import Dispatch
import Foundation
import Testing
@testable import Halcyon

/// The retrieve-pipeline behaviours the redesign fixed, written against APIs main already had
/// (plus the storage's open hook), so each was red before the redesign and is green after.
@Suite("Retrieve pipeline regressions")
struct PipelineRegressionTests {
    @Test("a caller joining a load with other decoding options gets its own decode, on the same download")
    func joinerWithOtherDecodingOptionsDecodesAlone() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/delayed?delay=400")
        let plain = Task { try await fixture.manager.retrieveImage(with: url) }
        #expect(await fixture.server.wait { fixture.server.inFlight == 1 })
        // 64 × 48 = 3072 pixels: over this caller's limit, so its own decode must refuse it.
        let limited = Task { try await fixture.manager.retrieveImage(with: url, options: [.maxPixelCount(1000)]) }
        let scaled = Task { try await fixture.manager.retrieveImage(with: url, options: [.scaleFactor(2)]) }
        let plainResult = try await plain.value
        #expect(plainResult.image.width == 64 && plainResult.image.scale == 1)
        do {
            let joined = try await limited.value
            Issue.record("the limited caller got \(joined.image.width)×\(joined.image.height), decoded under another caller's limits")
        } catch let error as HalcyonError {
            guard case .processorError(reason: .tooManyPixels) = error else {
                Issue.record("expected tooManyPixels, got \(error)")
                return
            }
        }
        let scaledResult = try await scaled.value
        #expect(scaledResult.image.scale == 2, "the scale-2 caller got an image of scale \(scaledResult.image.scale)")
        #expect(fixture.server.hits("/delayed?delay=400") == 1, "the download itself is still shared")
    }

    @Test("1× and 2× decodes of one source are separate cache entries")
    func scaleIsPartOfTheCacheIdentity() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/scales")
        let one = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        #expect(one.image.scale == 1)
        let two = try await fixture.manager.retrieveImage(with: url, options: [.scaleFactor(2), .waitForCache])
        #expect(two.image.scale == 2, "a 2× request got a \(two.image.scale)× image from \(two.cacheType)")
        let oneAgain = try await fixture.manager.retrieveImage(with: url)
        #expect(oneAgain.cacheType == .memory && oneAgain.image.scale == 1)
        fixture.cache.clearMemoryCache()
        let twoFromDisk = try await fixture.manager.retrieveImage(with: url, options: [.scaleFactor(2)])
        #expect(twoFromDisk.cacheType == .disk && twoFromDisk.image.scale == 2)
    }

    @Test("a miss opens the disk entry exactly once before the network")
    func missOpensDiskOnce() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = "/etag?v=one-open"
        let opens = Locked<[(file: String, hitsBefore: Int)]>([])
        fixture.cache.diskStorage.entryWillOpen.withLock {
            $0 = { file in
                let hits = fixture.server.hits(target)
                opens.withLock { $0.append((file, hits)) }
            }
        }
        let result = try await fixture.manager.retrieveImage(with: fixture.url(target), options: [.waitForCache])
        fixture.cache.diskStorage.entryWillOpen.withLock { $0 = nil }
        #expect(result.cacheType == .none)
        let recorded = opens.withLock { $0 }
        #expect(recorded.count == 1, "disk opens: \(recorded.map(\.file))")
        #expect(recorded.allSatisfy { $0.hitsBefore == 0 }, "every open happened before the download")
        #expect(fixture.server.hits(target) == 1)
    }

    @Test("a waiting download's priority drops when its high-priority caller cancels")
    func priorityDropsWhenHighCallerLeaves() async throws {
        let server = try await TestHTTPServer.start(image: try ManagerFixture.sampleImage())
        let downloader = ImageDownloader(name: "priority-drop")
        downloader.maxConcurrentDownloads = 1
        defer { Task { await downloader.shutdown(); await server.shutdown() } }
        let blocker = Task { try await downloader.downloadData(with: server.url("/delayed?delay=700")) }
        #expect(await server.wait { server.inFlight == 1 })
        let low = Task { try await downloader.downloadData(with: server.url("/image/x"), options: DownloadOptions(downloadPriority: 0.1)) }
        #expect(await server.wait { downloader.activeRequestCount == 2 })
        let high = Task { try await downloader.downloadData(with: server.url("/image/x"), options: DownloadOptions(downloadPriority: 0.9)) }
        let middle = Task { try await downloader.downloadData(with: server.url("/image/y"), options: DownloadOptions(downloadPriority: 0.5)) }
        #expect(await server.wait { downloader.activeRequestCount == 3 })
        try await Task.sleep(for: .milliseconds(50))
        high.cancel()
        _ = try? await high.value
        #expect(server.inFlight == 1 && server.hits("/delayed?delay=700") == 1, "the blocker still holds the only slot")
        _ = try await blocker.value
        _ = try await middle.value
        _ = try await low.value
        let order = server.requestOrder
        let x = order.firstIndex(of: "/image/x") ?? -1
        let y = order.firstIndex(of: "/image/y") ?? -1
        #expect(y >= 0 && x > y, "after the 0.9 caller left, the 0.5 download must start before the 0.1 one: \(order)")
    }

    @Test("cancelling a retrieve of a 12 MP image mid-decode stops CPU within 100 ms")
    func cancelMidDecodeStopsCPU() async throws {
        let data = try RenderCancellationTests.noise(width: 4000, height: 3000).encoded(as: .png())
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let started = Locked<Double?>(nil)
        let processor = DecodeStartSignal(started: started)
        let provider = RawImageDataProvider(data: data, cacheKey: "mid-decode-\(UUID().uuidString)")
        let task = Task {
            try await fixture.manager.retrieveImage(with: .provider(provider), options: [.processor(processor), .cacheMemoryOnly])
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while started.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        let decodeStart = try #require(started.withLock { $0 })
        try await RenderCancellationTests.waitForCPU(0.1, since: decodeStart)
        let cancelledAt = ContinuousClock.now
        task.cancel()
        await expectCancelled(task)
        let returnedAfter = ContinuousClock.now - cancelledAt
        let used = try await RenderCancellationTests.cpuAfterCancel()
        #expect(returnedAfter < .milliseconds(100), "the retrieve returned \(returnedAfter) after the cancel")
        #expect(used < 0.05, "the process used \(used) s of CPU between 100 and 500 ms after the cancel")
    }
}

/// The default decode, after recording the process CPU time at which it started.
private final class DecodeStartSignal: ImageProcessor {
    let identifier = "test.decode-start-signal"
    private let started: Locked<Double?>

    init(started: Locked<Double?>) {
        self.started = started
    }

    func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        started.withLock { $0 = RenderCancellationTests.processCPUTime() }
        return try DefaultImageProcessor.default.process(item: item, options: options)
    }
}
