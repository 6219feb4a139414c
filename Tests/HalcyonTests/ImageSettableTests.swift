import Foundation
import Testing
@testable import Halcyon

/// An indicator that counts its calls.
final class CountingIndicator: Indicator {
    private let counts = Locked((starts: 0, stops: 0, progress: 0))
    var starts: Int { counts.withLock { $0.starts } }
    var stops: Int { counts.withLock { $0.stops } }
    var progressCalls: Int { counts.withLock { $0.progress } }
    func startAnimating() { counts.withLock { $0.starts += 1 } }
    func stopAnimating() { counts.withLock { $0.stops += 1 } }
    func setProgress(received: Int64, expected: Int64) { counts.withLock { $0.progress += 1 } }
}

@Suite("ImageSettable .hc.setImage")
struct ImageSettableTests {
    @Test("loads and sets the image; the indicator starts and stops once")
    func setsImage() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = RecordingTarget()
        let indicator = CountingIndicator()
        target.hc.indicator = indicator
        let result = await awaitResult { done in
            target.hc.setImage(with: fixture.url("/image/set"), manager: fixture.manager, completionHandler: done)
        }
        #expect(try result.get().cacheType == .none)
        #expect(target.image?.width == 64)
        #expect(indicator.starts == 1 && indicator.stops == 1)
        #expect(target.hc.taskIdentifier == nil)
    }

    @Test("a nil source shows the placeholder and fails with emptySource")
    func emptySource() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = RecordingTarget()
        let placeholder = try TestImages.solid(RGBA8(red: 9, green: 9, blue: 9))
        let result = await awaitResult { done in
            target.hc.setImage(with: nil as Source?, placeholder: placeholder, manager: fixture.manager, completionHandler: done)
        }
        guard case .failure(.imageSettingError(.emptySource)) = result else { Issue.record("got \(result)"); return }
        #expect(target.image === placeholder)
    }

    @Test("only the latest call sets the image; the older one reports notCurrentSourceTask")
    func onlyLatestWins() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = RecordingTarget()
        let olderResult = Locked<Result<RetrieveImageResult, HalcyonError>?>(nil)
        let firstIdentifierHolder = Locked<UInt?>(nil)
        target.hc.setImage(with: fixture.url("/delayed/older?delay=300"), manager: fixture.manager, completionHandler: { result in
            olderResult.withLock { $0 = result }
        })
        firstIdentifierHolder.withLock { $0 = target.hc.taskIdentifier }
        let newer = await awaitResult { done in
            target.hc.setImage(with: fixture.url("/image/newer"), options: [.processor(ResizingImageProcessor(referenceSize: CGSize(width: 8, height: 8)))],
                               manager: fixture.manager, completionHandler: done)
        }
        #expect(try newer.get().image.width == 8)
        #expect(firstIdentifierHolder.withLock { $0 } != nil)
        #expect(await fixture.server.wait { olderResult.withLock { $0 } != nil })
        guard case .failure(.imageSettingError(.notCurrentSourceTask(let stale, let staleError, let staleSource))) = olderResult.withLock({ $0 }) else {
            Issue.record("older call got \(String(describing: olderResult.withLock { $0 }))")
            return
        }
        #expect(stale?.image.width == 64 && staleError == nil, "the older call's own result is carried")
        #expect(staleSource.url?.path == "/delayed/older")
        #expect(target.image?.width == 8)
    }

    @Test("keepCurrentImageWhileLoading keeps the image; without it the placeholder shows")
    func keepCurrentImage() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let current = try TestImages.solid(RGBA8(red: 1, green: 1, blue: 1))
        let placeholder = try TestImages.solid(RGBA8(red: 2, green: 2, blue: 2))
        // The results are kept so that a failure says how each load ended, not only that an image is missing.
        let results = Locked<[String: Result<RetrieveImageResult, HalcyonError>]>([:])
        let kept = RecordingTarget()
        kept.setImage(current, transition: .none)
        kept.hc.setImage(with: fixture.url("/delayed/keep?delay=200"), placeholder: placeholder,
                         options: [.keepCurrentImageWhileLoading], manager: fixture.manager,
                         completionHandler: { result in results.withLock { $0["kept"] = result } })
        #expect(kept.image === current)
        let replaced = RecordingTarget()
        replaced.setImage(current, transition: .none)
        replaced.hc.setImage(with: fixture.url("/delayed/replace?delay=200"), placeholder: placeholder, manager: fixture.manager,
                             completionHandler: { result in results.withLock { $0["replaced"] = result } })
        #expect(replaced.image === placeholder)
        #expect(await fixture.server.wait { kept.image?.width == 64 && replaced.image?.width == 64 },
                "\(results.withLock { $0 }); sets: kept \(kept.setCount), replaced \(replaced.setCount)")
    }

    @Test("onFailureImage is shown when loading fails")
    func onFailureImage() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let failure = try TestImages.solid(RGBA8(red: 255, green: 0, blue: 0))
        let target = RecordingTarget()
        let result = await awaitResult { done in
            target.hc.setImage(with: fixture.url("/status/404"), options: [.onFailureImage(failure)], manager: fixture.manager, completionHandler: done)
        }
        guard case .failure = result else { Issue.record("loaded a 404"); return }
        #expect(target.image === failure)
        let plain = RecordingTarget()
        _ = await awaitResult { done in
            plain.hc.setImage(with: fixture.url("/status/500"), manager: fixture.manager, completionHandler: done)
        }
        #expect(plain.image == nil)
    }

    @Test("transition for network loads only, unless forceTransition")
    func transitions() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/transition")
        let target = RecordingTarget()
        _ = await awaitResult { done in
            target.hc.setImage(with: url, options: [.transition(.fade(0.25))], manager: fixture.manager, completionHandler: done)
        }
        #expect(target.transitions.last == .fade(0.25))
        _ = await awaitResult { done in
            target.hc.setImage(with: url, options: [.transition(.fade(0.25))], manager: fixture.manager, completionHandler: done)
        }
        #expect(target.transitions.last == ImageTransition.none)
        _ = await awaitResult { done in
            target.hc.setImage(with: url, options: [.transition(.fade(0.25)), .forceTransition], manager: fixture.manager, completionHandler: done)
        }
        #expect(target.transitions.last == .fade(0.25))
    }

    @Test("cancelDownloadTask cancels the load and reports taskCancelled")
    func cancel() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let target = RecordingTarget()
        let outcome = Locked<Result<RetrieveImageResult, HalcyonError>?>(nil)
        target.hc.setImage(with: fixture.url("/hang/cancel-target"), manager: fixture.manager, completionHandler: { result in
            outcome.withLock { $0 = result }
        })
        #expect(await fixture.server.wait { fixture.server.hits("/hang/cancel-target") == 1 })
        target.hc.cancelDownloadTask()
        #expect(await fixture.server.wait { outcome.withLock { $0 } != nil })
        guard case .failure(let error) = outcome.withLock({ $0 }), error.isTaskCancelled else {
            Issue.record("got \(String(describing: outcome.withLock { $0 }))")
            return
        }
    }

    @Test("task identifiers are unique across threads")
    func identifiersAreUnique() async {
        let identifiers = await withTaskGroup(of: UInt.self) { group in
            for _ in 0..<200 { group.addTask { ImageSettableState().issueIdentifier() } }
            return await group.reduce(into: Set<UInt>()) { $0.insert($1) }
        }
        #expect(identifiers.count == 200)
    }
}

@Suite("ImagePrefetcher")
struct ImagePrefetcherTests {
    @Test("completes, skips cached and fails bad items; progress per item; completion once")
    func prefetches() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let cachedURL = fixture.url("/image/pre-cached")
        _ = try await fixture.manager.retrieveImage(with: cachedURL)
        let urls = [cachedURL, fixture.url("/image/pre-1"), fixture.url("/image/pre-2"), fixture.url("/status/404")]
        let progressCalls = Locked(0)
        let completion = Locked<(Int, Int, Int)?>(nil)
        let completions = Locked(0)
        let prefetcher = ImagePrefetcher(urls: urls, manager: fixture.manager, progressBlock: { _, _, _ in
            progressCalls.withLock { $0 += 1 }
        }, completionHandler: { skipped, failed, completed in
            completion.withLock { $0 = (skipped.count, failed.count, completed.count) }
            completions.withLock { $0 += 1 }
        })
        let counts = await prefetcher.prefetch()
        #expect(counts.skipped == 1 && counts.failed == 1 && counts.completed == 2)
        #expect(progressCalls.withLock { $0 } == 4)
        #expect(completions.withLock { $0 } == 1)
        #expect(completion.withLock { $0 }.map { [$0.0, $0.1, $0.2] } == [1, 1, 2])
        #expect(fixture.server.hits("/image/pre-cached") == 1)
    }

    @Test("respects maxConcurrentDownloads")
    func concurrencyLimit() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        fixture.downloader.maxConcurrentDownloads = 10
        let sources = (0..<8).map { Source.network(fixture.url("/delayed/c\($0)?delay=80")) }
        let prefetcher = ImagePrefetcher(sources: sources, manager: fixture.manager)
        prefetcher.maxConcurrentDownloads = 2
        let counts = await prefetcher.prefetch()
        #expect(counts.completed == 8)
        #expect(fixture.server.maxInFlight <= 2)
    }

    @Test("after stop() nothing new starts, even with nothing in flight")
    func stopBeforeStart() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let completed = Locked(false)
        let prefetcher = ImagePrefetcher(urls: [fixture.url("/image/never")], manager: fixture.manager,
                                         completionHandler: { _, _, _ in completed.withLock { $0 = true } })
        prefetcher.stop()
        prefetcher.start()
        try await Task.sleep(for: .milliseconds(200))
        #expect(fixture.server.totalHits == 0)
        #expect(completed.withLock { $0 })
    }

    @Test("stop() cancels in-flight items and starts no more")
    func stopWhileRunning() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let sources = (0..<6).map { Source.network(fixture.url("/hang/stop\($0)")) }
        let done = Locked<(Int, Int, Int)?>(nil)
        let prefetcher = ImagePrefetcher(sources: sources, manager: fixture.manager, completionHandler: { skipped, failed, completed in
            done.withLock { $0 = (skipped.count, failed.count, completed.count) }
        })
        prefetcher.maxConcurrentDownloads = 2
        prefetcher.start()
        #expect(await fixture.server.wait { fixture.server.totalHits == 2 })
        prefetcher.stop()
        #expect(await fixture.server.wait { done.withLock { $0 } != nil })
        try await Task.sleep(for: .milliseconds(100))
        #expect(fixture.server.totalHits == 2)
        #expect(done.withLock { $0 }.map { $0.2 } == 0)
    }

    @Test("alsoPrefetchToMemory reads disk hits into memory")
    func alsoPrefetchToMemory() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = fixture.url("/image/to-memory")
        _ = try await fixture.manager.retrieveImage(with: url, options: [.waitForCache])
        fixture.cache.clearMemoryCache()
        _ = await ImagePrefetcher(urls: [url], manager: fixture.manager).prefetch()
        #expect(await fixture.cache.imageCachedTypeAsync(forKey: url.cacheKey) == .disk)
        _ = await ImagePrefetcher(urls: [url], options: [.alsoPrefetchToMemory], manager: fixture.manager).prefetch()
        #expect(await fixture.cache.imageCachedTypeAsync(forKey: url.cacheKey) == .memory)
    }

    @Test("the retry strategy applies to prefetching")
    func retries() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let counts = await ImagePrefetcher(urls: [fixture.url("/flaky/prefetch?fail=1")],
                                           options: [.retryStrategy(DelayRetryStrategy(maxRetryCount: 2, retryInterval: .seconds(0.01)))],
                                           manager: fixture.manager).prefetch()
        #expect(counts.completed == 1)
        #expect(fixture.server.hits("/flaky/prefetch?fail=1") == 2)
    }
}
