// Resident memory over 10 000 retrieves of distinct images with a 64 MB memory cache.
//
// A loopback server serves `/img/<n>`; 10 000 distinct URLs cycle through 200
// distinct deterministic 640×480 JPEGs (each decodes to about 0.9 MB of RGB, so the
// cache holds about 70 of them and evicts all the time). HalcyonManager
// retrieves every URL once, 16 at a time, through the memory cache, a disk
// cache (200 MB limit, in work/retrieve-memory/) and the network, and decodes
// each image. RSS is sampled every 500 retrieves. The goal is a flat curve:
// after warm-up (the first 2000 retrieves), the mean RSS of the last third of
// the samples may exceed that of the first third by at most 10 % (a mean of
// several samples, because one sample swings with the allocator's free lists).
// The least-squares slope (MB per 1000 retrieves) is reported beside it.
//
//   cd Benchmarks && swift run -c release RetrieveMemoryBenchmark
//
// Env: RETRIEVES (default 10000). Prints the curve; appends it to $BENCH_RESULTS.
import BenchmarkSupport
import Foundation
import Halcyon

let retrieves = Int(ProcessInfo.processInfo.environment["RETRIEVES"] ?? "") ?? 10_000
let distinctBodies = 200
let concurrency = 16
let sampleEvery = 500
let warmUp = 2000
let memoryLimit = 64 * 1024 * 1024
let allowedGrowth = 0.10

func makeBodies() throws -> [[UInt8]] {
    try (0..<distinctBodies).map { seed in
        let image = try Image(rgbaPixels: deterministicPixels(seed: seed, width: 640, height: 480, noise: 64), width: 640, height: 480)
        return [UInt8](try image.encoded(as: .jpeg(quality: 85)))
    }
}

struct Sample {
    let retrieves: Int
    let residentMB: Double
    let cacheMB: Double
    let cacheCount: Int
    let seconds: Double
}

let folder = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("work/retrieve-memory")
try? FileManager.default.removeItem(at: folder)
let bodies = try makeBodies()
let server = try await LoopbackImageServer.start(bodies: bodies)

let memory = MemoryStorage.Backend<Image>(config: MemoryStorage.Config(totalCostLimit: memoryLimit))
let disk = try DiskStorage.Backend(config: DiskStorage.Config(name: "rss", sizeLimit: 200 * 1024 * 1024, directory: folder))
let cache = ImageCache(memoryStorage: memory, diskStorage: disk)
let downloader = ImageDownloader(name: "rss-benchmark")
downloader.maxConcurrentDownloads = concurrency
let manager = HalcyonManager(downloader: downloader, cache: cache)

let started = ContinuousClock.now
var samples: [Sample] = []
@MainActor func sample(_ done: Int) {
    samples.append(Sample(
        retrieves: done, residentMB: Double(residentKilobytes().current) / 1024,
        cacheMB: Double(memory.totalCost) / 1_048_576, cacheCount: memory.count,
        seconds: (ContinuousClock.now - started).seconds))
    let last = samples[samples.count - 1]
    print(String(format: "%6d retrieves  RSS %7.1f MB  memory cache %5.1f MB (%d images)  %.1f s",
                 last.retrieves, last.residentMB, last.cacheMB, last.cacheCount, last.seconds))
}

sample(0)
var failures = 0
var done = 0
await withTaskGroup(of: Bool.self) { group in
    var next = 0
    func launch() {
        guard next < retrieves, let url = URL(string: server.url(next)) else { return }
        next += 1
        group.addTask {
            do {
                let result = try await manager.retrieveImage(with: .network(url))
                return result.image.width == 640
            } catch {
                return false
            }
        }
    }
    for _ in 0..<concurrency { launch() }
    for await succeeded in group {
        done += 1
        if !succeeded { failures += 1 }
        if done.isMultiple(of: sampleEvery) { sample(done) }
        launch()
    }
}
let peakMB = Double(residentKilobytes().peak) / 1024
await downloader.shutdown()
await server.shutdown()
try? FileManager.default.removeItem(at: folder)

// MARK: - Report

let steady = samples.filter { $0.retrieves >= warmUp }
let third = max(1, steady.count / 3)
func meanRSS(_ rows: ArraySlice<Sample>) -> Double { rows.map(\.residentMB).reduce(0, +) / Double(max(1, rows.count)) }
let early = meanRSS(steady.prefix(third)), late = meanRSS(steady.suffix(third))
let growth = early > 0 ? (late - early) / early : 0
// Least-squares slope of RSS over retrieves after warm-up, in MB per 1000 retrieves.
let meanX = steady.map { Double($0.retrieves) }.reduce(0, +) / Double(max(1, steady.count))
let meanY = meanRSS(steady[...])
let covariance = steady.map { (Double($0.retrieves) - meanX) * ($0.residentMB - meanY) }.reduce(0, +)
let variance = steady.map { (Double($0.retrieves) - meanX) * (Double($0.retrieves) - meanX) }.reduce(0, +)
let slope = variance > 0 ? covariance / variance * 1000 : 0
let flat = !steady.isEmpty && growth <= allowedGrowth && failures == 0
let verdict = flat ? "meets" : "MISSES"
var table = String(format: """
    ### RetrieveMemoryBenchmark: %d retrieves of distinct images (640×480 JPEGs, 200 distinct bodies), 64 MB memory cache, concurrency %d

    | retrieves | RSS (MB) | memory cache (MB) | cached images | elapsed (s) |
    |---:|---:|---:|---:|---:|

    """, retrieves, concurrency)
for row in samples {
    table += String(format: "| %d | %.1f | %.1f | %d | %.1f |\n", row.retrieves, row.residentMB, row.cacheMB, row.cacheCount, row.seconds)
}
table += String(format: "\nPeak RSS %.1f MB. After %d retrieves, mean RSS of the first third of the samples %.1f MB, of the last third %.1f MB (%+.1f %%); slope %+.2f MB per 1000 retrieves; %d failed retrieves. ",
                peakMB, warmUp, early, late, growth * 100, slope, failures)
table += verdict + " the goal of ≤ +\(Int(allowedGrowth * 100)) % and no failures.\n"
print("\n" + table)
appendToBenchResults(table)
recordSummary(benchmark: "Retrieve memory", comparison: "RSS growth over \(retrieves) retrieves after \(warmUp) (mean of first vs last third), 64 MB memory cache",
              result: String(format: "%+.1f %% (%.1f → %.1f MB, slope %+.2f MB/1000)", growth * 100, early, late, slope),
              goal: "≤ +\(Int(allowedGrowth * 100)) %", met: flat)
exit(flat ? 0 : 2)

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
