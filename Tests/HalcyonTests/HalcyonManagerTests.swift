import Dispatch
import Foundation
import Testing
@testable import Halcyon

@Suite("HalcyonManager retrieve flow")
struct HalcyonManagerFlowTests {
    @Test("network, then memory, then disk, then the original processed from disk")
    func flow() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/flow")
        let first = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        #expect(first.cacheType == .none)
        #expect(first.data() == fixture.server.image && first.originalData == fixture.server.image)
        #expect(first.image.width == 64)
        let second = try await fixture.manager.retrieveImage(with: url)
        #expect(second.cacheType == .memory)
        fixture.cache.clearMemoryCache()
        let third = try await fixture.manager.retrieveImage(with: url)
        #expect(third.cacheType == .disk)
        #expect(fixture.server.hits("/image/flow") == 1)

        let processor = CountingProcessor()
        let processed = try await fixture.manager.retrieveImage(with: url, options: [.processor(processor), .waitForCache])
        #expect(processed.cacheType == .disk, "the original on disk is processed, not downloaded again")
        #expect(processed.image.width == 16)
        #expect(processor.runCount == 1)
        #expect(fixture.server.hits("/image/flow") == 1)
        #expect(fixture.cache.isCached(forKey: url.cacheKey, processorIdentifier: processor.identifier))
    }

    @Test("a provider source is loaded, processed and cached like a download")
    func providerSource() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let provider = RawImageDataProvider(data: try TestImages.encodedGradient(.png(), width: 30, height: 20), cacheKey: "raw-1")
        let first = try await fixture.manager.retrieveImage(with: .provider(provider), options: [.waitForCache])
        #expect(first.cacheType == .none && first.image.width == 30)
        let second = try await fixture.manager.retrieveImage(with: .provider(provider))
        #expect(second.cacheType == .memory)
        await #expect(throws: HalcyonError.self) {
            try await fixture.manager.retrieveImage(with: .provider(Base64ImageDataProvider(base64String: "!!", cacheKey: "bad")))
        }
    }

    @Test("concurrent callers share one download and one processing run")
    func coalescing() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/delayed/shared?delay=150")
        let processor = CountingProcessor(identifier: "test.shared", delay: 0.05)
        let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<20 {
                group.addTask { try await fixture.manager.retrieveImage(with: url, options: [.processor(processor)]).image.width }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(sizes == [Int](repeating: 16, count: 20))
        #expect(fixture.server.hits("/delayed/shared?delay=150") == 1)
        #expect(processor.runCount == 1)
    }

    @Test("a caller arriving after the download, while the image is processed, joins that load instead of downloading again")
    func lateCallerJoinsTheLoad() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = "/image/late-joiner"
        let processor = CountingProcessor(identifier: "test.late", delay: 0.4)
        let first = Task { try await fixture.manager.retrieveImage(with: fixture.url(target), options: [.processor(processor)]) }
        // The download is over and processing has begun (it takes 400 ms): nothing is in the memory cache yet.
        #expect(await fixture.server.wait(timeout: 5) { processor.runCount == 1 })
        #expect(await fixture.server.wait(timeout: 1) { fixture.downloader.activeRequestCount == 0 })
        let second = try await fixture.manager.retrieveImage(with: fixture.url(target), options: [.processor(processor)])
        let firstResult = try await first.value
        #expect(fixture.server.hits(target) == 1)
        #expect(processor.runCount == 1)
        #expect(second.image.width == 16 && firstResult.image.width == 16)
        #expect(second.cacheType == .none, "the joiner shares the network load's result")
        #expect(fixture.manager.loadsInFlightCount == 0)
    }

    @Test("cancelling the caller's task throws taskCancelled")
    func cancellation() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let task = Task { try await fixture.manager.retrieveImage(with: fixture.url("/hang/cancel")) }
        #expect(await fixture.server.wait { fixture.server.hits("/hang/cancel") == 1 })
        task.cancel()
        await expectCancelled(task)
    }

    @Test("completion-handler API calls back once; a memory hit is delivered before it returns")
    func completionAPI() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/completion")
        let first = await awaitResult { done in
            fixture.manager.retrieveImage(with: url, completionHandler: done)
        }
        #expect(try first.get().cacheType == .none)
        let delivered = Locked(false)
        let task = fixture.manager.retrieveImage(with: url) { result in
            if case .success(let value) = result, value.cacheType == .memory { delivered.withLock { $0 = true } }
        }
        #expect(task == nil)
        #expect(delivered.withLock { $0 })
    }

    @Test("empty data blocks the URL until retryFailed; a timeout does not")
    func failedURLBlocklist() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let missing = fixture.url("/empty/blocked")
        await #expect(throws: HalcyonError.self) { try await fixture.manager.retrieveImage(with: missing) }
        #expect(fixture.manager.failedURLs.contains(missing))
        do {
            _ = try await fixture.manager.retrieveImage(with: missing)
        } catch {
            guard case .requestError(.blockedURL) = error else { Issue.record("got \(error)"); return }
        }
        #expect(fixture.server.hits("/empty/blocked") == 1)
        await #expect(throws: HalcyonError.self) { try await fixture.manager.retrieveImage(with: missing, options: [.retryFailed]) }
        #expect(fixture.server.hits("/empty/blocked") == 2)

        fixture.downloader.downloadTimeout = 0.3
        let slow = fixture.url("/hang/timeout")
        await #expect(throws: HalcyonError.self) { try await fixture.manager.retrieveImage(with: slow) }
        #expect(!fixture.manager.failedURLs.contains(slow))
        let refused = try #require(URL(string: "http://127.0.0.1:1/nothing"))
        await #expect(throws: HalcyonError.self) { try await fixture.manager.retrieveImage(with: refused) }
        #expect(!fixture.manager.failedURLs.contains(refused))
    }

    @Test("undecodable data is a permanent failure")
    func undecodableBlocks() async throws {
        let fixture = try await ManagerFixture.make(image: Data("<html>not an image</html>".utf8))
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/html")
        do {
            _ = try await fixture.manager.retrieveImage(with: url)
            Issue.record("decoded HTML")
        } catch {
            guard case .processorError(.unsupportedFormat) = error else { Issue.record("got \(error)"); return }
        }
        #expect(fixture.manager.failedURLs.contains(url))
    }
}

@Suite("HalcyonManager HTTP revalidation")
struct HalcyonManagerRevalidationTests {
    @Test("refreshCached revalidates: a 304 keeps and re-dates the entry and never decodes the empty body")
    func notModified() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/etag/one?v=abc")
        let first = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        #expect(first.cacheType == .none)
        let entry = try #require(try await fixture.cache.diskEntry(forKey: url.cacheKey))
        #expect(entry.metadata.etag == "\"abc\"")
        fixture.clock.advance(by: 60)
        let second = try await fixture.manager.retrieveImage(with: url, options: [.refreshCached])
        #expect(second.cacheType == .disk)
        #expect(second.image.width == 64)
        let requests = fixture.server.headers("/etag/one?v=abc")
        #expect(requests.count == 2)
        #expect(requests.last?["if-none-match"] == "\"abc\"")
        let redated = try #require(try await fixture.cache.diskEntry(forKey: url.cacheKey))
        #expect(redated.expirationDate > entry.expirationDate)
    }

    @Test("an expired entry with validators is revalidated instead of downloaded again")
    func expiredEntry() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/etag/two?v=xyz")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache, .diskCacheExpiration(.seconds(10))])
        fixture.cache.clearMemoryCache()
        fixture.clock.advance(by: 20)
        let result = try await fixture.manager.retrieveImage(with: url)
        #expect(result.cacheType == .disk)
        #expect(fixture.server.headers("/etag/two?v=xyz").last?["if-none-match"] == "\"xyz\"")
    }

    @Test("a changed ETag answers 200 and the new body replaces the entry")
    func modified() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let first = fixture.url("/etag/three?v=old")
        _ = try await fixture.manager.retrieveImage(with: first, options: [.waitForCache, .cacheKeyFilter { _ in "three" }])
        let second = fixture.url("/etag/three?v=new")
        let result = try await fixture.manager.retrieveImage(with: second, options: [.refreshCached, .waitForCache, .cacheKeyFilter { _ in "three" }])
        #expect(result.cacheType == .none)
        #expect(try await fixture.cache.diskEntry(forKey: "three")?.metadata.etag == "\"new\"")
    }
}
