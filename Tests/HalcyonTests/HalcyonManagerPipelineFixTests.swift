import Dispatch
import Foundation
import Testing
@testable import Halcyon

/// An identity processor that counts its runs, so a test sees whether a cached result skipped it.
private final class CountingIdentityProcessor: ImageProcessor {
    let identifier: String
    private let runs = Locked(0)

    init(identifier: String) {
        self.identifier = identifier
    }

    var runCount: Int { runs.withLock { $0 } }

    func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        runs.withLock { $0 += 1 }
        return try DefaultImageProcessor.default.process(item: item, options: options)
    }
}

@Suite("HalcyonManager blocklist, serializer, frame choice and cancellation")
struct HalcyonManagerPipelineFixTests {
    // MARK: Blocklist

    @Test("a successful retryFailed load takes its URL off the blocklist")
    func retryFailedUnblocks() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/unblocked")
        fixture.manager.failedURLs.insert(url)
        let retried = try await fixture.manager.retrieveImage(with: url, options: [.retryFailed])
        #expect(retried.cacheType == .none)
        #expect(!fixture.manager.failedURLs.contains(url))
        let plain = try await fixture.manager.retrieveImage(with: url, options: [.forceRefresh])
        #expect(plain.cacheType == .none && plain.image.width == 64)
        #expect(fixture.server.hits("/image/unblocked") == 2)
    }

    // MARK: Serializer

    @Test("preferCacheOriginalData: a disk hit of a processed key is the processed image")
    func preferOriginalDiskHitIsProcessed() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/prefer-original")
        let processor = ResizingImageProcessor(referenceSize: CGSize(width: 8, height: 6))
        let options: HalcyonOptionsInfo = [
            .processor(processor), .cacheSerializer(DefaultCacheSerializer(preferCacheOriginalData: true)), .waitForCache,
        ]
        let first = try await fixture.manager.retrieveImage(with: url, options: options)
        #expect(first.cacheType == .none && first.image.width == 8 && first.image.height == 6)
        fixture.cache.clearMemoryCache()
        let second = try await fixture.manager.retrieveImage(with: url, options: options)
        #expect(second.cacheType == .disk)
        #expect(second.image.width == 8 && second.image.height == 6)
        #expect(fixture.server.hits("/image/prefer-original") == 1)
    }

    // MARK: Frame choice

    @Test("after a first-frame load, a full request gets every frame, processed (memory and disk)")
    func firstFrameThenAllFrames() async throws {
        let fixture = try await ManagerFixture.make(image: try TestImages.animation(frames: 4).encoded(as: .gif))
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/first-then-all")
        let processor = CountingIdentityProcessor(identifier: "test.identity.first-then-all")
        let first = try await fixture.manager.retrieveImage(
            with: url, options: [.processor(processor), .onlyLoadFirstFrame, .waitForCache])
        #expect(first.image.frameCount == 1)
        #expect(processor.runCount == 1)
        let all = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor), .waitForCache])
        #expect(all.image.frameCount == 4)
        #expect(processor.runCount == 2)
        fixture.cache.clearMemoryCache()
        let allFromDisk = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor)])
        #expect(allFromDisk.cacheType == .disk && allFromDisk.image.frameCount == 4)
        let firstFromDisk = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor), .onlyLoadFirstFrame])
        #expect(firstFromDisk.cacheType == .disk && firstFromDisk.image.frameCount == 1)
    }

    @Test("after a full load, a first-frame request gets one frame (memory and disk)")
    func allFramesThenFirstFrame() async throws {
        let fixture = try await ManagerFixture.make(image: try TestImages.animation(frames: 4).encoded(as: .gif))
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/all-then-first")
        let all = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        #expect(all.image.frameCount == 4)
        let first = try await fixture.manager.retrieveImage(with: url, options: [.onlyLoadFirstFrame, .waitForCache])
        #expect(first.image.frameCount == 1)
        fixture.cache.clearMemoryCache()
        let firstFromDisk = try await fixture.manager.retrieveImage(with: url, options: [.onlyLoadFirstFrame])
        #expect(firstFromDisk.cacheType == .disk && firstFromDisk.image.frameCount == 1)
        let allFromDisk = try await fixture.manager.retrieveImage(with: url)
        #expect(allFromDisk.cacheType == .disk && allFromDisk.image.frameCount == 4)
    }

    // MARK: Cancellation

    @Test("cancelled during the disk read: taskCancelled, and nothing put into memory")
    func cancelDuringDiskRead() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/cancel-disk-read")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        fixture.cache.clearMemoryCache()

        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let gate = DispatchSemaphore(value: 0)
        fixture.cache.diskReadWillStart.withLock {
            $0 = { _ in
                startedContinuation.yield()
                gate.wait()
            }
        }
        let task = Task { try await fixture.manager.retrieveImage(with: url) }
        for await _ in started { break }
        fixture.cache.diskReadWillStart.withLock { $0 = nil }
        task.cancel()
        gate.signal()
        await expectCancelled(task)
        #expect(fixture.cache.retrieveImageInMemoryCache(forKey: url.cacheKey) == nil)
        #expect(fixture.server.hits("/image/cancel-disk-read") == 1)
    }

    // MARK: Kept originals

    @Test("a kept original with a forced extension serves another processor from disk")
    func keptOriginalWithForcedExtension() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/kept-extension")
        let common: HalcyonOptionsInfo = [.cacheOriginalImage, .forcedCacheFileExtension("jpg"), .waitForCache]
        _ = try await fixture.manager.retrieveImage(
            with: url, options: common + [.processor(ResizingImageProcessor(referenceSize: CGSize(width: 16, height: 12)))])
        let second = try await fixture.manager.retrieveImage(
            with: url, options: common + [.processor(ResizingImageProcessor(referenceSize: CGSize(width: 8, height: 6)))])
        #expect(second.cacheType == .disk && second.image.width == 8)
        #expect(fixture.server.hits("/image/kept-extension") == 1)
    }

    @Test("an expired processed entry with validators is remade from the kept original, not revalidated")
    func keptOriginalBeforeRevalidation() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = "/etag?v=kept"
        let url = fixture.url(target)
        let processor = ResizingImageProcessor(referenceSize: CGSize(width: 8, height: 6))
        _ = try await fixture.manager.retrieveImage(
            with: url, options: [.processor(processor), .cacheOriginalImage, .waitForCache, .diskCacheExpiration(.seconds(3600))])
        _ = try await fixture.manager.retrieveImage(
            with: url, options: [.processor(processor), .forceRefresh, .waitForCache, .diskCacheExpiration(.seconds(5))])
        #expect(fixture.server.hits(target) == 2)
        fixture.clock.advance(by: 10)
        fixture.cache.clearMemoryCache()
        let remade = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor), .cacheOriginalImage, .onlyFromCache])
        #expect(remade.cacheType == .disk && remade.image.width == 8)
        #expect(fixture.server.hits(target) == 2, "the server was not asked again")
    }

    @Test("an original held only in memory serves a processor without a download")
    func originalInMemoryServesProcessor() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/memory-original")
        let original = try await fixture.manager.retrieveImage(with: url, options: [.cacheMemoryOnly])
        #expect(original.cacheType == .none && fixture.cache.imageCachedType(forKey: url.cacheKey) == .memory)
        let processor = ResizingImageProcessor(referenceSize: CGSize(width: 8, height: 6))
        let processed = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor)])
        #expect(processed.image.width == 8)
        #expect(fixture.server.hits("/image/memory-original") == 1, "processed from the original in memory")
    }
}
