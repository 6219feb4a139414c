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

    /// `testSuccessCompletionHandlerRunningOnCustomQueue`: the completion handler runs on the custom callback
    /// queue, the progress block on the main queue.
    @Test func progressOnMainCompletionOnCustomQueue() async throws {
        _ = Self.mainQueueKey
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let (custom, key) = Self.labelledQueue("kb.custom-callback")
        let progressOnMain = Locked<[Bool]>([])
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<(Bool, Bool), Never>) in
            fixture.manager.retrieveImage(
                with: .network(fixture.url("/slow/kb-custom-queue?delay=20&chunks=3")),
                options: [.callbackQueue(.dispatch(custom))],
                progressBlock: { _, _ in progressOnMain.withLock { $0.append(Self.isOnMainQueue) } },
                completionHandler: { result in
                    let succeeded = (try? result.get()) != nil
                    continuation.resume(returning: (succeeded, DispatchQueue.getSpecific(key: key) == "kb.custom-callback"))
                })
        }
        #expect(result.0, "the retrieval succeeded")
        #expect(result.1, "the completion handler ran on the custom queue")
        // Progress calls are queued on the main queue, which runs while this test awaits.
        #expect(await fixture.server.wait(timeout: 5) { !progressOnMain.withLock { $0 }.isEmpty })
        let calls = progressOnMain.withLock { $0 }
        #expect(!calls.isEmpty && calls.allSatisfy { $0 }, "progress ran on the main queue: \(calls)")
    }

    // MARK: - ImageViewExtensionTests

    /// `testImageDownloadCompletionHandlerRunningOnMainQueue`: `.hc.setImage` calls its progress block and its
    /// completion handler on the main queue, whatever the callback queue.
    @Test func setImageCompletionOnMainQueue() async throws {
        _ = Self.mainQueueKey
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let (custom, _) = Self.labelledQueue("kb.set-image-callback")
        let target = RecordingTarget()
        let progressOnMain = Locked<[Bool]>([])
        let completionOnMain = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            target.hc.setImage(
                with: .network(fixture.url("/slow/kb-set-image-main?delay=20&chunks=3")),
                options: [.callbackQueue(.dispatch(custom))], manager: fixture.manager,
                progressBlock: { _, _ in progressOnMain.withLock { $0.append(Self.isOnMainQueue) } },
                completionHandler: { _ in continuation.resume(returning: Self.isOnMainQueue) })
        }
        #expect(completionOnMain, "the completion handler ran on the main queue")
        #expect(target.image?.width == 64)
        let calls = progressOnMain.withLock { $0 }
        #expect(!calls.isEmpty && calls.allSatisfy { $0 }, "progress ran on the main queue: \(calls)")
    }

    /// `testImageSettingCanCancelAlternativeSource`: cancelling while an alternative source downloads ends the
    /// load with `taskCancelled` whose task is that source's download.
    @Test func setImageCanCancelAlternativeSource() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = RecordingTarget()
        let broken = fixture.url("/empty/kb-broken")
        let alternative = fixture.url("/delayed/kb-alternative?delay=3000")
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<RetrieveImageResult, HalcyonError>, Never>) in
            target.hc.setImage(with: .network(broken), options: [.alternativeSources([.network(alternative)])],
                               manager: fixture.manager, completionHandler: { continuation.resume(returning: $0) })
            Task {
                _ = await fixture.server.wait(timeout: 5) { fixture.server.hits("/delayed/kb-alternative?delay=3000") > 0 }
                try? await Task.sleep(for: .milliseconds(100))
                target.hc.cancelDownloadTask()
            }
        }
        guard case .failure(.requestError(reason: .taskCancelled(let task, _))) = result else {
            Issue.record("expected taskCancelled, got \(result)")
            return
        }
        #expect(task?.url == alternative, "the alternative source's download was cancelled: \(String(describing: task?.url))")
        #expect(target.image == nil)
    }

    // MARK: - DiskStorageTests

    /// `testConfigUsesHashedFileNameWithAutoExtAndProcessor`: the extension comes from the part before `@`;
    /// an unhashed name is the key itself, `@` included.
    @Test func hashedFileNameWithAutoExtAndProcessor() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let storage = try DiskStorage.Backend(config: DiskStorage.Config(
            name: "kb-auto-ext", autoExtAfterHashedFileName: true, directory: directory.url))
        let key = "test.jpeg@com.onevcat.Kingfisher.DownsamplingImageProcessor"
        let hashed = storage.cacheFileName(forKey: key)
        #expect(hashed != key)
        #expect(hashed == DiskStorage.Backend.sha256Hex(key) + ".jpeg")

        storage.config.usesHashedFileName = false
        #expect(storage.cacheFileName(forKey: key) == key)
    }

    /// `testConfigUsesHashedFileNameWithAutoExtAndAtSignInPath`: an `@` in the URL's path leaves no plausible
    /// extension (`net/57373197`), so the name is the bare hash, and the entry round-trips.
    @Test func hashedFileNameWithAutoExtAndAtSignInPath() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let storage = try DiskStorage.Backend(config: DiskStorage.Config(
            name: "kb-at-sign", autoExtAfterHashedFileName: true, directory: directory.url))
        let key = "https://t.furaffinity.net/57373197@300-1720981878.jpg"
        let hashed = storage.cacheFileName(forKey: key)
        #expect(hashed == DiskStorage.Backend.sha256Hex(key))
        #expect(!hashed.contains("/"))
        try storage.store(value: Data("1".utf8), forKey: key)
        #expect(storage.isCached(forKey: key))
        #expect(try storage.value(forKey: key) == Data("1".utf8))
    }

    /// `testConfigUsesHashedFileNameWithAutoExtAndQueryString`: `jpg?v=2` is no extension, so the name is the bare hash.
    @Test func hashedFileNameWithAutoExtAndQueryString() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let storage = try DiskStorage.Backend(config: DiskStorage.Config(
            name: "kb-query", autoExtAfterHashedFileName: true, directory: directory.url))
        let key = "https://example.com/image.jpg?v=2"
        #expect(storage.cacheFileName(forKey: key) == DiskStorage.Backend.sha256Hex(key))
    }

    // MARK: - ImageDownloaderTests

    /// `testDownloadTaskProperty`: a download of an invalid URL still returns its task; the failure comes
    /// through the completion handler.
    @Test func downloadTaskForInvalidURL() async throws {
        let downloader = ImageDownloader(name: "kb-task-property")
        defer { Task { await downloader.shutdown() } }
        let box = ResultBox()
        let url = try #require(URL(string: "1234"))
        let task = downloader.downloadImage(with: url) { box.set($0) }
        #expect(task != nil, "the task exists")
        #expect(task?.url == url)
        guard case .failure(.requestError(.invalidURL)) = await box.value() else {
            Issue.record("expected invalidURL through the completion handler")
            return
        }
    }

    // MARK: - SDWebImage

    /// SDWebImageDownloader's `shouldBlockFailedURLWithURL:error:`: an invalid HTTP status is not blocked, so
    /// the next load asks the server again.
    @Test func invalidStatusIsNotBlocked() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let missing = fixture.url("/status/404")
        for attempt in 1...2 {
            do {
                _ = try await fixture.manager.retrieveImage(with: missing)
                Issue.record("a 404 loaded an image")
            } catch {
                #expect(error.isInvalidResponseStatusCode(404), "attempt \(attempt): \(error)")
            }
            #expect(!fixture.manager.failedURLs.contains(missing))
            #expect(fixture.server.hits("/status/404") == attempt)
        }
    }

    /// `SDWebImageManagerTests.test12ThatStoreCacheTypeWork`: with a transformer and the original kept, the
    /// original bytes (an animation) are on disk under the source's own key, and only there.
    @Test func originalStoredUnderItsOwnKey() async throws {
        let animation = try TestImages.animation(frames: 4).encoded(as: .gif)
        let fixture = try await ManagerFixture.make(image: animation)
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/kb-store-original")
        let processor = CountingProcessor(identifier: "kb.transformer")
        let result = try await fixture.manager.retrieveImage(
            with: url, options: [.processor(processor), .cacheOriginalImage, .waitForCache])
        #expect(result.image.width == 16 && result.image.height == 12)

        let key = url.absoluteString
        #expect(!fixture.cache.memoryStorage.isCached(forKey: key), "the original is not in memory")
        let original = try #require(try fixture.cache.diskStorage.value(forKey: key), "the original is on disk under its key")
        #expect(original == animation)
        #expect(try ImageDecoder.decode(original).frameCount == 4)
        let processed = ImageCache.computedKey(key, processorIdentifier: processor.identifier)
        #expect(fixture.cache.memoryStorage.isCached(forKey: processed))
        #expect(fixture.cache.diskStorage.isCached(forKey: processed, extensionKey: key))
    }
}
