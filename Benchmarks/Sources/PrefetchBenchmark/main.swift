// Many prefetchers over the same few URLs (Kingfisher's testPrefetchMultiTimes, as a rate).
//
// PREFETCHERS (default 10 000) ImagePrefetchers over the same URLS (default 10)
// loopback URLs, `.cacheMemoryOnly`, all started at once on a fresh manager and
// memory cache; each completion is counted, and the clock stops at the last.
// The first loads of each URL are shared by thousands of callers (one download
// per URL), the rest are memory hits. Reported: prefetchers × sources per second,
// and the cost of one item against the memory-hit path alone
// (HalcyonManager.retrieveImage of a source already in memory, one call after
// the other on one task). The goal, at most 60× a memory hit per item, leaves room
// for a prefetcher's own work (a task per item, its lists, the 50 000 callers
// that join the first loads) and for a busy 2-core machine (23× measured), and
// fails when a cost grows with the number of callers sharing a load: the retrieve
// pipeline's stage once copied and scanned its subscribers on every join, and
// then no prefetcher finished within 60 s in a debug build (11 s once fixed).
// Each figure is the best of ROUNDS (default 3).
//
//   cd Benchmarks && swift run -c release PrefetchBenchmark
//
// Env: PREFETCHERS, URLS, ROUNDS. Appends its table to $BENCH_RESULTS.
import BenchmarkSupport
import Foundation
import Halcyon
import Synchronization

let environment = ProcessInfo.processInfo.environment
let prefetchers = max(1, Int(environment["PREFETCHERS"] ?? "") ?? 10_000)
let urlCount = max(1, Int(environment["URLS"] ?? "") ?? 10)
let rounds = max(1, Int(environment["ROUNDS"] ?? "") ?? 3)
let goalRatio = 60.0

let image = try Image(rgbaPixels: deterministicPixels(seed: 11, width: 64, height: 48, noise: 32), width: 64, height: 48)
let body = [UInt8](try image.encoded(as: .jpeg(quality: 85)))
let server = try await LoopbackImageServer.start(bodies: [body])
let urls = (0..<urlCount).compactMap { URL(string: server.url($0)) }
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-prefetch-bench-\(UUID().uuidString)")
let options: HalcyonOptionsInfo = [.cacheMemoryOnly, .callbackQueue(.untouch)]

/// A manager on a fresh cache of its own (nothing is written to its disk folder: `.cacheMemoryOnly`).
func makeManager(_ round: Int) throws -> (HalcyonManager, ImageDownloader) {
    let cache = try ImageCache(name: "prefetch-\(round)", cacheDirectoryURL: folder)
    let downloader = ImageDownloader(name: "prefetch-benchmark-\(round)")
    return (HalcyonManager(downloader: downloader, cache: cache), downloader)
}

/// Completions and failed items counted across the prefetchers' completion handlers.
final class Counts: Sendable {
    let state = Mutex((done: 0, failed: 0))
}

/// Seconds from starting every prefetcher to the last completion; the counts of failed items.
func prefetchRound(_ manager: HalcyonManager) async -> (seconds: Double, failed: Int) {
    let counts = Counts()
    let start = DispatchTime.now().uptimeNanoseconds
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        for _ in 0..<prefetchers {
            let prefetcher = ImagePrefetcher(urls: urls, options: options, manager: manager, completionHandler: { _, failed, _ in
                let last = counts.state.withLock { counts -> Bool in
                    counts.done += 1
                    counts.failed += failed.count
                    return counts.done == prefetchers
                }
                if last { continuation.resume() }
            })
            prefetcher.start()
        }
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    return (seconds, counts.state.withLock { $0.failed })
}

/// Nanoseconds per memory-hit retrieve, `calls` calls one after the other over the URLs (already in memory).
func memoryHitRound(_ manager: HalcyonManager, calls: Int) async throws -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    for index in 0..<calls {
        let result = try await manager.retrieveImage(with: .network(urls[index % urls.count]), options: options)
        guard result.cacheType == .memory else {
            print("not a memory hit: \(result.cacheType) for \(urls[index % urls.count])")
            exit(3)
        }
    }
    return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(calls)
}

/// Every round's figures, in a nonisolated function so that no call hops to the main actor.
func measure() async throws -> (prefetch: [Double], memoryHit: [Double], failed: Int) {
    var prefetch: [Double] = []
    var memoryHit: [Double] = []
    var failed = 0
    for round in 0..<rounds {
        let (manager, downloader) = try makeManager(round)
        let result = await prefetchRound(manager)
        prefetch.append(result.seconds)
        failed += result.failed
        memoryHit.append(try await memoryHitRound(manager, calls: prefetchers * urlCount))
        await downloader.shutdown()
        print(String(format: "round %d: %d prefetchers x %d URLs in %.2f s; memory hit %.0f ns", round + 1, prefetchers, urlCount,
                     result.seconds, memoryHit[memoryHit.count - 1]))
    }
    return (prefetch, memoryHit, failed)
}

let (prefetchSeconds, memoryHitNanos, failed) = try await measure()
await server.shutdown()
try? FileManager.default.removeItem(at: folder)

let items = Double(prefetchers * urlCount)
let bestSeconds = prefetchSeconds.min() ?? 0
let perSecond = items / max(bestSeconds, 1e-9)
let perItemNanos = bestSeconds * 1e9 / items
let hitNanos = memoryHitNanos.min() ?? 1
let ratio = perItemNanos / hitNanos
let met = failed == 0 && ratio <= goalRatio
let table = String(format: """
    ### PrefetchBenchmark: %d ImagePrefetchers × %d URLs, .cacheMemoryOnly, all started at once (best of %d rounds)

    | measure | best | all rounds |
    |---|---:|---|
    | whole run (s) | %.2f | %@ |
    | prefetchers × sources per second | %.0f | |
    | ns per item (wall, 2 cores) | %.0f | |
    | memory-hit retrieve alone, ns per call (one task) | %.0f | %@ |
    | item / memory hit | %.2fx | |

    %d failed items. %@ the goal of ≤ %.0fx a memory hit per item and no failures.

    """, prefetchers, urlCount, rounds, bestSeconds, prefetchSeconds.map { String(format: "%.2f", $0) }.joined(separator: ", "),
    perSecond, perItemNanos, hitNanos, memoryHitNanos.map { String(format: "%.0f", $0) }.joined(separator: ", "), ratio,
    failed, met ? "Meets" : "MISSES", goalRatio)
print("\n" + table)
appendToBenchResults(table)
recordSummary(benchmark: "PrefetchBenchmark",
              comparison: "\(prefetchers) prefetchers × \(urlCount) URLs: cost per item / memory-hit retrieve",
              result: String(format: "%.0f items/s, %.1fx", perSecond, ratio), goal: String(format: "≤ %.0fx", goalRatio), met: met)
exit(met ? 0 : 2)
