import Foundation
@testable import Halcyon
import Testing

/// Holds the notifications one observer saw.
final class NotificationLog: Sendable {
    let hashes = Locked<[[String]]>([])
}

/// Kingfisher's cache API a porting user types: live `diskStorage.config`, `diskCachePathClosure`,
/// the off-thread `imageCachedTypeAsync` and the clean notification.
@Suite("Kingfisher API: cache")
struct KingfisherCacheAPITests {
    @Test("diskStorage.config changes apply to the running cache; its name and directory stay")
    func liveConfig() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try ImageCache(name: "live", cacheDirectoryURL: directory.url)
        try await cache.store(try makeTestImage(), forKey: "before")
        #expect(cache.cachePath(forKey: "before").hasSuffix(cache.hash(forKey: "before")) && !cache.cachePath(forKey: "before").hasSuffix(".img"))
        cache.diskStorage.config.pathExtension = "img"
        cache.diskStorage.config.expiration = .seconds(60)
        cache.diskStorage.config.name = "elsewhere"
        cache.diskStorage.config.pathExtension = "not/valid"
        #expect(cache.diskStorage.config.pathExtension == "img" && cache.diskStorage.config.name == "live")
        guard case .seconds(let seconds) = cache.diskStorage.config.expiration else { Issue.record("expiration not applied"); return }
        #expect(seconds == 60)
        try await cache.store(try makeTestImage(), forKey: "after")
        let path = cache.cachePath(forKey: "after")
        #expect(path.hasSuffix(".img") && FileManager.default.fileExists(atPath: path), "\(path)")
        #expect(path.hasPrefix(directory.url.appendingPathComponent("live").path))
    }

    @Test("diskCachePathClosure places the disk directory")
    func pathClosure() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try ImageCache(name: "closure", cacheDirectoryURL: directory.url) { parent, name in
            parent.appendingPathComponent("custom-\(name)", isDirectory: true)
        }
        try await cache.store(try makeTestImage(), forKey: "k")
        let expected = directory.url.appendingPathComponent("custom-closure").path
        #expect(cache.diskStorage.directoryURL.path == expected)
        #expect(FileManager.default.fileExists(atPath: cache.cachePath(forKey: "k")) && cache.cachePath(forKey: "k").hasPrefix(expected))
    }

    @Test("imageCachedTypeAsync reads memory, then the disk entry off the caller")
    func asyncCachedType() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try ImageCache(name: "type", cacheDirectoryURL: directory.url)
        #expect(await cache.imageCachedTypeAsync(forKey: "k") == .none)
        try await cache.store(try makeTestImage(), forKey: "k")
        #expect(await cache.imageCachedTypeAsync(forKey: "k") == .memory)
        cache.clearMemoryCache()
        #expect(await cache.imageCachedTypeAsync(forKey: "k") == .disk)
    }

    @Test("Cleaning expired disk entries posts HalcyonDidCleanDiskCache with the removed hashes")
    func cleanNotification() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let memory = MemoryStorage.Backend<Image>(config: MemoryStorage.Config(), clock: clock.cacheClock)
        let disk = try DiskStorage.Backend(config: DiskStorage.Config(name: "clean", directory: directory.url), clock: clock.cacheClock)
        let cache = ImageCache(memoryStorage: memory, diskStorage: disk)
        try await cache.store(try makeTestImage(), forKey: "short", memoryExpiration: .seconds(10), diskExpiration: .seconds(20))
        try await cache.store(try makeTestImage(), forKey: "long", memoryExpiration: .seconds(1_000), diskExpiration: .seconds(1_000))
        let log = NotificationLog()
        let observer = NotificationCenter.default.addObserver(forName: .HalcyonDidCleanDiskCache, object: cache, queue: nil) { note in
            let hashes = note.userInfo?[HalcyonDiskCacheCleanedHashKey] as? [String] ?? []
            log.hashes.withLock { $0.append(hashes) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        _ = await cache.cleanExpiredDiskCache()
        #expect(log.hashes.withLock { $0.isEmpty }, "nothing removed, nothing posted")
        clock.advance(by: 30)
        _ = await cache.cleanExpiredDiskCache()
        #expect(log.hashes.withLock { $0 } == [[cache.hash(forKey: "short")]])
    }
}
