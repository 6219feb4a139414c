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
        let cancelled = HalcyonError.requestError(reason: .taskCancelled(task: nil, token: nil))
        #expect(cancelled.isTaskCancelled && !cancelled.isInvalidResponseStatusCode)
        let moved = HalcyonError.imageSettingError(reason: .notCurrentSourceTask(result: nil, error: nil, source: .network(url)))
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
        let url = fixture.url("/slow/chunks?delay=40&chunks=4")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.onDataReceived([recorder]), .forceRefresh, .asyncCacheTypeCheck])
        let chunks = recorder.chunks.withLock { $0 }
        #expect(chunks.count >= 2, "\(chunks.count) chunks (reads may join chunks sent 40 ms apart on a loaded machine)")
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

/// `downloadTaskUpdated` hands each later attempt's task.
@Suite("Kingfisher API: downloadTaskUpdated")
struct KingfisherTaskUpdatedTests {
    /// Calls `retrieveImage` with a completion handler and waits for it, collecting the updated tasks.
    static func retrieve(
        _ fixture: ManagerFixture, _ url: URL, options: HalcyonOptionsInfo, cancelUpdated: Bool
    ) async -> (Result<RetrieveImageResult, HalcyonError>, [RetrieveImageTask]) {
        let updated = Locked<[RetrieveImageTask]>([])
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<RetrieveImageResult, HalcyonError>, Never>) in
            fixture.manager.retrieveImage(with: url, options: options + [.callbackQueue(.untouch)], downloadTaskUpdated: { task in
                updated.withLock { $0.append(task) }
                guard cancelUpdated else { return }
                task.cancel()
            }, completionHandler: { continuation.resume(returning: $0) })
        }
        return (result, updated.withLock { $0 })
    }

    @Test("An alternative source's task is handed over and loads that source")
    func alternativeTask() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let alternative = fixture.url("/image/alternative")
        let (result, updated) = await Self.retrieve(fixture, fixture.url("/status/404"),
                                                    options: [.alternativeSources([.network(alternative)])], cancelUpdated: false)
        #expect((try? result.get())?.source.url == alternative)
        #expect(updated.count == 1 && updated.first?.source?.url == alternative)
    }

    @Test("Cancelling the handed task stops that attempt: the retrieval fails as cancelled, long before the slow body ends")
    func cancelAttempt() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        // The body takes 9 s with a chunk every 300 ms: neither its end nor the fixture's 5 s idle timeout (which the
        // chunks keep from firing) can end the attempt within 4 s of the cancel, so such an end is the cancel's doing.
        // The clock starts at the cancel: under the parallel suites the failing first source alone can take seconds.
        let slow = fixture.url("/slow/alt?delay=300&chunks=30")
        let cancelledAt = Locked<ContinuousClock.Instant?>(nil)
        let updated = Locked<[RetrieveImageTask]>([])
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<RetrieveImageResult, HalcyonError>, Never>) in
            fixture.manager.retrieveImage(
                with: fixture.url("/status/500"), options: [.alternativeSources([.network(slow)]), .callbackQueue(.untouch)],
                downloadTaskUpdated: { task in
                    updated.withLock { $0.append(task) }
                    Task {
                        try? await Task.sleep(for: .milliseconds(400))
                        cancelledAt.withLock { $0 = .now }
                        task.cancel()
                    }
                }, completionHandler: { continuation.resume(returning: $0) })
        }
        let ended = ContinuousClock.now
        #expect(updated.withLock { $0.count == 1 && $0.first?.isCancelled == true })
        guard case .failure(let error) = result else { Issue.record("the cancelled attempt succeeded"); return }
        #expect(error.isTaskCancelled, "\(error)")
        let cancelled = try #require(cancelledAt.withLock { $0 }, "the retrieval ended before the cancel")
        #expect(ended - cancelled < .seconds(4), "the attempt went on after the cancel")
    }

    @Test("A retry's task is handed over too")
    func retryTask() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/status/503")
        let (result, updated) = await Self.retrieve(
            fixture, url, options: [.retryStrategy(DelayRetryStrategy(maxRetryCount: 2, retryInterval: .seconds(0.01)))], cancelUpdated: false)
        #expect((try? result.get()) == nil)
        #expect(updated.count == 2 && updated.allSatisfy { $0.source?.url == url })
    }
}
