import Dispatch
import Foundation
@testable import Halcyon
import Testing

/// Kingfisher's names a porting user types: error queries, `CallbackQueue.queue`, `hash(forKey:)`, `cachePath(…forcedExtension:)`.
@Suite("Kingfisher API names")
struct KingfisherAPITests {
    @Test("error queries: status codes, cancellation, not-current task")
    func errorQueries() throws {
        let url = try #require(URL(string: "http://127.0.0.1/x.png"))
        let notFound = HalcyonError.responseError(reason: .invalidHTTPStatusCode(url: url, statusCode: 404))
        #expect(notFound.isInvalidResponseStatusCode)
        #expect(notFound.isInvalidResponseStatusCode(404))
        #expect(!notFound.isInvalidResponseStatusCode(500))
        #expect(!notFound.isTaskCancelled && !notFound.isNotCurrentTask)
        let cancelled = HalcyonError.requestError(reason: .taskCancelled(url: url))
        #expect(cancelled.isTaskCancelled && !cancelled.isInvalidResponseStatusCode)
        let moved = HalcyonError.imageSettingError(reason: .notCurrentSourceTask)
        #expect(moved.isNotCurrentTask && !moved.isTaskCancelled)
    }

    @Test("CallbackQueue.queue runs blocks on the given queue")
    func queueAlias() async {
        let queue = DispatchQueue(label: "halcyon.test.callbacks")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let seen = await withCheckedContinuation { (continuation: CheckedContinuation<Int?, Never>) in
            CallbackQueue.queue(queue).execute { continuation.resume(returning: DispatchQueue.getSpecific(key: key)) }
        }
        #expect(seen == 7)
    }

    @Test("hash(forKey:) and cachePath(forKey:processorIdentifier:forcedExtension:) name the file the store wrote")
    func hashAndCachePath() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-kf-api-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try ImageCache(name: "api", cacheDirectoryURL: folder)
        let image = try makeTestImage()
        let stored = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            cache.store(image, forKey: "photo.png", processorIdentifier: "p", forcedExtension: "img") { result in
                continuation.resume(returning: (try? result.diskCacheResult.get()) != nil)
            }
        }
        #expect(stored)
        let path = cache.cachePath(forKey: "photo.png", processorIdentifier: "p", forcedExtension: "img")
        #expect(FileManager.default.fileExists(atPath: path), "\(path)")
        #expect(path.hasSuffix(".img"))
        #expect((path as NSString).lastPathComponent == cache.hash(forKey: "photo.png", processorIdentifier: "p", forcedExtension: "img"))
        // Without the forced extension the name is the other file Kingfisher's naming gives: no such file.
        #expect(!FileManager.default.fileExists(atPath: cache.cachePath(forKey: "photo.png", processorIdentifier: "p")))
    }
}

/// Records the chunks it is given while `enabled`.
final class ChunkRecorder: DataReceivingSideEffect {
    let chunks = Locked<[Data]>([])
    let enabled = Locked(true)
    var onShouldApply: @Sendable () -> Bool { { [enabled] in enabled.withLock { $0 } } }
    func onDataReceived(task: SessionDataTask, data: Data) { chunks.withLock { $0.append(data) } }
}

/// `.onDataReceived`, `.asyncCacheTypeCheck` and `RetrieveImageResult.data()` against a loopback server.
@Suite("Kingfisher API: data hooks")
struct KingfisherDataAPITests {
    @Test("onDataReceived sees every chunk of the body in order; onShouldApply turns it off")
    func dataReceived() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let recorder = ChunkRecorder()
        let url = fixture.url("/slow/chunks?delay=20&chunks=4")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.onDataReceived([recorder]), .forceRefresh, .asyncCacheTypeCheck])
        let chunks = recorder.chunks.withLock { $0 }
        #expect(chunks.count >= 4, "\(chunks.count) chunks")
        #expect(chunks.reduce(Data(), +) == fixture.server.image)
        let silent = ChunkRecorder()
        silent.enabled.withLock { $0 = false }
        _ = try await fixture.manager.retrieveImage(with: fixture.url("/slow/quiet?delay=5&chunks=3"), options: [.onDataReceived([silent])])
        #expect(silent.chunks.withLock { $0.isEmpty })
    }

    @Test("data() gives the downloaded bytes for a load and serialized bytes for memory and disk hits")
    func resultData() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/data")
        let loaded = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        #expect(loaded.data() == fixture.server.image)
        let memory = try await fixture.manager.retrieveImage(with: url)
        #expect(memory.cacheType == .memory && memory.originalData == nil)
        let fromMemory = try #require(memory.data())
        #expect(try ImageDecoder.decode(fromMemory).width == loaded.image.width)
        fixture.cache.clearMemoryCache()
        let disk = try await fixture.manager.retrieveImage(with: url)
        #expect(disk.cacheType == .disk)
        let fromDisk = try #require(disk.data())
        #expect(try ImageDecoder.decode(fromDisk).height == loaded.image.height)
    }
}
