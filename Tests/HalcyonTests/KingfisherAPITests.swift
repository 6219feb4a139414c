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
