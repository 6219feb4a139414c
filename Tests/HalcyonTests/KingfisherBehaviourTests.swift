import Dispatch
import Foundation
import Testing
@testable import Halcyon

/// Scenarios ported from Kingfisher's `Tests/KingfisherTests` and SDWebImage's `Tests/Tests`, each named after
/// its original, run against a real disk cache and a loopback server.
@Suite("Kingfisher and SDWebImage behaviours")
struct KingfisherBehaviourTests {
    /// Marks the main queue, so a callback can tell it ran there. On Linux the main queue is not always drained
    /// by the main thread (after `dispatchMain()` a worker thread drains it), so `Thread.isMainThread` is no test.
    static let mainQueueKey: DispatchSpecificKey<String> = {
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        return key
    }()

    /// Whether the caller runs on the main queue.
    static var isOnMainQueue: Bool { DispatchQueue.getSpecific(key: mainQueueKey) == "main" }

    /// A queue that says it is itself, so a callback can tell where it ran.
    static func labelledQueue(_ label: String) -> (DispatchQueue, DispatchSpecificKey<String>) {
        let queue = DispatchQueue(label: label)
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: label)
        return (queue, key)
    }

    // MARK: - KingfisherManagerTests

    /// `testCanUseCustomizeDefaultCacheSerializerStoreEncoded`: the default serializer re-encodes in the format of
    /// the original bytes it is given (JPEG here, for an image decoded from PNG), at its compression quality.
    @Test func storeEncodedInOriginalDataFormat() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let disk = try DiskStorage.Backend(config: DiskStorage.Config(name: "kb-encoded", directory: directory.url))
        let cache = ImageCache(memoryStorage: MemoryStorage.Backend<Image>(config: MemoryStorage.Config()), diskStorage: disk)
        let image = try ImageDecoder.decode(try TestImages.encodedGradient(.png(), width: 40, height: 30))
        let original = try image.encoded(as: .jpeg(quality: 100))
        var serializer = DefaultCacheSerializer()
        serializer.compressionQuality = 0.8
        let key = "https://example.com/kb-encoded"
        try await cache.store(image, original: original, forKey: key,
                              processorIdentifier: DefaultImageProcessor.default.identifier, cacheSerializer: serializer)

        let computed = ImageCache.computedKey(key, processorIdentifier: DefaultImageProcessor.default.identifier)
        let stored = try #require(try disk.value(forKey: computed))
        #expect(stored != original)
        #expect(ImageFormat(sniffing: stored) == .jpeg)
        #expect(stored == (try image.encoded(as: .jpeg(quality: 80))))
    }

    /// `testCouldProcessAgainWhenSerializerCachesOriginalData`: a serializer that caches the original data keeps it
    /// under `key@processor`, so a disk hit there runs the (second) processor again.
    @Test func processAgainWhenSerializerCachesOriginalData() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let source = Source.provider(RawImageDataProvider(data: try ManagerFixture.sampleImage(), cacheKey: "kb-process-again"))
        var serializer = DefaultCacheSerializer()
        serializer.preferCacheOriginalData = true

        let first = CountingProcessor(identifier: "id")
        let firstResult = try await fixture.manager.retrieveImage(
            with: source, options: [.processor(first), .cacheSerializer(serializer), .waitForCache])
        #expect(firstResult.cacheType == .none)
        #expect(first.runCount == 1)

        let second = CountingProcessor(identifier: "id")
        fixture.cache.clearMemoryCache()
        let secondResult = try await fixture.manager.retrieveImage(
            with: source, options: [.processor(second), .cacheSerializer(serializer), .waitForCache])
        #expect(secondResult.cacheType == .disk)
        #expect(secondResult.image.width == 16 && secondResult.image.height == 12)
        #expect(second.runCount == 1, "the disk hit of the original data is processed again")
    }
}
