// Storage tier benchmark: a hit in the shared Redis tier against a hit in the
// local disk tier, both through the same `DataStorageTier` API the service uses.
//
// A real redis-server on a free loopback port (no persistence). Values of
// 20 KB, 200 KB and 2 MB (typical encoded results), one caller at a time
// (latency: p50 and p99 over every call) and 8 at once (throughput). Each
// cell is measured in 5 rounds, sides alternating; the table shows medians with
// the min-max spread, and the ratio Redis / disk.
//
// Run: cd Benchmarks && swift run -c release StorageTierBenchmark
// With BENCH_RESULTS=/path/file.md the table is appended there as markdown.
import BenchmarkSupport
import Foundation
import Halcyon
import HalcyonRedis

// MARK: - Measuring

struct Cell {
    var p50: [Double] = []
    var p99: [Double] = []
    var perSecond: [Double] = []
}

/// Latencies in microseconds of `count` sequential hits.
func sequential(_ tier: any DataStorageTier, keys: [String], count: Int) async -> [Double] {
    var samples: [Double] = []
    samples.reserveCapacity(count)
    for index in 0..<count {
        let start = ContinuousClock.now
        let found = try? await tier.value(forKey: keys[index % keys.count])
        let elapsed = ContinuousClock.now - start
        if found == nil { print("miss in \(tier.name)"); exit(1) }
        samples.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
    }
    return samples.sorted()
}

/// Hits per second with `callers` concurrent callers, `perCaller` hits each.
func concurrent(_ tier: any DataStorageTier, keys: [String], callers: Int, perCaller: Int) async -> Double {
    let start = ContinuousClock.now
    await withTaskGroup(of: Void.self) { group in
        for caller in 0..<callers {
            group.addTask {
                for index in 0..<perCaller { _ = try? await tier.value(forKey: keys[(caller * 31 + index) % keys.count]) }
            }
        }
    }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(callers * perCaller) / seconds
}

func spread(_ values: [Double]) -> String { String(format: "%.0f–%.0f", values.min() ?? 0, values.max() ?? 0) }

// MARK: - Setup

guard let redisServer = which("redis-server") else {
    print("redis-server is not installed (apt-get install redis-server)")
    exit(1)
}
let work = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-tier-bench-\(getpid())")
try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: work) }
let port = freePort()
let redisProcess = try start(redisServer, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                           "--dir", work.path], log: work.appendingPathComponent("redis.log"))
defer { terminateTree(redisProcess) }

let client = RedisClient(configuration: try RedisConfiguration(url: "redis://127.0.0.1:\(port)/0"))
var ready = false
for _ in 0..<100 where !ready {
    ready = (try? await client.ping()) != nil
    if !ready { try await Task.sleep(for: .milliseconds(50)) }
}
guard ready else { print("redis-server did not start"); exit(1) }
let redis = RedisDataStorage(client: client)
let disk = try DiskDataStorage(name: "bench", folder: work, megabytes: 0)

let sizes = [20_000, 200_000, 2_000_000]
let rounds = 5
var markdown = """
    ### Storage tiers: Redis hit vs local disk hit (\(rounds) rounds, median and min–max)

    | value | tier | p50 µs | p99 µs | hits/s, 8 callers | p50 ratio | hits/s ratio |
    |---:|---|---:|---:|---:|---:|---:|

    """
var worstRatio = 0.0
for size in sizes {
    let keys = (0..<32).map { "https://origin.test/img/\($0).jpg@thumbnail(512)#webp#75-\(size)" }
    let payload = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
    for key in keys {
        let value = StoredData(data: payload, contentType: "image/webp", etag: "\"e\"")
        try await disk.store(value, forKey: key, lifetime: nil)
        try await redis.store(value, forKey: key, lifetime: nil)
    }
    let count = size >= 1_000_000 ? 300 : 2_000
    var cells: [String: Cell] = ["disk": Cell(), "redis": Cell()]
    for round in 0..<rounds {
        let order: [any DataStorageTier] = round % 2 == 0 ? [disk, redis] : [redis, disk]
        for tier in order {
            _ = await sequential(tier, keys: keys, count: 50)
            let samples = await sequential(tier, keys: keys, count: count)
            cells[tier.name, default: Cell()].p50.append(samples[samples.count / 2])
            cells[tier.name, default: Cell()].p99.append(samples[samples.count * 99 / 100])
            cells[tier.name, default: Cell()].perSecond.append(await concurrent(tier, keys: keys, callers: 8, perCaller: count / 8))
        }
    }
    let d = cells["disk"] ?? Cell(), r = cells["redis"] ?? Cell()
    let latencyRatio = median(r.p50) / median(d.p50)
    let throughputRatio = median(r.perSecond) / median(d.perSecond)
    worstRatio = max(worstRatio, latencyRatio)
    for (name, cell) in [("disk", d), ("redis", r)] {
        let ratios = name == "redis" ? String(format: "%.2f | %.2f", latencyRatio, throughputRatio) : "1.00 | 1.00"
        markdown += "| \(size / 1000) KB | \(name) | \(String(format: "%.0f", median(cell.p50))) (\(spread(cell.p50))) "
            + "| \(String(format: "%.0f", median(cell.p99))) (\(spread(cell.p99))) "
            + "| \(String(format: "%.0f", median(cell.perSecond))) (\(spread(cell.perSecond))) | \(ratios) |\n"
    }
}
await client.shutdown()
print(markdown)
appendToBenchResults(markdown)
recordSummary(benchmark: "StorageTierBenchmark", comparison: "Redis hit p50 / local disk hit p50 (worst size)",
              result: String(format: "%.2fx", worstRatio), goal: "reported (no goal set)", met: nil)
