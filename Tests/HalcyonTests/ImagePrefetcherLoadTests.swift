import Foundation
import Testing
@testable import Halcyon

/// Many prefetchers over the same few URLs at once (Kingfisher's `ImagePrefetcherTests.testPrefetchMultiTimes`).
///
/// Timed: listed in the Makefile's TIMED_SUITES, so it runs alone.
@Suite struct ImagePrefetcherLoadTests {
    /// Kingfisher's test: 10,000 prefetchers over the same 10 URLs, `.cacheMemoryOnly`, all started at
    /// once, each completion counted. Kingfisher's bound is 15 s; this one is 60 s in a debug build, to
    /// catch a hang or a cost that grows with the number of callers (the stage that coalesces the first
    /// loads once took 112 s here), not to measure (`make bench` runs PrefetchBenchmark for that).
    @Test func prefetchMultiTimes() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let urls = (0..<10).map { fixture.url("/image/prefetch-multi-\($0)") }
        let prefetchers = 10_000
        let counts = Locked((completions: 0, skipped: 0, failed: 0, completed: 0))
        let start = ContinuousClock.now
        for _ in 0..<prefetchers {
            let prefetcher = ImagePrefetcher(
                urls: urls, options: [.cacheMemoryOnly], manager: fixture.manager,
                completionHandler: { skipped, failed, completed in
                    counts.withLock {
                        $0.completions += 1
                        $0.skipped += skipped.count
                        $0.failed += failed.count
                        $0.completed += completed.count
                    }
                })
            prefetcher.start()
        }
        let done = await fixture.server.wait(timeout: 60) { counts.withLock { $0.completions } == prefetchers }
        let elapsed = ContinuousClock.now - start
        let final = counts.withLock { $0 }
        #expect(done, "\(final.completions) of \(prefetchers) prefetchers completed within 60 s")
        #expect(final.failed == 0)
        #expect(final.skipped + final.completed == prefetchers * urls.count)
        // Every URL was downloaded once: the first loads were shared, and the rest were memory hits.
        for url in urls { #expect(fixture.server.hits(url.path) == 1, "\(url.path)") }
        #expect(fixture.cache.diskStorage.isCached(forKey: urls[0].absoluteString) == false, ".cacheMemoryOnly wrote to disk")
        print("ImagePrefetcherLoadTests: \(prefetchers) prefetchers x \(urls.count) URLs in \(elapsed)")
    }
}
