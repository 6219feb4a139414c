import Dispatch
import Foundation
import Testing
@testable import Halcyon

/// A processor that only renames, to test the `key@identifier` rule.
private struct TagProcessor: ImageProcessor {
    let identifier: String
    func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        try DefaultImageProcessor.default.process(item: item, options: options)
    }
}

/// A serializer that records whether it decoded on a marked queue.
private final class RecordingSerializer: CacheSerializer, Sendable {
    static let marker = DispatchSpecificKey<Bool>()
    private let decodedOnMarkedQueue = Locked<[Bool]>([])

    var decodes: [Bool] { decodedOnMarkedQueue.withLock { $0 } }

    func data(with image: Image, original: Data?) throws(HalcyonError) -> Data {
        try DefaultCacheSerializer.default.data(with: image, original: original)
    }

    func image(with data: Data, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let marked = DispatchQueue.getSpecific(key: Self.marker) ?? false
        decodedOnMarkedQueue.withLock { $0.append(marked) }
        return try ImageDecoder.decode(data, options: options.decodingOptions)
    }
}

@Suite("ImageCache")
struct ImageCacheTests {
    private func makeCache(in directory: TemporaryDirectory, clock: TestClock = TestClock()) throws -> ImageCache {
        let memory = MemoryStorage.Backend<Image>(config: MemoryStorage.Config(totalCostLimit: 50_000_000, cleanInterval: 0),
                                                  clock: clock.cacheClock)
        let disk = try DiskStorage.Backend(config: DiskStorage.Config(name: "images", directory: directory.url),
                                           clock: clock.cacheClock)
        return ImageCache(memoryStorage: memory, diskStorage: disk)
    }

    private func options(_ items: HalcyonOptionsInfo = []) -> HalcyonParsedOptionsInfo {
        HalcyonParsedOptionsInfo(items)
    }

    @Test("a stored image is a memory hit, then a disk hit after clearing memory, then a memory hit again")
    func memoryThenDisk() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(in: directory)
        let image = try makeTestImage(seed: 3)
        try await cache.store(image, forKey: "photo")
        let first = try await cache.retrieveImage(forKey: "photo", options: options())
        #expect(first.cacheType == .memory)
        #expect(first.image === image)
        cache.clearMemoryCache()
        #expect(await cache.imageCachedTypeAsync(forKey: "photo") == .disk)
        let second = try await cache.retrieveImage(forKey: "photo", options: options())
        #expect(second.cacheType == .disk)
        let decoded = try #require(second.image)
        #expect(try decoded.rgbaPixels() == image.rgbaPixels())
        #expect(await cache.imageCachedTypeAsync(forKey: "photo") == .memory)
        let third = try await cache.retrieveImage(forKey: "photo", options: [])
        #expect(third.cacheType == .memory)
        let missing = try await cache.retrieveImage(forKey: "nothing", options: options())
        #expect(missing.cacheType == .none)
        #expect(missing.image == nil)
    }

    @Test("processed images live under key@identifier")
    func processorKeys() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(in: directory)
        let original = try makeTestImage(seed: 1)
        let processed = try makeTestImage(seed: 2)
        try await cache.store(original, forKey: "k")
        try await cache.store(processed, forKey: "k", processorIdentifier: "round(8)")
        #expect(ImageCache.computedKey("k", processorIdentifier: "") == "k")
        #expect(ImageCache.computedKey("k", processorIdentifier: "round(8)") == "k@round(8)")
        #expect(cache.cachePath(forKey: "k") != cache.cachePath(forKey: "k", processorIdentifier: "round(8)"))
        #expect(cache.cachePath(forKey: "k", processorIdentifier: "round(8)") == cache.diskStorage.fileURL(forKey: "k@round(8)").path)
        let processedOptions = options([.processor(TagProcessor(identifier: "round(8)"))])
        #expect(try await cache.retrieveImage(forKey: "k", options: processedOptions).image === processed)
        #expect(try await cache.retrieveImage(forKey: "k", options: options()).image === original)
        cache.clearMemoryCache()
        let fromDisk = try await cache.retrieveImage(forKey: "k", options: processedOptions)
        #expect(fromDisk.cacheType == .disk)
        #expect(try fromDisk.image?.rgbaPixels() == processed.rgbaPixels())
        #expect(cache.retrieveImageInMemoryCache(forKey: "k", processorIdentifier: "round(8)") != nil)
        #expect(cache.retrieveImageInMemoryCache(forKey: "k") == nil)
        #expect(cache.isCached(forKey: "k", processorIdentifier: "other") == false)
    }

    @Test("memory-only stores, removal and clearing")
    func removeAndClear() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(in: directory)
        try await cache.store(try makeTestImage(), forKey: "mem", toDisk: false)
        #expect(await cache.imageCachedTypeAsync(forKey: "mem") == .memory)
        #expect(cache.diskStorage.isCached(forKey: "mem") == false)
        try await cache.store(try makeTestImage(), forKey: "both")
        #expect(await cache.diskStorageSize > 0)
        try await cache.removeImage(forKey: "both", fromDisk: false)
        #expect(await cache.imageCachedTypeAsync(forKey: "both") == .disk)
        try await cache.removeImage(forKey: "both")
        #expect(await cache.imageCachedTypeAsync(forKey: "both") == .none)
        try await cache.store(try makeTestImage(), forKey: "again")
        try await cache.clearDiskCache()
        #expect(await cache.diskStorageSize == 0)
        #expect(await cache.imageCachedTypeAsync(forKey: "again") == .memory)
        cache.clearMemoryCache()
        #expect(cache.isCached(forKey: "again") == false)
    }

    @Test("disk writes and removals happen in call order")
    func writeOrder() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(in: directory)
        let first = try makeTestImage(seed: 1)
        let second = try makeTestImage(seed: 2)
        for round in 0..<20 {
            cache.store(first, forKey: "r\(round)", completionHandler: nil)
            cache.removeImage(forKey: "r\(round)", completionHandler: nil)
            cache.store(first, forKey: "s\(round)", completionHandler: nil)
            cache.store(second, forKey: "s\(round)", completionHandler: nil)
        }
        await cache.cleanExpiredDiskCache()
        cache.clearMemoryCache()
        for round in 0..<20 {
            #expect(cache.diskStorage.isCached(forKey: "r\(round)") == false)
            let image = try await cache.retrieveImage(forKey: "s\(round)", options: options()).image
            #expect(try image?.rgbaPixels() == second.rgbaPixels())
        }
    }

    @Test("expired images are cleaned from memory and disk by the injected clock")
    func expiration() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let cache = try makeCache(in: directory, clock: clock)
        try await cache.store(try makeTestImage(), forKey: "short", memoryExpiration: .seconds(10), diskExpiration: .seconds(20))
        try await cache.store(try makeTestImage(), forKey: "long", memoryExpiration: .seconds(1_000), diskExpiration: .seconds(1_000))
        clock.advance(by: 15)
        cache.cleanExpiredMemoryCache()
        #expect(cache.memoryStorage.count == 1)
        #expect(await cache.imageCachedTypeAsync(forKey: "short") == .disk)
        clock.advance(by: 10)
        #expect(await cache.imageCachedTypeAsync(forKey: "short") == .none)
        let removed = await cache.cleanExpiredDiskCache()
        #expect(removed.count == 1)
        #expect(try await cache.retrieveImage(forKey: "short", options: options()).cacheType == .none)
        #expect(try await cache.retrieveImage(forKey: "long", options: options()).cacheType == .memory)
    }

    @Test("disk hits are decoded off the caller's queue unless loadDiskFileSynchronously")
    func decodeOffCaller() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(in: directory)
        let serializer = RecordingSerializer()
        try await cache.store(try makeTestImage(), forKey: "k", cacheSerializer: serializer, toDisk: true)
        let caller = DispatchQueue(label: "caller")
        caller.setSpecific(key: RecordingSerializer.marker, value: true)
        let callback = DispatchQueue(label: "callback")
        callback.setSpecific(key: RecordingSerializer.marker, value: true)
        let retrieveOptions = options([.cacheSerializer(serializer)])
        for synchronously in [false, true] {
            cache.clearMemoryCache()
            let onCallbackQueue: Bool = await withCheckedContinuation { continuation in
                caller.async {
                    cache.retrieveImage(forKey: "k", options: retrieveOptions, loadDiskFileSynchronously: synchronously,
                                        callbackQueue: callback) { result in
                        let type = (try? result.get())?.cacheType
                        let marked = DispatchQueue.getSpecific(key: RecordingSerializer.marker) ?? false
                        continuation.resume(returning: marked && type == .disk)
                    }
                }
            }
            #expect(onCallbackQueue, "the completion runs on the callback queue with a disk hit")
        }
        #expect(serializer.decodes == [false, true])
    }

    @Test("completion-handler APIs report on the callback queue")
    func completionHandlers() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(in: directory)
        let queue = DispatchQueue(label: "callbacks")
        queue.setSpecific(key: RecordingSerializer.marker, value: true)
        let image = try makeTestImage()
        let stored: Bool = await withCheckedContinuation { continuation in
            cache.store(image, forKey: "k", callbackQueue: queue) { result in
                let ok = (try? result.diskCacheResult.get()) != nil
                continuation.resume(returning: ok && DispatchQueue.getSpecific(key: RecordingSerializer.marker) == true)
            }
        }
        #expect(stored)
        let size: UInt = await withCheckedContinuation { continuation in
            cache.calculateDiskStorageSize(callbackQueue: queue) { continuation.resume(returning: (try? $0.get()) ?? 0) }
        }
        #expect(size > 0)
        let fromDisk: Image? = await withCheckedContinuation { continuation in
            cache.retrieveImageInDiskCache(forKey: "k", callbackQueue: queue) { continuation.resume(returning: try? $0.get()) }
        }
        #expect(fromDisk != nil)
        let removed: Bool = await withCheckedContinuation { continuation in
            cache.removeImage(forKey: "k", callbackQueue: queue) { continuation.resume(returning: (try? $0.get()) != nil) }
        }
        #expect(removed)
        #expect(cache.isCached(forKey: "k") == false)
    }

    @Test("bytes that no longer decode are a miss and are removed; over-limit images fail and stay")
    func undecodableData() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(in: directory)
        try await cache.storeToDisk(Data("definitely not an image".utf8), forKey: "junk")
        #expect(await cache.imageCachedTypeAsync(forKey: "junk") == .disk)
        let result = try await cache.retrieveImage(forKey: "junk", options: options())
        #expect(result.cacheType == .none)
        #expect(await cache.imageCachedTypeAsync(forKey: "junk") == .none)

        try await cache.store(try makeTestImage(width: 100, height: 100), forKey: "big", toDisk: true)
        cache.clearMemoryCache()
        await #expect {
            _ = try await cache.retrieveImage(forKey: "big", options: options([.maxPixelCount(100)]))
        } throws: { error in
            guard case HalcyonError.processorError(reason: .tooManyPixels) = error else { return false }
            return true
        }
        #expect(await cache.imageCachedTypeAsync(forKey: "big") == .disk)
    }

    @Test("HTTP metadata is stored with the entry and an entry can be re-dated after a 304")
    func metadataAndRevalidation() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let cache = try makeCache(in: directory, clock: clock)
        let data = try makeTestImage().encoded(as: .png())
        let metadata = CacheEntryMetadata(contentType: "image/png", etag: "\"v1\"", lastModified: "Wed, 21 Oct 2015 07:28:00 GMT",
                                          cacheControl: "max-age=60")
        try await cache.storeToDisk(data, forKey: "https://example.com/i.png", expiration: .seconds(60), metadata: metadata)
        clock.advance(by: 120)
        #expect(try await cache.diskEntry(forKey: "https://example.com/i.png") == nil)
        let stale = try #require(try await cache.diskEntry(forKey: "https://example.com/i.png", includingExpired: true))
        #expect(stale.metadata.etag == "\"v1\"")
        #expect(stale.metadata.originalKey == "https://example.com/i.png")
        #expect(stale.isExpired(at: clock.now))
        #expect(try await cache.extendDiskExpiration(forKey: "https://example.com/i.png", to: .seconds(60)))
        let fresh = try await cache.retrieveImage(forKey: "https://example.com/i.png", options: options())
        #expect(fresh.cacheType == .disk)
        #expect(try await cache.extendDiskExpiration(forKey: "gone") == false)
    }

    @Test("named caches never crash on odd names and use the default directory")
    func namedCaches() throws {
        let odd = ImageCache(name: "a/b")
        #expect(odd.diskStorage.directoryURL.lastPathComponent == "a%2Fb")
        #expect(ImageCache(name: "").diskStorage.directoryURL.lastPathComponent.count == 64)
        #expect(ImageCache.default.diskStorage.directoryURL.lastPathComponent == "default")
        #expect(ImageCache.default.diskStorage.directoryURL.deletingLastPathComponent().path
                == DiskStorage.Config.defaultParentDirectory().path)
        #expect(throws: HalcyonError.self) { try ImageCache(name: "x/y", cacheDirectoryURL: nil) }
    }
}
