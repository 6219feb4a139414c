import Dispatch
import Foundation
import Testing
@testable import Halcyon

/// One test per option: each fails if the manager ignores the option.
@Suite("HalcyonManager options")
struct HalcyonOptionsTests {
    // MARK: Caches and loaders

    @Test("targetCache: results go to the given cache, not the manager's")
    func targetCache() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let other = try fixture.makeOtherCache("target")
        let url = fixture.url("/image/target")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.targetCache(other), .waitForCache])
        #expect(other.isCached(forKey: url.cacheKey))
        #expect(!fixture.cache.isCached(forKey: url.cacheKey))
    }

    @Test("originalCache and cacheOriginalImage: the original bytes go to the original cache")
    func originalCacheAndCacheOriginalImage() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let originals = try fixture.makeOtherCache("originals")
        let url = fixture.url("/image/original")
        let processor = CountingProcessor()
        _ = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor), .originalCache(originals), .cacheOriginalImage, .waitForCache])
        #expect(fixture.cache.isCached(forKey: url.cacheKey, processorIdentifier: processor.identifier))
        #expect(originals.diskStorage.isCached(forKey: url.cacheKey))
        #expect(try await originals.diskEntry(forKey: url.cacheKey)?.data == fixture.server.image)
        #expect(!fixture.cache.diskStorage.isCached(forKey: url.cacheKey))
        let other = fixture.url("/image/no-original")
        _ = try await fixture.manager.retrieveImage(with: other, options: [.processor(processor), .waitForCache])
        #expect(!fixture.cache.diskStorage.isCached(forKey: other.cacheKey))
    }

    @Test("downloader: the given downloader makes the request")
    func downloader() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let other = ImageDownloader(name: "other")
        other.httpHeaders = ["X-Downloader": "other"]
        _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/downloader"), options: [.downloader(other)])
        await other.shutdown()
        #expect(fixture.server.headers("/image/downloader").first?["x-downloader"] == "other")
    }

    @Test("downloadPriority: the higher priority waiting request goes first")
    func downloadPriority() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        fixture.downloader.maxConcurrentDownloads = 1
        let blocker = Task { try await fixture.manager.retrieveImage(with: fixture.url("/delayed/block?delay=300")) }
        #expect(await fixture.server.wait { fixture.server.hits("/delayed/block?delay=300") == 1 })
        let low = Task { try await fixture.manager.retrieveImage(with: fixture.url("/image/low"), options: [.downloadPriority(0.1)]) }
        try await Task.sleep(for: .milliseconds(50))
        let high = Task { try await fixture.manager.retrieveImage(with: fixture.url("/image/high"), options: [.downloadPriority(0.9)]) }
        _ = try await (blocker.value, low.value, high.value)
        let order = fixture.server.requestOrder
        #expect(order.firstIndex(of: "/image/high") ?? 99 < order.firstIndex(of: "/image/low") ?? -1, "\(order)")
    }

    @Test("forceRefresh: downloads again although cached")
    func forceRefresh() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/force")
        _ = try await fixture.manager.retrieveImage(with: url)
        let again = try await fixture.manager.retrieveImage(with: url, options: [.forceRefresh])
        #expect(again.cacheType == .none)
        #expect(fixture.server.hits("/image/force") == 2)
    }

    @Test("fromMemoryCacheOrRefresh: a memory miss skips the disk and downloads")
    func fromMemoryCacheOrRefresh() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/memory-or-refresh")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        #expect(try await fixture.manager.retrieveImage(with: url, options: [.fromMemoryCacheOrRefresh]).cacheType == .memory)
        fixture.cache.clearMemoryCache()
        let result = try await fixture.manager.retrieveImage(with: url, options: [.fromMemoryCacheOrRefresh])
        #expect(result.cacheType == .none)
        #expect(fixture.server.hits("/image/memory-or-refresh") == 2)
    }

    @Test("onlyFromCache: a miss fails without touching the network")
    func onlyFromCache() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        do {
            _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/only-cache"), options: [.onlyFromCache])
            Issue.record("loaded from the network")
        } catch {
            guard case .cacheError(.imageNotExisting) = error else { Issue.record("got \(error)"); return }
        }
        #expect(fixture.server.totalHits == 0)
    }

    @Test("requestModifier: changes the request; nil fails with emptyRequest")
    func requestModifier() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let modifier = AnyModifier { request in
            var request = request
            request.setValue("yes", forHTTPHeaderField: "X-Modified")
            return request
        }
        _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/modified"), options: [.requestModifier(modifier)])
        #expect(fixture.server.headers("/image/modified").first?["x-modified"] == "yes")
        do {
            _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/emptied"), options: [.requestModifier(AnyModifier { _ in nil })])
            Issue.record("an emptied request loaded")
        } catch {
            guard case .requestError(.emptyRequest) = error else { Issue.record("got \(error)"); return }
        }
    }

    @Test("redirectHandler: a blocking handler stops the redirect")
    func redirectHandler() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/redirect/2")
        let handler = AnyRedirectHandler { _, _, _ in nil }
        await #expect(throws: HalcyonError.self) { try await fixture.manager.retrieveImage(with: url, options: [.redirectHandler(handler)]) }
        #expect(fixture.server.hits("/redirect/1") == 0)
        _ = try await fixture.manager.retrieveImage(with: url)
        #expect(fixture.server.hits("/redirect/0") == 1)
    }

    @Test("alternativeSources: tried in order after a failure; all failing reports every error")
    func alternativeSources() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let good = fixture.url("/image/alternative")
        let result = try await fixture.manager.retrieveImage(
            with: fixture.url("/status/500"),
            options: [.alternativeSources([.network(fixture.url("/status/404")), .network(good)])])
        #expect(result.source.url == good)
        #expect(result.originalSource.url == fixture.url("/status/500"))
        do {
            _ = try await fixture.manager.retrieveImage(with: fixture.url("/status/503"),
                                                        options: [.alternativeSources([.network(fixture.url("/status/410"))])])
            Issue.record("no source should load")
        } catch {
            guard case .imageSettingError(.alternativeSourcesExhausted(let errors)) = error else { Issue.record("got \(error)"); return }
            #expect(errors.count == 2)
        }
    }

    @Test("alternativeSources: none is tried after the caller cancels")
    func alternativesSkippedAfterCancel() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let task = Task {
            try await fixture.manager.retrieveImage(with: fixture.url("/hang/primary"),
                                                    options: [.alternativeSources([.network(fixture.url("/image/after-cancel"))])])
        }
        #expect(await fixture.server.wait { fixture.server.hits("/hang/primary") == 1 })
        task.cancel()
        await expectCancelled(task)
        try await Task.sleep(for: .milliseconds(100))
        #expect(fixture.server.hits("/image/after-cancel") == 0)
    }

    @Test("retryStrategy: response errors are retried until the source answers")
    func retryStrategy() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/flaky/retry?fail=2")
        let result = try await fixture.manager.retrieveImage(
            with: url, options: [.retryStrategy(DelayRetryStrategy(maxRetryCount: 3, retryInterval: .seconds(0.01)))])
        #expect(result.cacheType == .none)
        #expect(fixture.server.hits("/flaky/retry?fail=2") == 3)
        await #expect(throws: HalcyonError.self) { try await fixture.manager.retrieveImage(with: fixture.url("/flaky/no-retry?fail=1")) }
        #expect(fixture.server.hits("/flaky/no-retry?fail=1") == 1)
    }

    // MARK: Decoding and processing

    @Test("scaleFactor: decoded images get the scale")
    func scaleFactor() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let result = try await fixture.manager.retrieveImage(with: fixture.url("/image/scale"), options: [.scaleFactor(2)])
        #expect(result.image.scale == 2)
        #expect(result.image.size == CGSize(width: 32, height: 24))
    }

    @Test("onlyLoadFirstFrame, preloadAllAnimationData and backgroundDecode on an animation")
    func animationOptions() async throws {
        let fixture = try await ManagerFixture.make(image: try TestImages.animation(frames: 4).encoded(as: .gif))
        defer { Task { await fixture.shutdown() } }
        let lazy = try await fixture.manager.retrieveImage(with: fixture.url("/image/anim-lazy"))
        #expect(lazy.image.frameCount == 4)
        #expect(lazy.image.isLazilyDecoded)
        let first = try await fixture.manager.retrieveImage(with: fixture.url("/image/anim-first"), options: [.onlyLoadFirstFrame])
        #expect(first.image.frameCount == 1)
        let preloaded = try await fixture.manager.retrieveImage(with: fixture.url("/image/anim-preload"), options: [.preloadAllAnimationData])
        #expect(!preloaded.image.isLazilyDecoded)
        let background = try await fixture.manager.retrieveImage(with: fixture.url("/image/anim-background"), options: [.backgroundDecode])
        #expect(!background.image.isLazilyDecoded && background.image.frameCount == 4)
    }

    @Test("processor: the result is processed and cached under key@identifier")
    func processor() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/processor")
        let processor = ResizingImageProcessor(referenceSize: CGSize(width: 10, height: 10))
        let result = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor), .waitForCache])
        #expect(result.image.width == 10)
        #expect(fixture.cache.isCached(forKey: url.cacheKey, processorIdentifier: processor.identifier))
        #expect(!fixture.cache.isCached(forKey: url.cacheKey))
    }

    @Test("processingQueue: processing runs on the given queue")
    func processingQueue() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let queue = DispatchQueue(label: "test.processing")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "mine")
        let seen = Locked<String?>(nil)
        let processor = GeneralProcessor(identifier: "test.queue") { item, options throws(HalcyonError) in
            seen.withLock { $0 = DispatchQueue.getSpecific(key: key) }
            return try DefaultImageProcessor.default.process(item: item, options: options)
        }
        _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/queue"), options: [.processor(processor), .processingQueue(.dispatch(queue))])
        #expect(seen.withLock { $0 } == "mine")
    }

    @Test("imageModifier: applied to the result, never cached")
    func imageModifier() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/modifier")
        let modifier = AnyImageModifier { $0.hc.scaled(to: 4) }
        let result = try await fixture.manager.retrieveImage(with: url, options: [.imageModifier(modifier)])
        #expect(result.image.scale == 4)
        #expect(fixture.cache.retrieveImageInMemoryCache(forKey: url.cacheKey)?.scale == 1)
        #expect(try await fixture.manager.retrieveImage(with: url, options: [.imageModifier(modifier)]).image.scale == 4)
    }

    @Test("maxPixelCount: an image over the limit is refused")
    func maxPixelCount() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        do {
            _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/limit"), options: [.maxPixelCount(1000)])
            Issue.record("decoded past the limit")
        } catch {
            guard case .processorError(.tooManyPixels) = error else { Issue.record("got \(error)"); return }
        }
    }

    @Test("maxFrameCount: an animation with more frames is refused")
    func maxFrameCount() async throws {
        let fixture = try await ManagerFixture.make(image: try TestImages.animation(frames: 4).encoded(as: .gif))
        defer { Task { await fixture.shutdown() } }
        do {
            _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/frames"), options: [.maxFrameCount(3)])
            Issue.record("decoded past the frame limit")
        } catch {
            guard case .processorError(.tooManyFrames(4, 3)) = error else { Issue.record("got \(error)"); return }
        }
        #expect(try await fixture.manager.retrieveImage(with: fixture.url("/image/frames"), options: [.maxFrameCount(4)]).image.frameCount == 4)
    }

    // MARK: Caching

    @Test("cacheSerializer: the disk entry is written by the given serializer")
    func cacheSerializer() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/serializer")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.cacheSerializer(FormatIndicatedCacheSerializer.png), .waitForCache])
        let entry = try #require(try await fixture.cache.diskEntry(forKey: url.cacheKey))
        #expect(ImageFormat(sniffing: entry.data) == .png)
    }

    @Test("cacheMemoryOnly: nothing reaches the disk")
    func cacheMemoryOnly() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/memory-only")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.cacheMemoryOnly, .waitForCache])
        #expect(await fixture.cache.imageCachedTypeAsync(forKey: url.cacheKey) == .memory)
        #expect(!fixture.cache.diskStorage.isCached(forKey: url.cacheKey))
    }

    @Test("waitForCache: the disk entry exists when the call returns")
    func waitForCache() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let slowSerializer = SlowSerializer(delay: 0.3)
        let waited = fixture.url("/image/wait")
        _ = try await fixture.manager.retrieveImage(with: waited, options: [.cacheSerializer(slowSerializer), .waitForCache])
        #expect(fixture.cache.diskStorage.isCached(forKey: waited.cacheKey))
        let notWaited = fixture.url("/image/no-wait")
        _ = try await fixture.manager.retrieveImage(with: notWaited, options: [.cacheSerializer(slowSerializer)])
        #expect(!fixture.cache.diskStorage.isCached(forKey: notWaited.cacheKey))
    }

    @Test("loadDiskFileSynchronously: a disk hit is delivered before the call returns")
    func loadDiskFileSynchronously() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/sync-disk")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        fixture.cache.clearMemoryCache()
        let delivered = Locked<CacheType?>(nil)
        fixture.manager.retrieveImage(with: url, options: [.loadDiskFileSynchronously]) { result in
            delivered.withLock { $0 = try? result.get().cacheType }
        }
        #expect(delivered.withLock { $0 } == .disk)
        fixture.cache.clearMemoryCache()
        let asynchronous = Locked<CacheType?>(nil)
        let task = fixture.manager.retrieveImage(with: url) { result in
            asynchronous.withLock { $0 = try? result.get().cacheType }
        }
        #expect(task != nil)
    }

    @Test("diskStoreWriteOptions: syncsWrites fsyncs the entry")
    func diskStoreWriteOptions() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let before = fixture.cache.diskStorage.syncedWriteCount
        _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/plain-write"), options: [.waitForCache])
        #expect(fixture.cache.diskStorage.syncedWriteCount == before)
        _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/synced-write"), options: [.waitForCache, .diskStoreWriteOptions(.syncsWrites)])
        #expect(fixture.cache.diskStorage.syncedWriteCount == before + 1)
    }

    @Test("memoryCacheExpiration and memoryCacheAccessExtendingExpiration")
    func memoryExpiration() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/memory-expiration")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.memoryCacheExpiration(.seconds(10)), .waitForCache])
        fixture.clock.advance(by: 8)
        #expect(try await fixture.manager.retrieveImage(with: url, options: [.memoryCacheAccessExtendingExpiration(.none)]).cacheType == .memory)
        fixture.clock.advance(by: 4)
        #expect(try await fixture.manager.retrieveImage(with: url, options: [.memoryCacheAccessExtendingExpiration(.none)]).cacheType == .disk)

        let extended = fixture.url("/image/memory-extended")
        _ = try await fixture.manager.retrieveImage(with: extended, options: [.memoryCacheExpiration(.seconds(10)), .waitForCache])
        fixture.clock.advance(by: 8)
        #expect(try await fixture.manager.retrieveImage(with: extended, options: [.memoryCacheAccessExtendingExpiration(.cacheTime)]).cacheType == .memory)
        fixture.clock.advance(by: 8)
        #expect(try await fixture.manager.retrieveImage(with: extended, options: [.memoryCacheAccessExtendingExpiration(.none)]).cacheType == .memory)
    }

    @Test("diskCacheExpiration and diskCacheAccessExtendingExpiration")
    func diskExpiration() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/disk-expiration")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.diskCacheExpiration(.seconds(10)), .cacheMemoryOnly, .waitForCache])
        _ = try await fixture.manager.retrieveImage(with: url, options: [.forceRefresh, .diskCacheExpiration(.seconds(10)), .waitForCache])
        fixture.cache.clearMemoryCache()
        fixture.clock.advance(by: 8)
        #expect(try await fixture.manager.retrieveImage(with: url, options: [.diskCacheAccessExtendingExpiration(.cacheTime)]).cacheType == .disk)
        fixture.cache.clearMemoryCache()
        fixture.clock.advance(by: 8)
        #expect(try await fixture.manager.retrieveImage(with: url, options: [.diskCacheAccessExtendingExpiration(.none)]).cacheType == .disk)
        fixture.cache.clearMemoryCache()
        fixture.clock.advance(by: 11)
        #expect(await fixture.cache.imageCachedTypeAsync(forKey: url.cacheKey) == .none)
    }

    @Test("forcedCacheFileExtension: the cache file carries the extension")
    func forcedCacheFileExtension() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/extension")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.forcedCacheFileExtension("jpg"), .waitForCache])
        let file = fixture.cache.diskStorage.cacheFileURL(forKey: url.cacheKey, forcedExtension: "jpg")
        #expect(file.pathExtension == "jpg")
        #expect(FileManager.default.fileExists(atPath: file.path))
        fixture.cache.clearMemoryCache()
        #expect(try await fixture.manager.retrieveImage(with: url, options: [.forcedCacheFileExtension("jpg")]).cacheType == .disk)
    }

    @Test("callbackQueue: the completion handler runs on the given queue")
    func callbackQueue() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let queue = DispatchQueue(label: "test.callback")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "callback")
        let seen = Locked<String?>(nil)
        _ = await awaitResult { done in
            fixture.manager.retrieveImage(with: fixture.url("/image/callback"), options: [.callbackQueue(.dispatch(queue))]) { result in
                seen.withLock { $0 = DispatchQueue.getSpecific(key: key) }
                done(result)
            }
        }
        #expect(seen.withLock { $0 } == "callback")
    }

    // MARK: Halcyon's own

    @Test("cacheKeyFilter: the key comes from the filter")
    func cacheKeyFilter() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let filter: @Sendable (URL) -> String = { $0.path }
        _ = try await fixture.manager.retrieveImage(with: fixture.url("/image/filtered?token=1"), options: [.cacheKeyFilter(filter), .waitForCache])
        let second = try await fixture.manager.retrieveImage(with: fixture.url("/image/filtered?token=2"), options: [.cacheKeyFilter(filter)])
        #expect(second.cacheType == .memory)
        #expect(fixture.cache.isCached(forKey: "/image/filtered"))
    }

    @Test("lowDataMode: the low-data source is used while the manager says so")
    func lowDataMode() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let small = fixture.url("/image/low-data")
        let normal = try await fixture.manager.retrieveImage(with: fixture.url("/image/full"), options: [.lowDataMode(.network(small))])
        #expect(normal.source.url == fixture.url("/image/full"))
        fixture.manager.isLowDataMode = true
        let reduced = try await fixture.manager.retrieveImage(with: fixture.url("/image/full2"), options: [.lowDataMode(.network(small))])
        #expect(reduced.source.url == small)
        #expect(fixture.server.hits("/image/full2") == 0)
    }

    @Test("progressiveJPEG is accepted and the final image delivered")
    func progressiveJPEG() async throws {
        let fixture = try await ManagerFixture.make(image: try TestImages.encodedGradient(.jpeg(quality: 80, progressive: true), width: 64, height: 48))
        defer { Task { await fixture.shutdown() } }
        let result = try await fixture.manager.retrieveImage(with: fixture.url("/image/progressive"), options: [.progressiveJPEG(.default)])
        #expect(result.image.width == 64 && result.image.height == 48)
    }
}

/// A serializer that takes its time, to tell waiting for the cache from not waiting.
struct SlowSerializer: CacheSerializer {
    let delay: TimeInterval

    func data(with image: Image, original: Data?) throws(HalcyonError) -> Data {
        Thread.sleep(forTimeInterval: delay)
        return try DefaultCacheSerializer.default.data(with: image, original: original)
    }
}
