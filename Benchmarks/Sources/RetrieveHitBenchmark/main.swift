// Retrieve-path hits: HalcyonManager.retrieveImage against the cache calls it is made of.
//
// 1. Memory hit: retrieveImage(with:) of a source already in memory, against
//    ImageCache.retrieveImageInMemoryCache (the lookup alone). The ratio is the
//    cost of the manager's own path (options, keys, the attempt).
// 2. Disk hit: the same after clearing memory, against ImageCache.retrieveImage(forKey:)
//    (disk read + decode + memory store, no manager).
// Each row is the best of ROUNDS (default 7) runs; the spread of all runs is printed.
//
//   cd Benchmarks && swift run -c release RetrieveHitBenchmark
//
// Env: ROUNDS, MEMORY_HITS (default 100000), DISK_HITS (default 2000).
import BenchmarkSupport
import Foundation
import Halcyon

let environment = ProcessInfo.processInfo.environment
nonisolated(unsafe) let rounds = max(1, Int(environment["ROUNDS"] ?? "") ?? 7)
nonisolated(unsafe) let memoryHits = max(1, Int(environment["MEMORY_HITS"] ?? "") ?? 100_000)
nonisolated(unsafe) let diskHits = max(1, Int(environment["DISK_HITS"] ?? "") ?? 2_000)

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-retrieve-hit-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: folder) }
let cache = try ImageCache(name: "hits", cacheDirectoryURL: folder)
let manager = HalcyonManager(downloader: ImageDownloader(name: "unused"), cache: cache)
let pixels = deterministicPixels(seed: 7, width: 320, height: 240, noise: 24)
let image = try Image(rgbaPixels: pixels, width: 320, height: 240)
let data = try image.encoded(as: .jpeg(quality: 85))
let provider = RawImageDataProvider(data: data, cacheKey: "retrieve-hit-source")
let source = Source.provider(provider)
let options: HalcyonOptionsInfo = [.callbackQueue(.untouch)]
_ = try await manager.retrieveImage(with: source, options: options + [.waitForCache])

/// Nanoseconds per call of each run of `count` calls.
func runs(_ count: Int, _ body: () async throws -> Void) async throws -> [Double] {
    var results: [Double] = []
    for _ in 0..<rounds {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<count { try await body() }
        results.append(Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count))
    }
    return results
}

func row(_ name: String, _ halcyon: [Double], _ baseline: [Double]) -> String {
    let best = halcyon.min() ?? 0
    let base = baseline.min() ?? 1
    let spread = { (values: [Double]) in String(format: "%.0f–%.0f", values.min() ?? 0, values.max() ?? 0) }
    return String(format: "| %@ | %.0f (%@) | %.0f (%@) | %.2fx |", name, best, spread(halcyon), base, spread(baseline), best / base)
}

/// The four measurements, in a nonisolated function so that no call hops to the main actor (top-level globals are main-actor state).
func measureAll(
    manager: HalcyonManager, cache: ImageCache, source: Source, key: String, options: HalcyonOptionsInfo
) async throws -> (managerMemory: [Double], cacheMemory: [Double], managerDisk: [Double], cacheDisk: [Double]) {
    let managerMemory = try await runs(memoryHits) {
        let result = try await manager.retrieveImage(with: source, options: options)
        precondition(result.cacheType == .memory)
    }
    let cacheMemory = try await runs(memoryHits) {
        precondition(cache.retrieveImageInMemoryCache(forKey: key) != nil)
    }
    let managerDisk = try await runs(diskHits) {
        cache.clearMemoryCache()
        let result = try await manager.retrieveImage(with: source, options: options)
        precondition(result.cacheType == .disk)
    }
    let cacheDisk = try await runs(diskHits) {
        cache.clearMemoryCache()
        let result = try await cache.retrieveImage(forKey: key)
        precondition(result.cacheType == .disk)
    }
    return (managerMemory, cacheMemory, managerDisk, cacheDisk)
}

let (managerMemory, cacheMemory, managerDisk, cacheDisk) = try await measureAll(
    manager: manager, cache: cache, source: source, key: provider.cacheKey, options: options)

let table = """
### RetrieveHitBenchmark: HalcyonManager hits vs the cache calls alone (320×240 JPEG, best of \(rounds) runs, ns per call, spread in brackets)

| hit | manager ns | cache alone ns | manager / cache |
|---|---:|---:|---:|
\(row("memory (\(memoryHits) calls)", managerMemory, cacheMemory))
\(row("disk + decode (\(diskHits) calls)", managerDisk, cacheDisk))

"""
print(table)
appendToBenchResults(table)
recordSummary(benchmark: "RetrieveHitBenchmark", comparison: "manager memory hit / cache lookup",
              result: String(format: "%.2fx", (managerMemory.min() ?? 0) / (cacheMemory.min() ?? 1)), goal: "report", met: nil)
recordSummary(benchmark: "RetrieveHitBenchmark", comparison: "manager disk hit / cache disk read",
              result: String(format: "%.2fx", (managerDisk.min() ?? 0) / (cacheDisk.min() ?? 1)), goal: "report", met: nil)
