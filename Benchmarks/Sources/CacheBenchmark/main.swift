// Cache benchmark: Halcyon's storages against the simplest thing that could work.
//
// 1. Memory hits on one thread: MemoryStorage<Image> vs a [String: Image] under
//    one Mutex, same keys, same run. Goal: at most 3x the baseline's time.
// 2. Disk hit of a 100 KB entry: DiskStorage.value(forKey:) (size and header
//    checksum validated on every hit, payload checksum on the first read of
//    the unchanged file, payload returned as Data) vs a plain
//    open/fstat/read/close of the same file. Goal: at most 1.5x. A last row
//    shows the cost of hashing the payload on every hit too.
//
// Run: cd Benchmarks && swift run -c release CacheBenchmark
// With BENCH_RESULTS=/path/file.md the table is appended there as markdown.
import BenchmarkSupport
import Foundation
import Halcyon
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Timing

/// Nanoseconds per operation: the best of `runs` runs of `iterations` calls.
func measure(runs: Int = 7, iterations: Int, _ body: (Int) -> Int) -> Double {
    var best = Double.infinity
    var sink = 0
    for _ in 0..<runs {
        let start = DispatchTime.now().uptimeNanoseconds
        for index in 0..<iterations { sink &+= body(index) }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
        best = min(best, elapsed / Double(iterations))
    }
    if sink == 42 { print("") }
    return best
}

struct Row {
    var name: String
    var candidate: Double
    var baseline: Double
    var goal: Double
    var ratio: Double { candidate / baseline }
}

// MARK: - Memory hits

let image: Image
do {
    image = try Image(rgbaPixels: [UInt8](repeating: 128, count: 64 * 64 * 4), width: 64, height: 64)
} catch {
    print("cannot make the test image: \(error)")
    exit(1)
}
let keyCount = 1_000
let keys = (0..<keyCount).map { "https://example.com/images/\($0).png" }
let memory = MemoryStorage.Backend<Image>(config: MemoryStorage.Config(totalCostLimit: 1 << 30, cleanInterval: 0))
let locked = Mutex<[String: Image]>([:])
for key in keys {
    memory.store(value: image, forKey: key, expiration: .never)
    locked.withLock { $0[key] = image }
}
let memoryIterations = 2_000_000
var memoryStorageNs = Double.infinity
var lockedDictionaryNs = Double.infinity
for _ in 0..<3 {
    memoryStorageNs = min(memoryStorageNs, measure(iterations: memoryIterations) { index in
        memory.value(forKey: keys[index % keyCount]) == nil ? 0 : 1
    })
    lockedDictionaryNs = min(lockedDictionaryNs, measure(iterations: memoryIterations) { index in
        let key = keys[index % keyCount]
        return locked.withLock { $0[key] } == nil ? 0 : 1
    })
}

// MARK: - Disk hits

let workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-cache-bench-\(getpid())")
defer { try? FileManager.default.removeItem(at: workDirectory) }
let disk: DiskStorage.Backend
do {
    disk = try DiskStorage.Backend(config: DiskStorage.Config(name: "bench", directory: workDirectory))
    let payload = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
    try disk.store(value: payload, forKey: "https://example.com/large.jpg")
    guard try disk.value(forKey: "https://example.com/large.jpg") == payload else {
        print("disk round trip failed")
        exit(1)
    }
} catch {
    print("disk setup failed: \(error)")
    exit(1)
}
let entryPath = disk.fileURL(forKey: "https://example.com/large.jpg").path
let strictDisk: DiskStorage.Backend
do {
    strictDisk = try DiskStorage.Backend(config: DiskStorage.Config(name: "bench", directory: workDirectory,
                                                                     verifiesPayloadOnEveryRead: true))
} catch {
    print("disk setup failed: \(error)")
    exit(1)
}

/// The baseline: read the whole file with open, fstat, read, close.
func plainRead(_ path: String) -> Data? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    let size = Int(info.st_size)
    var data = Data(count: size)
    let got = data.withUnsafeMutableBytes { read(fd, $0.baseAddress, size) }
    return got == size ? data : nil
}

let diskIterations = 20_000
var diskStorageNs = Double.infinity
var diskNoExtendNs = Double.infinity
var diskStrictNs = Double.infinity
var plainReadNs = Double.infinity
for _ in 0..<3 {
    diskStorageNs = min(diskStorageNs, measure(iterations: diskIterations) { _ in
        ((try? disk.value(forKey: "https://example.com/large.jpg")) ?? nil)?.count ?? 0
    })
    diskNoExtendNs = min(diskNoExtendNs, measure(iterations: diskIterations) { _ in
        ((try? disk.value(forKey: "https://example.com/large.jpg", extendingExpiration: .none)) ?? nil)?.count ?? 0
    })
    diskStrictNs = min(diskStrictNs, measure(iterations: diskIterations) { _ in
        ((try? strictDisk.value(forKey: "https://example.com/large.jpg")) ?? nil)?.count ?? 0
    })
    plainReadNs = min(plainReadNs, measure(iterations: diskIterations) { _ in
        plainRead(entryPath)?.count ?? 0
    })
}

// MARK: - Report

let rows = [
    Row(name: "memory hit (1 thread): MemoryStorage vs [String: Image] + Mutex", candidate: memoryStorageNs,
        baseline: lockedDictionaryNs, goal: 3),
    Row(name: "disk hit 100 KB: DiskStorage.value (default, .cacheTime) vs open/fstat/read/close", candidate: diskStorageNs,
        baseline: plainReadNs, goal: 1.5),
    Row(name: "disk hit 100 KB: DiskStorage.value (extending .none) vs open/fstat/read/close", candidate: diskNoExtendNs,
        baseline: plainReadNs, goal: 1.5),
    Row(name: "disk hit 100 KB: DiskStorage.value (verifiesPayloadOnEveryRead) vs open/fstat/read/close", candidate: diskStrictNs,
        baseline: plainReadNs, goal: 1.5),
]

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

var lines: [String] = []
lines.append("| benchmark | Halcyon ns/op | baseline ns/op | Halcyon ops/s | baseline ops/s | ratio | goal | met |")
lines.append("|---|---:|---:|---:|---:|---:|---:|:-:|")
for row in rows {
    lines.append("| \(row.name) | \(format(row.candidate)) | \(format(row.baseline)) | \(format(1e9 / row.candidate, 0)) | "
        + "\(format(1e9 / row.baseline, 0)) | \(format(row.ratio, 2))x | <= \(format(row.goal, 1))x | \(row.ratio <= row.goal ? "yes" : "no") |")
}
let table = lines.joined(separator: "\n")
print("CacheBenchmark (release, best of 3x7 runs; \(memoryIterations) memory hits, \(diskIterations) disk hits per run)")
print(table)

appendToBenchResults("### CacheBenchmark (release, best of 3×7 runs)\n\n" + table + "\n")
for row in rows {
    recordSummary(benchmark: "Cache", comparison: row.name, result: "\(format(row.ratio, 2))× the time",
                  goal: "≤ \(format(row.goal, 1))×", met: row.ratio <= row.goal)
}
