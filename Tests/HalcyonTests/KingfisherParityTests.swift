import Dispatch
import Foundation
import Testing
@testable import Halcyon

/// Behaviours Kingfisher users rely on, each checked against a real loopback server or disk cache.
@Suite struct KingfisherParityTests {
    /// A URL no downloader can fetch until a request modifier rewrites it.
    static let placeholder = URL(string: "placeholder://images/1")!

    /// A synchronous and an asynchronous modifier that send every request to `url`.
    static func redirecting(to url: URL) -> [any AsyncImageDownloadRequestModifier] {
        let rewrite: @Sendable (ImageDownloadRequest) -> ImageDownloadRequest = { request in
            var modified = request
            modified.url = url
            return modified
        }
        return [AnyModifier { rewrite($0) }, AnyAsyncModifier { rewrite($0) }]
    }

    /// The error a download fails with, or nil when it succeeds.
    static func downloadError(_ downloader: ImageDownloader, _ url: URL, options: DownloadOptions = .default) async -> HalcyonError? {
        do {
            _ = try await downloader.downloadImage(with: url, options: options)
            return nil
        } catch {
            return error
        }
    }

    /// The error a retrieval fails with, or nil when it succeeds.
    static func retrieveError(_ manager: HalcyonManager, _ url: URL, options: HalcyonOptionsInfo) async -> HalcyonError? {
        do {
            _ = try await manager.retrieveImage(with: url, options: options)
            return nil
        } catch {
            return error
        }
    }

    static func isEmptyRequest(_ error: HalcyonError?) -> Bool {
        if case .requestError(reason: .emptyRequest)? = error { return true }
        return false
    }

    // MARK: - Request modifier before the URL check

    @Test func modifierRunsBeforeURLCheck() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = fixture.url("/image/parity-modified")
        let modifiers = Self.redirecting(to: target)

        let box = ResultBox()
        let task = fixture.downloader.downloadImage(with: Self.placeholder, options: DownloadOptions(requestModifier: modifiers[0])) {
            box.set($0)
        }
        #expect(task != nil, "a synchronous modifier that makes the URL fetchable registers the download")
        let first = await box.value()
        #expect((try? first.get())?.image.width == 64)

        for modifier in modifiers {
            let loaded = try await fixture.downloader.downloadImage(with: Self.placeholder, options: DownloadOptions(requestModifier: modifier))
            #expect(loaded.image.width == 64)
            let retrieved = try await fixture.manager.retrieveImage(
                with: Self.placeholder, options: [.requestModifier(modifier), .forceRefresh, .cacheMemoryOnly])
            #expect(retrieved.image.width == 64)
        }
        #expect(fixture.server.hits("/image/parity-modified") == 5)
    }

    @Test func modifierNilIsEmptyRequest() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let refusing: [any AsyncImageDownloadRequestModifier] = [AnyModifier { _ in nil }, AnyAsyncModifier { _ in nil }]

        let box = ResultBox()
        let task = fixture.downloader.downloadImage(with: Self.placeholder, options: DownloadOptions(requestModifier: refusing[0])) {
            box.set($0)
        }
        #expect(task != nil, "the task is returned; the failure comes through the handler")
        let immediate: HalcyonError?
        if case .failure(let failure) = await box.value() { immediate = failure } else { immediate = nil }
        #expect(Self.isEmptyRequest(immediate), "\(String(describing: immediate))")

        for modifier in refusing {
            let downloaded = await Self.downloadError(fixture.downloader, Self.placeholder, options: DownloadOptions(requestModifier: modifier))
            #expect(Self.isEmptyRequest(downloaded), "\(String(describing: downloaded))")
            let retrieved = await Self.retrieveError(fixture.manager, Self.placeholder, options: [.requestModifier(modifier)])
            #expect(Self.isEmptyRequest(retrieved), "\(String(describing: retrieved))")
        }
        #expect(fixture.server.totalHits == 0)
    }

    // MARK: - Delegate's did-finish event

    @Test func delegateFinishCarriesDataError() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let delegate = DataRejectingDelegate()
        fixture.downloader.delegate = delegate
        let error = await Self.downloadError(fixture.downloader, fixture.url("/image/parity-rejected"))
        guard case .responseError(reason: .rejected)? = error else {
            Issue.record("expected the hook's rejection, got \(String(describing: error))")
            return
        }
        try await Task.sleep(for: .milliseconds(50))
        let finishes = withExtendedLifetime(delegate) { delegate.finishes }
        #expect(finishes.count == 1, "one did-finish event per download")
        let reported = finishes.first ?? nil
        guard case .responseError(reason: .rejected)? = reported else {
            Issue.record("did-finish reported \(String(describing: reported)), not the hook's rejection")
            return
        }
    }

    // MARK: - Prefetcher stop

    @Test func prefetcherStopReportsUnstarted() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let sources = (0..<6).map { Source.network(fixture.url("/hang/parity-stop\($0)")) }
        let done = Locked<(skipped: [Source], failed: [Source], completed: [Source])?>(nil)
        let prefetcher = ImagePrefetcher(sources: sources, manager: fixture.manager, completionHandler: { skipped, failed, completed in
            done.withLock { $0 = (skipped: skipped, failed: failed, completed: completed) }
        })
        prefetcher.maxConcurrentDownloads = 2
        prefetcher.start()
        #expect(await fixture.server.wait { fixture.server.totalHits == 2 })
        prefetcher.stop()
        #expect(await fixture.server.wait { done.withLock { $0 } != nil })
        let lists = try #require(done.withLock { $0 })
        #expect(lists.skipped.isEmpty && lists.completed.isEmpty)
        #expect(lists.failed.count == 6, "in-flight and never-started sources are all failed")
        #expect(Set(lists.failed.compactMap(\.url)) == Set(sources.compactMap(\.url)))
        #expect(fixture.server.totalHits == 2)
    }

    // MARK: - Progress on the callback queue

    @Test func progressOnMainQueue() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        // The fixture's defaults say `.untouch`; this test needs Halcyon's own default (the main queue).
        fixture.manager.defaultOptions = []
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        defer { DispatchQueue.main.setSpecific(key: key, value: nil) }
        let custom = DispatchQueue(label: "parity.progress")
        custom.setSpecific(key: key, value: "custom")

        // Kingfisher calls progress on the main queue whatever the callback queue.
        let cases: [(options: HalcyonOptionsInfo, queue: String)] = [([], "main"), ([.callbackQueue(.dispatch(custom))], "main")]
        for (index, entry) in cases.enumerated() {
            let seen = Locked<[String]>([])
            let result = try await fixture.manager.retrieveImage(
                with: fixture.url("/slow/parity-progress\(index)?delay=5&chunks=3"), options: entry.options + [.cacheMemoryOnly],
                progressBlock: { _, _ in seen.withLock { $0.append(DispatchQueue.getSpecific(key: key) ?? "other") } })
            #expect(result.image.width == 64)
            // The main queue is drained while the test awaits (swift-testing runs tests off the main actor).
            #expect(await fixture.server.wait(timeout: 10) { !seen.withLock { $0 }.isEmpty })
            try await Task.sleep(for: .milliseconds(50))
            let queues = seen.withLock { $0 }
            #expect(!queues.isEmpty && queues.allSatisfy { $0 == entry.queue }, "progress ran on \(queues), expected \(entry.queue)")
        }
    }

    // MARK: - Disk cache

    @Test func diskRetrieveSynchronous() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try ImageCache(name: "parity-sync", cacheDirectoryURL: directory.url)
        try await cache.store(try makeTestImage(), forKey: "parity-sync-key")
        cache.clearMemoryCache()
        let key = DispatchSpecificKey<Bool>()
        let caller = DispatchQueue(label: "parity.caller")
        caller.setSpecific(key: key, value: true)
        let options = HalcyonParsedOptionsInfo([.loadDiskFileSynchronously])
        let seen = caller.sync { () -> (ran: Bool, onCaller: Bool, found: Bool) in
            let record = Locked<(ran: Bool, onCaller: Bool, found: Bool)>((ran: false, onCaller: false, found: false))
            cache.retrieveImageInDiskCache(forKey: "parity-sync-key", options: options) { result in
                let found = (try? result.get()) != nil
                let onCaller = DispatchQueue.getSpecific(key: key) == true
                record.withLock { $0 = (ran: true, onCaller: onCaller, found: found) }
            }
            return record.withLock { $0 }
        }
        #expect(seen.ran, "the completion ran before retrieveImageInDiskCache returned")
        #expect(seen.onCaller)
        #expect(seen.found)
    }

    @Test func autoExtOnProcessedKey() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let disk = try DiskStorage.Backend(config: DiskStorage.Config(
            name: "parity-ext", autoExtAfterHashedFileName: true, directory: directory.url))
        let cache = ImageCache(memoryStorage: MemoryStorage.Backend<Image>(config: MemoryStorage.Config()), diskStorage: disk)
        let processor = BlackWhiteProcessor()
        let key = "https://example.com/images/photo.png"
        try await cache.store(try makeTestImage(), forKey: key, processorIdentifier: processor.identifier)

        let path = cache.cachePath(forKey: key, processorIdentifier: processor.identifier)
        let expected = DiskStorage.Backend.sha256Hex(ImageCache.computedKey(key, processorIdentifier: processor.identifier)) + ".png"
        #expect(URL(fileURLWithPath: path).lastPathComponent == expected)
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(cache.cachePath(forKey: key).hasSuffix(".png"), "plain keys keep their extension")
        cache.clearMemoryCache()
        #expect(await cache.imageCachedTypeAsync(forKey: key, processorIdentifier: processor.identifier) == .disk)
        let found = try await cache.retrieveImageInDiskCache(forKey: key, options: HalcyonParsedOptionsInfo([.processor(processor)]))
        #expect(found != nil)

        let bare = cache.cachePath(forKey: "https://example.com/images/photo", processorIdentifier: processor.identifier)
        #expect(URL(fileURLWithPath: bare).lastPathComponent.count == 64, "no extension from the processor's identifier")
    }
}

/// Rejects every downloaded body and records each did-finish event's error; one lock.
private final class DataRejectingDelegate: ImageDownloaderDelegate {
    private let recorded = Locked<[HalcyonError?]>([])

    var finishes: [HalcyonError?] { recorded.withLock { $0 } }

    func imageDownloader(
        _ downloader: ImageDownloader, didFinishDownloadingImageForURL url: URL,
        with response: ImageDownloadResponse?, error: HalcyonError?
    ) {
        recorded.withLock { $0.append(error) }
    }

    func imageDownloader(_ downloader: ImageDownloader, didDownload data: Data, for url: URL) -> Data? {
        nil
    }
}
