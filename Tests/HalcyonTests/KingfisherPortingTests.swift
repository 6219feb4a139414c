import Dispatch
import Foundation
import Halcyon
import Testing

// Kingfisher code as its users write it, ported with only the README's renames (`kf` → `hc`, `KF` → `HC`,
// `Kingfisher…` → `Halcyon…`, `KFCrossPlatformImage` → `Image`), against a loopback HTTP server. A plain
// `import Halcyon` (no `@testable`): only the public API a porting user sees. Calls that are
// synchronous in Kingfisher are called without `await` in `async` functions too.
//
// Kingfisher call shapes covered (76), one a line, plus the option items .cacheOriginalImage, .processor(_:),
// .targetCache(_:), .downloader(_:), .transition(.fade(_:)), .callbackQueue(.untouch / .mainAsync),
// .loadDiskFileSynchronously and .retryStrategy(_:):
//  - ImageCache(name:cacheDirectoryURL:)
//  - cache.memoryStorage.config.totalCostLimit =
//  - cache.memoryStorage.config.countLimit =
//  - cache.diskStorage.config.sizeLimit =
//  - cache.diskStorage.config.expiration = .days(_:)
//  - cache.store(_:forKey:)
//  - cache.store(_:forKey:toDisk:)
//  - cache.store(_:original:forKey:processorIdentifier:forcedExtension:toDisk:completionHandler:)
//  - cache.storeToDisk(_:forKey:processorIdentifier:forcedExtension:expiration:completionHandler:)
//  - cache.imageCachedType(forKey:), in synchronous and in async code
//  - cache.imageCachedType(forKey:processorIdentifier:)
//  - cache.imageCachedTypeAsync(forKey:processorIdentifier:forcedExtension:callbackQueue:completionHandler:)
//  - cache.isCached(forKey:)
//  - cache.isCached(forKey:processorIdentifier:forcedExtension:)
//  - cache.retrieveImage(forKey:options:callbackQueue:completionHandler:)
//  - cache.retrieveImageInMemoryCache(forKey:)
//  - cache.retrieveImageInMemoryCache(forKey:options:)
//  - cache.retrieveImageInDiskCache(forKey:options:callbackQueue:completionHandler:)
//  - cache.removeImage(forKey:processorIdentifier:forcedExtension:fromMemory:fromDisk:)
//  - cache.clearMemoryCache()
//  - cache.clearCache()
//  - cache.cleanExpiredMemoryCache()
//  - cache.cleanExpiredCache(completion:)
//  - cache.calculateDiskStorageSize(completion:)
//  - cache.hash(forKey:)
//  - cache.cachePath(forKey:)
//  - cache.cachePath(forKey:forcedExtension:)
//  - try await cache.store(_:forKey:)
//  - await cache.imageCachedTypeAsync(forKey:)
//  - try await cache.retrieveImage(forKey:)
//  - try await cache.retrieveImage(forKey:options:)
//  - try await cache.retrieveImageInDiskCache(forKey:options:)
//  - try await cache.storeToDisk(_:forKey:forcedExtension:)
//  - try await cache.diskStorageSize
//  - try await cache.removeImage(forKey:)
//  - try await cache.removeImage(forKey:processorIdentifier:forcedExtension:fromMemory:fromDisk:)
//  - await cache.cleanExpiredDiskCache()
//  - await cache.cleanExpiredCache()
//  - await cache.clearCache() (throws here: see the README)
//  - HalcyonManager(downloader:cache:)
//  - manager.defaultOptions =
//  - manager.cache
//  - manager.retrieveImage(with:options:progressBlock:completionHandler:)
//  - manager.retrieveImage(with:options:completionHandler:)
//  - try await manager.retrieveImage(with:) for a URL
//  - try await manager.retrieveImage(with:) for a Source (.provider)
//  - try await manager.retrieveImage(with:options:)
//  - task?.cancel() on what retrieveImage returned
//  - RetrieveImageResult.data()
//  - DownsamplingImageProcessor(size:)
//  - RoundCornerImageProcessor(cornerRadius:)
//  - processor |> processor
//  - processor.identifier
//  - RawImageDataProvider(data:cacheKey:)
//  - an ImageDataProvider of one's own: cacheKey and data() async throws
//  - an ImageDataProvider of one's own: cacheKey and data(handler:)
//  - a RetryStrategy of one's own: retry(context:retryHandler:)
//  - url.cacheKey
//  - ImageDownloader(name:)
//  - downloader.downloadTimeout =
//  - downloader.downloadImage(with:completionHandler:)
//  - try await downloader.downloadImage(with:)
//  - ImagePrefetcher(resources:options:completionHandler:)
//  - prefetcher.start()
//  - imageView.hc.setImage(with:placeholder:options:completionHandler:)
//  - imageView.hc.setImage(with:options:completionHandler:)
//  - imageView.hc.cancelDownloadTask()
//  - HC.url(_:)
//  - HC builder .setProcessor(_:)
//  - HC builder .targetCache(_:)
//  - HC builder .downloader(_:)
//  - HC builder .onSuccess(_:)
//  - HC builder .set(to:)
//  - error.isTaskCancelled
//  - error.isInvalidResponseStatusCode(_:)
//  - case .requestError(reason: .dataProviderCancelled(provider:))

/// A provider whose load waits until cancelled (cooperatively, as Kingfisher asks of `data()`).
private struct SlowProvider: ImageDataProvider {
    let cacheKey: String
    let started = LockedFlag()

    func data() async throws -> Data {
        started.set()
        try await Task.sleep(for: .seconds(30))
        return Data()
    }
}

/// A provider written to Kingfisher's callback requirement, answering from another queue.
private struct CallbackProvider: ImageDataProvider {
    let cacheKey: String
    let bytes: Data

    func data(handler: @escaping @Sendable (Result<Data, any Error>) -> Void) {
        DispatchQueue.global().async { handler(.success(bytes)) }
    }
}

/// A callback provider that never answers.
private struct SilentProvider: ImageDataProvider {
    let cacheKey: String
    let asked = LockedFlag()

    func data(handler: @escaping @Sendable (Result<Data, any Error>) -> Void) { asked.set() }
}

/// A retry strategy written to Kingfisher's callback requirement: two retries, decided on another queue.
private struct TwoRetries: RetryStrategy {
    func retry(context: RetryContext, retryHandler: @escaping @Sendable (RetryDecision) -> Void) {
        DispatchQueue.global().async { retryHandler(context.retriedCount < 2 ? .retry(userInfo: nil) : .stop) }
    }
}

/// A flag set from any thread.
private final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}

/// A value handed over from a completion handler.
private final class Box<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T?
    func set(_ value: T) { lock.lock(); stored = value; lock.unlock() }
    var value: T? { lock.lock(); defer { lock.unlock() }; return stored }
}

/// An image target the way a toolkit's image view adopts `ImageSettable`.
private final class ImageViewDouble: ImageSettable, @unchecked Sendable {
    let halcyonState = ImageSettableState()
    private let lock = NSLock()
    private var current: Image?
    var image: Image? { lock.lock(); defer { lock.unlock() }; return current }
    func setImage(_ image: Image?, transition: ImageTransition) { lock.lock(); current = image; lock.unlock() }
}

/// Polls `condition` until it holds or `seconds` pass.
private func eventually(_ seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}

/// The loopback origin, a cache in a fresh folder, a downloader and a manager over both.
private struct Origin {
    let server: TestHTTPServer
    let folder: URL
    let cache: ImageCache
    let downloader: ImageDownloader
    let manager: HalcyonManager

    static func start() async throws -> Origin {
        let server = try await TestHTTPServer.start(image: try TestImages.encodedGradient(.png(), width: 64, height: 48))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-porting-\(UUID().uuidString)")
        let cache = try ImageCache(name: "porting", cacheDirectoryURL: folder)
        let downloader = ImageDownloader(name: "porting")
        downloader.downloadTimeout = 5
        let manager = HalcyonManager(downloader: downloader, cache: cache)
        manager.defaultOptions = [.callbackQueue(.untouch)]
        return Origin(server: server, folder: folder, cache: cache, downloader: downloader, manager: manager)
    }

    func url(_ path: String) -> URL { server.url(path) }

    func stop() async {
        await downloader.shutdown()
        await server.shutdown()
        try? FileManager.default.removeItem(at: folder)
    }
}

@Suite("Kingfisher porting: Kingfisher's calls, renamed")
struct KingfisherPortingTests {
    // MARK: - Synchronous code (a view controller's viewDidLoad)

    /// Kingfisher's synchronous cache calls, with completion handlers, in a function with no `await`.
    private func storeAndCheck(_ cache: ImageCache, image: Image, data: Data, done: @escaping @Sendable ([String]) -> Void) {
        cache.memoryStorage.config.totalCostLimit = 64 * 1024 * 1024
        cache.memoryStorage.config.countLimit = 100
        cache.diskStorage.config.sizeLimit = 100 * 1024 * 1024
        cache.diskStorage.config.expiration = .days(7)
        cache.store(image, forKey: "memory-and-disk")
        var problems: [String] = []
        if cache.imageCachedType(forKey: "memory-and-disk") != .memory { problems.append("store did not reach memory at once") }
        if !cache.isCached(forKey: "memory-and-disk") { problems.append("isCached") }
        if cache.retrieveImageInMemoryCache(forKey: "memory-and-disk") == nil { problems.append("retrieveImageInMemoryCache") }
        if cache.retrieveImageInMemoryCache(forKey: "memory-and-disk", options: [.callbackQueue(.untouch)]) == nil {
            problems.append("retrieveImageInMemoryCache(options:)")
        }
        let found = problems
        cache.store(image, original: data, forKey: "forced", processorIdentifier: "p", forcedExtension: "png", toDisk: true) { result in
            var afterStore = found
            if case .failure = result.diskCacheResult { afterStore.append("store(…forcedExtension:) disk") }
            let checked = afterStore
            cache.storeToDisk(data, forKey: "raw", processorIdentifier: "", forcedExtension: "img", expiration: .never) { result in
                var problems = checked
                if case .failure = result.diskCacheResult { problems.append("storeToDisk") }
                done(problems)
            }
        }
    }

    @Test("cache calls in synchronous code: store, check, read back with completion handlers")
    func cacheInSynchronousCode() async throws {
        let origin = try await Origin.start()
        defer { Task { await origin.stop() } }
        let cache = origin.cache
        let image = try TestImages.gradient(width: 20, height: 10)
        let data = try image.encoded(as: .png())
        let problems = await withCheckedContinuation { continuation in
            storeAndCheck(cache, image: image, data: data) { continuation.resume(returning: $0) }
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(cache.isCached(forKey: "forced", processorIdentifier: "p", forcedExtension: "png"))
        #expect(FileManager.default.fileExists(atPath: cache.cachePath(forKey: "raw", forcedExtension: "img")))
        #expect(cache.cachePath(forKey: "memory-and-disk").hasSuffix(cache.hash(forKey: "memory-and-disk")))
        cache.clearMemoryCache()
        let typed = Box<CacheType>()
        await withCheckedContinuation { continuation in
            cache.imageCachedTypeAsync(forKey: "forced", processorIdentifier: "p", forcedExtension: "png", callbackQueue: .mainAsync) {
                typed.set($0)
                continuation.resume()
            }
        }
        #expect(typed.value == .disk)
        let read = Box<Result<ImageCacheResult, HalcyonError>>()
        await withCheckedContinuation { continuation in
            cache.retrieveImage(forKey: "memory-and-disk", options: nil, callbackQueue: .untouch) {
                read.set($0)
                continuation.resume()
            }
        }
        guard case .success(let value)? = read.value else { Issue.record("retrieveImage(forKey:options:callbackQueue:)"); return }
        #expect(value.cacheType == .disk && value.image?.width == 20)
        let diskRead = Box<Result<Image?, HalcyonError>>()
        await withCheckedContinuation { continuation in
            cache.retrieveImageInDiskCache(forKey: "memory-and-disk", options: [.loadDiskFileSynchronously], callbackQueue: .untouch) {
                diskRead.set($0)
                continuation.resume()
            }
        }
        guard case .success(let diskImage)? = diskRead.value else { Issue.record("retrieveImageInDiskCache(forKey:options:callbackQueue:)"); return }
        #expect(diskImage?.height == 10)
    }

    /// Synchronous removals and clears: the memory side happens before each call returns.
    private func removeAndClear(_ cache: ImageCache, image: Image, key: String) -> (afterRemove: CacheType, afterClear: CacheType) {
        cache.removeImage(forKey: key, processorIdentifier: "", forcedExtension: nil, fromMemory: true, fromDisk: false)
        let afterRemove = cache.imageCachedType(forKey: key)
        cache.store(image, forKey: "sync-clear", toDisk: false)
        cache.clearCache()
        return (afterRemove, cache.imageCachedType(forKey: "sync-clear"))
    }

    // MARK: - Async code

    @Test("the same cache calls in async code: synchronous ones stay synchronous, async ones are awaited")
    func cacheInAsyncCode() async throws {
        let origin = try await Origin.start()
        defer { Task { await origin.stop() } }
        let cache = origin.cache
        let image = try TestImages.gradient(width: 20, height: 10)
        let k = "async-key"
        try await cache.store(image, forKey: k)
        cache.clearMemoryCache()
        // Synchronous in Kingfisher: no `await`, even in an async function.
        #expect(cache.imageCachedType(forKey: k) == .disk)
        #expect(cache.imageCachedType(forKey: k, processorIdentifier: "other") == .none)
        #expect(await cache.imageCachedTypeAsync(forKey: k) == .disk)
        let value = try await cache.retrieveImage(forKey: k)
        #expect(value.cacheType == .disk && value.image != nil)
        #expect(cache.imageCachedType(forKey: k) == .memory, "a disk hit is put in memory")
        let processed = try await cache.retrieveImage(forKey: k, options: [.processor(RoundCornerImageProcessor(cornerRadius: 4))])
        #expect(processed.cacheType == .none)
        #expect(try await cache.retrieveImageInDiskCache(forKey: k, options: nil)?.width == 20)
        try await cache.storeToDisk(try image.encoded(as: .png()), forKey: "bytes", forcedExtension: "png")
        #expect(cache.isCached(forKey: "bytes", processorIdentifier: "", forcedExtension: "png"))
        let size = try await cache.diskStorageSize
        let counted = await withCheckedContinuation { continuation in
            cache.calculateDiskStorageSize { continuation.resume(returning: (try? $0.get()) ?? 0) }
        }
        #expect(size > 0 && size == counted)
        try await cache.removeImage(forKey: k, processorIdentifier: "", forcedExtension: nil, fromMemory: true, fromDisk: false)
        #expect(cache.imageCachedType(forKey: k) == .disk)
        try await cache.removeImage(forKey: k)
        #expect(await cache.imageCachedTypeAsync(forKey: k) == .none)
        cache.cleanExpiredMemoryCache()
        await cache.cleanExpiredDiskCache()
        await cache.cleanExpiredCache()
        await withCheckedContinuation { continuation in cache.cleanExpiredCache { continuation.resume() } }
        #expect(cache.isCached(forKey: "bytes", processorIdentifier: "", forcedExtension: "png"), "nothing had expired")
        try await cache.clearCache()
        #expect(!cache.isCached(forKey: "bytes", processorIdentifier: "", forcedExtension: "png"))
        try await cache.store(image, forKey: k)
        let (afterRemove, afterClear) = removeAndClear(cache, image: image, key: k)
        #expect(afterRemove == .disk && afterClear == .none, "removeImage(fromDisk: false) and clearCache() act on memory at once")
    }

    // MARK: - Manager

    @Test("HalcyonManager: completion handler, async/await, processors, data(), cancel")
    func manager() async throws {
        let origin = try await Origin.start()
        defer { Task { await origin.stop() } }
        let manager = origin.manager
        let url = origin.url("/image/manager")
        let first = await withCheckedContinuation { continuation in
            manager.retrieveImage(with: url, options: [.cacheOriginalImage], progressBlock: nil) { result in
                continuation.resume(returning: result)
            }
        }
        guard case .success(let value) = first else { Issue.record("completion-handler retrieveImage: \(first)"); return }
        #expect(value.cacheType == .none && value.image.width == 64 && value.data() != nil)
        let again = try await manager.retrieveImage(with: url)
        #expect(again.cacheType == .memory)
        let processor = DownsamplingImageProcessor(size: CGSize(width: 32, height: 24)) |> RoundCornerImageProcessor(cornerRadius: 4)
        let small = try await manager.retrieveImage(with: url, options: [.processor(processor)])
        #expect(small.image.width == 32 && origin.server.hits("/image/manager") == 1, "processed from the original")
        #expect(manager.cache.imageCachedType(forKey: url.cacheKey, processorIdentifier: processor.identifier) != .none)
        let provided = try await manager.retrieveImage(
            with: .provider(RawImageDataProvider(data: origin.server.image, cacheKey: "raw-provider")))
        #expect(provided.image.height == 48)
        do {
            _ = try await manager.retrieveImage(with: origin.url("/status/404"))
            Issue.record("a 404 must fail")
        } catch {
            #expect(error.isInvalidResponseStatusCode(404))
        }
        let hanging = Box<Result<RetrieveImageResult, HalcyonError>>()
        let task = manager.retrieveImage(with: origin.url("/hang/manager"), options: nil) { hanging.set($0) }
        #expect(await origin.server.wait { origin.server.inFlight == 1 })
        task?.cancel()
        #expect(await eventually { hanging.value != nil })
        if case .failure(let error)? = hanging.value { #expect(error.isTaskCancelled) } else { Issue.record("cancel: \(String(describing: hanging.value))") }
    }

    // MARK: - Data providers

    @Test("a cancelled provider-backed load fails with requestError(.dataProviderCancelled(provider:))")
    func dataProviderCancelled() async throws {
        let origin = try await Origin.start()
        defer { Task { await origin.stop() } }
        let provider = SlowProvider(cacheKey: "slow-provider")
        let delivered = Box<Result<RetrieveImageResult, HalcyonError>>()
        let task = origin.manager.retrieveImage(with: .provider(provider), options: nil) { delivered.set($0) }
        #expect(await eventually { provider.started.isSet })
        task?.cancel()
        #expect(await eventually { delivered.value != nil })
        guard case .failure(.requestError(reason: .dataProviderCancelled(let cancelled)))? = delivered.value else {
            Issue.record("completion handler got \(String(describing: delivered.value))")
            return
        }
        #expect(cancelled.cacheKey == "slow-provider")
        let other = SlowProvider(cacheKey: "slow-provider-async")
        let retrieval = Task { try await origin.manager.retrieveImage(with: .provider(other)) }
        #expect(await eventually { other.started.isSet })
        retrieval.cancel()
        do {
            _ = try await retrieval.value
            Issue.record("a cancelled provider load returned an image")
        } catch let error as HalcyonError {
            guard case .requestError(reason: .dataProviderCancelled(let cancelled)) = error else {
                Issue.record("async retrieveImage threw \(error)")
                return
            }
            #expect(cancelled.cacheKey == "slow-provider-async" && !error.isTaskCancelled)
        }
    }

    @Test("a provider and a retry strategy written to Kingfisher's callback requirements")
    func callbackRequirements() async throws {
        let origin = try await Origin.start()
        defer { Task { await origin.stop() } }
        let provided = try await origin.manager.retrieveImage(
            with: .provider(CallbackProvider(cacheKey: "callback-provider", bytes: origin.server.image)))
        #expect(provided.image.width == 64 && provided.cacheType == .none)
        let flaky = origin.url("/flaky/porting?fail=2")
        let retried = try await origin.manager.retrieveImage(with: flaky, options: [.retryStrategy(TwoRetries())])
        #expect(retried.image.width == 64)
        #expect(origin.server.hits("/flaky/porting?fail=2") == 3, "two 503s, two retries, then the image")
        let silent = SilentProvider(cacheKey: "silent-provider")
        let outcome = Box<Result<RetrieveImageResult, HalcyonError>>()
        let retrieval = Task {
            do throws(HalcyonError) {
                outcome.set(.success(try await origin.manager.retrieveImage(with: .provider(silent))))
            } catch {
                outcome.set(.failure(error))
            }
        }
        #expect(await eventually { silent.asked.isSet })
        retrieval.cancel()
        #expect(await eventually(5) { outcome.value != nil }, "the cancel must end the wait for a provider that never answers")
        guard case .failure(.requestError(reason: .dataProviderCancelled))? = outcome.value else {
            Issue.record("a silent provider's cancelled load: \(String(describing: outcome.value))")
            return
        }
    }

    // MARK: - Image targets, downloader, prefetcher

    @Test("hc.setImage, HC builder, cancelDownloadTask")
    func imageTargets() async throws {
        let origin = try await Origin.start()
        defer { Task { await origin.stop() } }
        let imageView = ImageViewDouble()
        let url = origin.url("/image/view")
        let result = Box<Result<RetrieveImageResult, HalcyonError>>()
        imageView.hc.setImage(with: url, placeholder: nil,
                              options: [.targetCache(origin.cache), .downloader(origin.downloader), .transition(.fade(0.2))]) {
            result.set($0)
        }
        #expect(await eventually { result.value != nil })
        #expect(imageView.image?.width == 64)
        let built = Box<RetrieveImageResult>()
        HC.url(origin.url("/image/builder"))
            .setProcessor(DownsamplingImageProcessor(size: CGSize(width: 16, height: 12)))
            .targetCache(origin.cache)
            .downloader(origin.downloader)
            .onSuccess { built.set($0) }
            .set(to: imageView)
        #expect(await eventually { built.value != nil })
        #expect(imageView.image?.width == 16)
        let cancelled = Box<Result<RetrieveImageResult, HalcyonError>>()
        imageView.hc.setImage(with: origin.url("/hang/view"),
                              options: [.targetCache(origin.cache), .downloader(origin.downloader), .callbackQueue(.untouch)]) {
            cancelled.set($0)
        }
        #expect(await origin.server.wait { origin.server.inFlight == 1 })
        imageView.hc.cancelDownloadTask()
        #expect(await eventually { cancelled.value != nil })
        if case .failure(let error)? = cancelled.value { #expect(error.isTaskCancelled) } else { Issue.record("cancelDownloadTask") }
    }

    @Test("ImageDownloader and ImagePrefetcher")
    func downloaderAndPrefetcher() async throws {
        let origin = try await Origin.start()
        defer { Task { await origin.stop() } }
        let downloader = ImageDownloader(name: "porting-downloader")
        downloader.downloadTimeout = 5
        defer { Task { await downloader.shutdown() } }
        let downloaded = await withCheckedContinuation { continuation in
            downloader.downloadImage(with: origin.url("/image/downloaded")) { continuation.resume(returning: $0) }
        }
        #expect((try? downloaded.get())?.image.width == 64)
        let loaded = try await downloader.downloadImage(with: origin.url("/image/downloaded-async"))
        #expect(loaded.originalData == origin.server.image)
        let urls = (0..<3).map { origin.url("/image/prefetch-\($0)") }
        let counts = Box<[Int]>()
        let prefetcher = ImagePrefetcher(resources: urls, options: [.targetCache(origin.cache), .downloader(origin.downloader)],
                                         completionHandler: { skipped, failed, completed in
                                             counts.set([skipped.count, failed.count, completed.count])
                                         })
        prefetcher.start()
        #expect(await eventually { counts.value != nil })
        #expect(counts.value == [0, 0, 3])
        #expect(urls.allSatisfy { origin.cache.imageCachedType(forKey: $0.cacheKey) != .none })
    }
}
