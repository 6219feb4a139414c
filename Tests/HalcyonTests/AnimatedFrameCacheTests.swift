import Foundation
import Testing
@testable import Halcyon

/// A processor that records whether it ran (Kingfisher's `SimpleProcessor`) and leaves the image as decoded.
private final class RecordingProcessor: ImageProcessor {
    let identifier = "test.recording-processor"
    private let ran = Locked(false)

    var processed: Bool {
        get { ran.withLock { $0 } }
        set { ran.withLock { $0 = newValue } }
    }

    func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        ran.withLock { $0 = true }
        return try DefaultImageProcessor.default.process(item: item, options: options)
    }
}

/// The frame choice and the caches, ported from Kingfisher's `ImageViewExtensionTests` and `KingfisherManagerTests`
/// on a headless ``ImageSettable`` target and a loopback server serving an 8-frame GIF.
///
/// `.onlyLoadFirstFrame` changes the decoded image, not the stored bytes: it is part of the memory key, while an
/// unprocessed entry's disk bytes (the original GIF) are shared by both frame choices.
@Suite struct AnimatedFrameCacheTests {
    private static func gifFixture() async throws -> ManagerFixture {
        try await ManagerFixture.make(image: try TestImages.animation(frames: 8).encoded(as: .gif))
    }

    /// `testSetGIFImageOnlyFirstFrameThenFullFrames`: the first frame with `.waitForCache`, the memory cache
    /// cleared, then every frame: from the disk, with no second download and no progress.
    @Test func setGIFImageOnlyFirstFrameThenFullFrames() async throws {
        let fixture = try await Self.gifFixture()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/first-frame-then-full")
        let target = RecordingTarget()
        let firstProgress = Locked(0)
        let first = try await awaitResult { done in
            target.hc.setImage(with: url, options: [.onlyLoadFirstFrame, .waitForCache], manager: fixture.manager,
                               progressBlock: { _, _ in firstProgress.withLock { $0 += 1 } }, completionHandler: done)
        }.get()
        #expect(firstProgress.withLock { $0 } > 0)
        #expect(first.image.frameCount == 1 && !first.image.isAnimated)
        #expect(first.cacheType == .none)
        let key = url.absoluteString
        // Halcyon keeps a first-frame image under its own memory key (Kingfisher's memory key is the plain one).
        let memoryKey = ImageCache.computedKey(key, processorIdentifier: ImageCache.firstFrameIdentifierSuffix)
        #expect(fixture.cache.memoryStorage.value(forKey: memoryKey) != nil)
        #expect(try fixture.cache.diskStorage.value(forKey: key) != nil, "the original bytes are on disk under the plain key")
        #expect(target.image === first.image)

        fixture.cache.clearMemoryCache()
        let fullProgress = Locked(0)
        let full = try await awaitResult { done in
            target.hc.setImage(with: url, manager: fixture.manager,
                               progressBlock: { _, _ in fullProgress.withLock { $0 += 1 } }, completionHandler: done)
        }.get()
        #expect(full.image.frameCount == 8)
        #expect(full.cacheType == .disk)
        #expect(fullProgress.withLock { $0 } == 0, "no download, so no progress")
        #expect(fixture.server.hits(url.path) == 1)
        #expect(target.image === full.image)
    }

    /// `testLoadGIFImageWithDifferentOptions` (Kingfisher issue #1923): every frame, then a first-frame request
    /// on the same target gets one frame, not the animation kept in memory.
    @Test func loadGIFImageWithDifferentOptions() async throws {
        let fixture = try await Self.gifFixture()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/different-options")
        let target = RecordingTarget()
        let full = try await awaitResult { done in
            target.hc.setImage(with: url, manager: fixture.manager, completionHandler: done)
        }.get()
        #expect(full.image.frameCount == 8)
        let first = try await awaitResult { done in
            target.hc.setImage(with: url, options: [.onlyLoadFirstFrame], manager: fixture.manager, completionHandler: done)
        }.get()
        #expect(first.image.frameCount == 1 && !first.image.isAnimated)
        #expect(target.image === first.image)
    }

    /// `testAnimatedImageShouldRecreateFromCache` (issue #1923): with a processor, a first-frame result is not
    /// served to a request for every frame; the processor runs again and the result is animated.
    @Test func animatedImageShouldRecreateFromCache() async throws {
        let fixture = try await Self.gifFixture()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/recreate")
        let processor = RecordingProcessor()
        let first = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor), .onlyLoadFirstFrame])
        #expect(processor.processed)
        #expect(first.image.frameCount == 1)
        processor.processed = false
        let full = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor)])
        #expect(processor.processed)
        #expect(full.image.frameCount == 8)
    }

    /// `testAnimatedImageShouldNotRecreateWithSameOptions`: the same processor and frame choice again is a cache hit.
    @Test func animatedImageShouldNotRecreateWithSameOptions() async throws {
        let fixture = try await Self.gifFixture()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/same-options")
        let processor = RecordingProcessor()
        let first = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor), .onlyLoadFirstFrame])
        #expect(processor.processed && first.image.frameCount == 1)
        processor.processed = false
        let again = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor), .onlyLoadFirstFrame])
        #expect(!processor.processed)
        #expect(again.image.frameCount == 1)
    }

    /// The shared disk entry serves both frame choices after a restart (memory cleared), and a processed
    /// first-frame entry stays apart from the processed animation on disk.
    @Test func diskEntrySharedAcrossFrameChoices() async throws {
        let fixture = try await Self.gifFixture()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/shared-disk")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        fixture.cache.clearMemoryCache()
        let first = try await fixture.manager.retrieveImage(with: url, options: [.onlyLoadFirstFrame])
        #expect(first.cacheType == .disk && first.image.frameCount == 1)
        let full = try await fixture.manager.retrieveImage(with: url)
        #expect(full.cacheType == .disk && full.image.frameCount == 8)
        #expect(fixture.server.hits(url.path) == 1)

        let processor = RecordingProcessor()
        _ = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor), .onlyLoadFirstFrame, .waitForCache])
        fixture.cache.clearMemoryCache()
        processor.processed = false
        let processedFull = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor)])
        #expect(processedFull.image.frameCount == 8, "a processed first frame never answers a request for every frame")
    }

    /// `ImageCache.retrieveImageInDiskCache` with `.onlyLoadFirstFrame` reads the shared unprocessed entry, as the
    /// manager's lookup does, and decodes its first frame.
    @Test func diskOnlyReadOfFirstFrame() async throws {
        let fixture = try await Self.gifFixture()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/disk-only-first-frame")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        let options = HalcyonParsedOptionsInfo([.onlyLoadFirstFrame])
        let first = try await fixture.cache.retrieveImageInDiskCache(forKey: url.absoluteString, options: options)
        #expect(first?.frameCount == 1, "no first frame from the shared disk entry")
    }
}
