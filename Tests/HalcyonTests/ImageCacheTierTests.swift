import Foundation
@testable import Halcyon
@testable import HalcyonRedis
import Testing

/// The data tiers of ``ImageCache`` below its disk, against real storage: a shared folder (``DiskDataStorage``)
/// and a `redis-server` on loopback (`RedisDataStorage`), with two caches standing for two processes.
@Suite("Image cache: data tiers", .serialized)
struct ImageCacheTierTests {
    /// A cache with its own memory and disk in `folder/name`, over `tiers`.
    static func cache(_ folder: URL, _ name: String, tiers: [any DataStorageTier]) throws -> ImageCache {
        var config = DiskStorage.Config(name: name, sizeLimit: 0, directory: folder)
        config.trimsInBackground = false
        let disk = try DiskStorage.Backend(config: config)
        return ImageCache(memoryStorage: MemoryStorage.Backend(config: MemoryStorage.Config()), diskStorage: disk, tiers: tiers)
    }

    static func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-tiers-\(UUID().uuidString)")
    }

    /// Waits for the cache's queued disk writes (its serial I/O queue) to end.
    static func diskWrites(_ cache: ImageCache) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in cache.ioQueue.async { done.resume() } }
    }

    @Test("A stored image reaches the tier; a cache with an empty disk reads it from there and keeps a local copy")
    func storeThenReadElsewhere() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let shared = try DiskDataStorage(name: "shared", folder: folder, megabytes: 0)
        let first = try Self.cache(folder, "first", tiers: [shared])
        let image = try Image(data: TestImages.encodedGradient(.png(), width: 40, height: 30))
        try await first.store(image, forKey: "gradient", toDisk: true)
        await first.waitForTierWrites()
        #expect(try await shared.containsValue(forKey: "gradient"))

        let second = try Self.cache(folder, "second", tiers: [shared])
        #expect(second.imageCachedType(forKey: "gradient") == .none)
        let found = try await second.retrieveImage(forKey: "gradient")
        let read = try #require(found.image)
        #expect(found.cacheType == .disk)
        #expect(read.width == 40 && read.height == 30)
        #expect(try read.rgbaPixels() == image.rgbaPixels())
        #expect(second.imageCachedType(forKey: "gradient") == .memory)
        await Self.diskWrites(second)
        second.clearMemoryCache()
        #expect(second.imageCachedType(forKey: "gradient") == .disk, "the tier's bytes were copied to the local disk")
    }

    @Test("Bytes in a tier that no longer decode are a miss and are removed from the tier")
    func corruptTierEntry() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let shared = try DiskDataStorage(name: "shared", folder: folder, megabytes: 0)
        try await shared.store(StoredData(data: Data("not an image at all".utf8)), forKey: "torn", lifetime: nil)
        let cache = try Self.cache(folder, "reader", tiers: [shared])
        let found = try await cache.retrieveImage(forKey: "torn")
        #expect(found.image == nil)
        await cache.waitForTierWrites()
        #expect(try await !shared.containsValue(forKey: "torn"))
    }

    @Test("A removal reaches the tiers after the store before it, and the next cache finds nothing")
    func removalKeepsOrder() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let shared = try DiskDataStorage(name: "shared", folder: folder, megabytes: 0)
        let cache = try Self.cache(folder, "writer", tiers: [shared])
        let image = try Image(data: TestImages.encodedGradient(.png(), width: 20, height: 20))
        for round in 0..<5 {
            try await cache.store(image, forKey: "k\(round)", toDisk: true)
            try await cache.removeImage(forKey: "k\(round)")
        }
        await cache.waitForTierWrites()
        for round in 0..<5 { #expect(try await !shared.containsValue(forKey: "k\(round)"), "k\(round)") }
        let other = try Self.cache(folder, "other", tiers: [shared])
        #expect(try await other.retrieveImage(forKey: "k4").image == nil)
    }

    @Test("Two managers sharing a Redis tier: the second gets the processed image without downloading it")
    func managersShareRedis() async throws {
        let redis = try await RedisServerProcess.start()
        defer { redis.stop() }
        let server = try await TestHTTPServer.start(image: ManagerFixture.sampleImage())
        let folder = Self.folder()
        let client = RedisClient(configuration: try RedisConfiguration(url: redis.url))
        let tier = RedisDataStorage(client: client)
        let downloader = ImageDownloader(name: "tier-test")
        downloader.downloadTimeout = 5
        let url = server.url("/image/shared")
        let options: HalcyonOptionsInfo = [.processor(DownsamplingImageProcessor(size: CGSize(width: 16, height: 16))),
                                           .callbackQueue(.untouch), .waitForCache]
        let first = HalcyonManager(downloader: downloader, cache: try Self.cache(folder, "one", tiers: [tier]))
        let made = try await first.retrieveImage(with: url, options: options)
        await first.cache.waitForTierWrites()
        let second = HalcyonManager(downloader: downloader, cache: try Self.cache(folder, "two", tiers: [tier]))
        let shared = try await second.retrieveImage(with: url, options: options)
        #expect(server.hits("/image/shared") == 1, "one download for both managers")
        #expect(shared.cacheType == .disk)
        #expect(shared.image.width == made.image.width && shared.image.height == made.image.height)
        await downloader.shutdown()
        await server.shutdown()
        await client.shutdown()
        try? FileManager.default.removeItem(at: folder)
    }

    @Test("A tier that cannot be reached is a miss: the image is downloaded and served")
    func unreachableTier() async throws {
        let port = try RedisServerProcess.freeLoopbackPort()
        var configuration = try RedisConfiguration(url: "redis://127.0.0.1:\(port)/0")
        configuration.connectTimeout = .milliseconds(300)
        let client = RedisClient(configuration: configuration)
        let server = try await TestHTTPServer.start(image: ManagerFixture.sampleImage())
        let folder = Self.folder()
        let downloader = ImageDownloader(name: "tier-test")
        downloader.downloadTimeout = 5
        let manager = HalcyonManager(
            downloader: downloader, cache: try Self.cache(folder, "alone", tiers: [RedisDataStorage(client: client)]))
        let result = try await manager.retrieveImage(with: server.url("/image/alone"), options: [.callbackQueue(.untouch)])
        #expect(result.cacheType == .none && result.image.width == 64)
        #expect(server.hits("/image/alone") == 1)
        await manager.cache.waitForTierWrites()
        await downloader.shutdown()
        await server.shutdown()
        await client.shutdown()
        try? FileManager.default.removeItem(at: folder)
    }
}
