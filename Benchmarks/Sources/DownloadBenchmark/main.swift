// Download throughput: Halcyon's ImageDownloader against `curl --parallel`, side by side in one run.
//
// Starts a loopback HTTP/1.1 server (NIO) serving 4000 (IMAGES) distinct, deterministic
// ~50 KB images (half JPEG, half PNG), then fetches all of them at concurrency
// 16 with: Halcyon download only (`downloadData`, all of them submitted at once
// through the completion-handler API, again as one async task each, and from 16
// async worker tasks awaiting one download at a time, the bare loop's shape), Halcyon
// download + decode (`downloadImage`, default processor, completion API), a
// bare AsyncHTTPClient loop with 16 workers (the transport's ceiling), the
// same loop collecting each body into one buffer (what a client that decodes
// the bytes must do, as Halcyon does), and curl. Halcyon's own `maxConcurrentDownloads = 16` limits its concurrency. Each client runs `ROUNDS`
// times (default 9), interleaved; the table shows the median round and the median CPU time of a round
// (this process's, from getrusage: steadier than wall time on shared cores).
// Run: cd Benchmarks && swift run -c release DownloadBenchmark
import AsyncHTTPClient
import BenchmarkSupport
import Foundation
import Halcyon
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

// 4000 images make a round about a quarter of a second here: 1000 (60 ms) left the ratio to scheduling noise.
let imageCount = Int(ProcessInfo.processInfo.environment["IMAGES"] ?? "") ?? 4000
let concurrency = 16
let rounds = max(1, Int(ProcessInfo.processInfo.environment["ROUNDS"] ?? "") ?? 9)
/// `DECODE=0` skips the download + decode row (for profiling the transport alone).
let includeDecode = ProcessInfo.processInfo.environment["DECODE"] != "0"

// MARK: - Deterministic bodies

func makeBodies() throws -> [Data] {
    try (0..<imageCount).map { index in
        if index.isMultiple(of: 2) {
            let image = try Image(rgbaPixels: deterministicPixels(seed: index, width: 240, height: 240, noise: 96), width: 240, height: 240)
            return try image.encoded(as: .jpeg(quality: 85))
        } else {
            let image = try Image(rgbaPixels: deterministicPixels(seed: index, width: 150, height: 150, noise: 48), width: 150, height: 150)
            return try image.encoded(as: .png())
        }
    }
}

// MARK: - Clients

struct Measurement {
    let seconds: Double
    let images: Int
    let bytes: Int
    /// This process's CPU time over the round (user + system, every thread: the loopback server's as well), from `getrusage`.
    var cpuSeconds = 0.0
}

/// This process's CPU time so far (user + system), in seconds, from `getrusage` in microseconds: BenchmarkSupport's
/// `cpuSeconds(of:)` counts /proc clock ticks of 10 ms, too coarse for a round of 0.2 s.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    return user + system
}

/// Runs one in-process round and records the CPU it took alongside its wall time.
func timed(_ round: () async throws -> Measurement) async rethrows -> Measurement {
    let before = processCPUSeconds()
    var measurement = try await round()
    measurement.cpuSeconds = processCPUSeconds() - before
    return measurement
}

/// Fetches every URL with the downloader; all requests are queued at once and the downloader keeps 16 running.
func runHalcyon(_ downloader: ImageDownloader, urls: [URL], decode: Bool) async throws -> Measurement {
    let start = ContinuousClock.now
    let bytes = try await withThrowingTaskGroup(of: Int.self) { group in
        for url in urls {
            group.addTask {
                if decode {
                    let result = try await downloader.downloadImage(with: url)
                    precondition(result.image.width > 0)
                    return result.originalData.count
                }
                return try await downloader.downloadData(with: url).data.count
            }
        }
        return try await group.reduce(0, +)
    }
    return Measurement(seconds: (ContinuousClock.now - start).seconds, images: urls.count, bytes: bytes)
}

/// Fetches every URL with `downloadData` from 16 worker tasks, each awaiting one download at a time: the bare
/// AsyncHTTPClient loop's shape, so the two rows differ only in what sits between the loop and the transport.
func runHalcyonWorkers(_ downloader: ImageDownloader, urls: [URL]) async throws -> Measurement {
    try await runWorkers(urls: urls) { url in try await downloader.downloadData(with: url).data.count }
}

/// Runs `fetch` over every URL from `concurrency` worker tasks that take the next URL as they finish one; `fetch` returns the body's byte count.
func runWorkers(urls: [URL], _ fetch: @escaping @Sendable (URL) async throws -> Int) async throws -> Measurement {
    let start = ContinuousClock.now
    let next = Cursor()
    let bytes = try await withThrowingTaskGroup(of: Int.self) { group in
        for _ in 0..<concurrency {
            group.addTask {
                var total = 0
                while let index = next.take(below: urls.count) {
                    total += try await fetch(urls[index])
                }
                return total
            }
        }
        return try await group.reduce(0, +)
    }
    return Measurement(seconds: (ContinuousClock.now - start).seconds, images: urls.count, bytes: bytes)
}

/// Submits every URL at once through the completion-handler API and waits for the last callback.
func runHalcyonCallbacks(_ downloader: ImageDownloader, urls: [URL], decode: Bool) async throws -> Measurement {
    let start = ContinuousClock.now
    let tally = Tally(expected: urls.count)
    let bytes = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
        tally.onDone = { continuation.resume(with: $0) }
        for url in urls {
            if decode {
                downloader.downloadImage(with: url) { result in tally.add(result.map { $0.originalData.count }) }
            } else {
                downloader.downloadData(with: url) { result in tally.add(result.map { $0.data.count }) }
            }
        }
    }
    return Measurement(seconds: (ContinuousClock.now - start).seconds, images: urls.count, bytes: bytes)
}

/// Counts completions and bytes; resumes once when all arrived or at the first error. One lock.
final class Tally: Sendable {
    private struct State {
        var remaining: Int
        var bytes = 0
        var done: (@Sendable (Result<Int, any Error>) -> Void)?
    }

    private let state: Mutex<State>

    init(expected: Int) { state = Mutex(State(remaining: expected)) }

    var onDone: (@Sendable (Result<Int, any Error>) -> Void)? {
        get { state.withLock { $0.done } }
        set { state.withLock { $0.done = newValue } }
    }

    func add(_ result: Result<Int, HalcyonError>) {
        let finish = state.withLock { state -> (@Sendable (Result<Int, any Error>) -> Void, Result<Int, any Error>)? in
            guard let done = state.done else { return nil }
            switch result {
            case .failure(let error):
                state.done = nil
                return (done, .failure(error))
            case .success(let count):
                state.bytes += count
                state.remaining -= 1
                guard state.remaining == 0 else { return nil }
                state.done = nil
                return (done, .success(state.bytes))
            }
        }
        if let (done, value) = finish { done(value) }
    }
}

/// Hands out indexes to workers.
final class Cursor: Sendable {
    let value = Mutex(0)

    /// The next index, or nil once `count` were handed out.
    func take(below count: Int) -> Int? {
        let index = value.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        return index < count ? index : nil
    }
}

/// Fetches every URL with a bare AsyncHTTPClient (16 workers, the configuration ImageDownloader uses): the transport's ceiling, for reference.
///
/// With `collect` each body is gathered into one buffer (`collect(upTo:)`), as any client that decodes it must;
/// without, its chunks are only counted.
func runRawClient(_ client: HTTPClient, urls: [URL], collect: Bool = false) async throws -> Measurement {
    try await runWorkers(urls: urls) { url in
        let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(30))
        if collect {
            return try await response.body.collect(upTo: 64 * 1024 * 1024).readableBytes
        }
        var total = 0
        for try await buffer in response.body { total += buffer.readableBytes }
        return total
    }
}

/// Gathers a body on the event loop through AsyncHTTPClient's delegate API: no task hop per chunk.
final class BodyCollector: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Int
    private var count = 0

    func didReceiveBodyPart(task: HTTPClient.Task<Int>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        count += buffer.readableBytes
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Int>) throws -> Int { count }
}

/// Fetches every URL with the bare client's delegate API (16 workers awaiting each request's future).
func runRawDelegate(_ client: HTTPClient, urls: [URL]) async throws -> Measurement {
    try await runWorkers(urls: urls) { url in
        let request = try HTTPClient.Request(url: url.absoluteString)
        return try await client.execute(request: request, delegate: BodyCollector(), deadline: .now() + .seconds(30)).futureResult.get()
    }
}

/// The bare collecting loop with each request on a new task whose end resumes the awaiting worker: the hops
/// Halcyon's async methods add, without Halcyon.
func runRawHop(_ client: HTTPClient, urls: [URL]) async throws -> Measurement {
    try await runWorkers(urls: urls) { url in
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
            Task {
                do {
                    let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(30))
                    continuation.resume(returning: try await response.body.collect(upTo: 64 * 1024 * 1024).readableBytes)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}

/// Fetches every URL with `curl --parallel --parallel-max 16` from a config file.
func runCurl(configPath: String, urls: [URL], expectedBytes: Int) throws -> Measurement {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["curl", "--parallel", "--parallel-max", "\(concurrency)", "--silent", "--show-error", "--no-progress-meter",
                         "--fail", "--config", configPath, "--write-out", "%{size_download}\\n"]
    let output = Pipe()
    process.standardOutput = output
    let start = ContinuousClock.now
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let seconds = (ContinuousClock.now - start).seconds
    guard process.terminationStatus == 0 else { throw BenchmarkError.curlFailed(process.terminationStatus) }
    let sizes = String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { Int($0) }
    let bytes = sizes.reduce(0, +)
    guard sizes.count == urls.count, bytes == expectedBytes else {
        throw BenchmarkError.curlIncomplete(files: sizes.count, bytes: bytes)
    }
    return Measurement(seconds: seconds, images: urls.count, bytes: bytes)
}

enum BenchmarkError: Error {
    case curlFailed(Int32)
    case curlIncomplete(files: Int, bytes: Int)
}

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

// MARK: - Run

let generationStart = ContinuousClock.now
let bodies = try makeBodies()
let totalBytes = bodies.reduce(0) { $0 + $1.count }
let averageKB = Double(totalBytes) / Double(bodies.count) / 1024
print(String(format: "Generated %d images (avg %.1f KB, %.1f MB) in %.2f s",
             bodies.count, averageKB, Double(totalBytes) / 1_048_576, (ContinuousClock.now - generationStart).seconds))

let server = try await LoopbackImageServer.start(bodies: bodies.map { [UInt8]($0) })
let port = server.port
let urls = (0..<imageCount).compactMap { URL(string: server.url($0)) }
let configPath = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-curl-\(port).conf").path
let config = urls.map { "url = \"\($0.absoluteString)\"\noutput = \"/dev/null\"\n" }.joined()
try config.write(toFile: configPath, atomically: true, encoding: .utf8)
defer { try? FileManager.default.removeItem(atPath: configPath) }

let downloader = ImageDownloader(name: "benchmark")
downloader.maxConcurrentDownloads = concurrency

// Warm-up: connections, libvips, page cache.
_ = try await runHalcyon(downloader, urls: Array(urls.prefix(64)), decode: true)
_ = try runCurl(configPath: configPath, urls: urls, expectedBytes: totalBytes)

var results: [String: [Measurement]] = [:]
var pool = HTTPClient.Configuration.ConnectionPool(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
pool.retryConnectionEstablishment = false
let rawClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(30)), connectionPool: pool, decompression: .enabled(limit: .ratio(200))))
_ = try await runRawClient(rawClient, urls: Array(urls.prefix(64)))

// `PROFILE=halcyon` (callbacks), `halcyon-async`, `halcyon-workers`, `raw`, `raw-collect`, `raw-delegate` or `raw-hop`
// runs only that client, ROUNDS times, and prints its seconds (for perf).
// A comma-separated list (`PROFILE=raw-collect,halcyon-workers`) runs those clients in turn each round and ends
// with each one's median CPU per round and its ratio to the first's, round by round (steadier on shared cores).
// Allocations per download: Scripts/malloc-count.c, preloaded (its header says how).
if let profile = ProcessInfo.processInfo.environment["PROFILE"] {
    let names = profile.split(separator: ",").map(String.init)
    var cpu: [[Double]] = names.map { _ in [] }
    for round in 1...rounds {
        for (index, only) in names.enumerated() {
            let m = try await timed {
                if only == "raw-hop" { try await runRawHop(rawClient, urls: urls) }
                else if only == "raw-delegate" { try await runRawDelegate(rawClient, urls: urls) }
                else if only.hasPrefix("raw") { try await runRawClient(rawClient, urls: urls, collect: only == "raw-collect") }
                else if only == "halcyon-workers" { try await runHalcyonWorkers(downloader, urls: urls) }
                else if only == "halcyon-async" { try await runHalcyon(downloader, urls: urls, decode: false) }
                else { try await runHalcyonCallbacks(downloader, urls: urls, decode: false) }
            }
            cpu[index].append(m.cpuSeconds)
            print(String(format: "%@ round %d: %.3f s, CPU %.3f s", only, round, m.seconds, m.cpuSeconds))
        }
    }
    for (index, name) in names.enumerated() {
        let ratios = zip(cpu[0], cpu[index]).map { $0 / $1 }.sorted()
        print(String(format: "%@: median CPU %.3f s; CPU efficiency vs %@, median of rounds %.3f (%.3f–%.3f)", name,
                     cpu[index].sorted()[cpu[index].count / 2], names[0], ratios[ratios.count / 2], ratios.first ?? 0, ratios.last ?? 0))
    }
    exit(0)
}

let clients = [
    "Halcyon download only (callbacks)", "Halcyon download only (async/await)",
    "Halcyon download + decode (callbacks)", "bare AsyncHTTPClient (reference)", "curl --parallel-max 16",
    "bare AsyncHTTPClient, bodies collected", "Halcyon download only (async/await, 16 workers)",
]
let curlClient = clients[4]
let shownClients = clients.filter { includeDecode || $0 != clients[2] }
for round in 1...rounds {
    results[curlClient, default: []].append(try runCurl(configPath: configPath, urls: urls, expectedBytes: totalBytes))
    results[clients[0], default: []].append(try await timed { try await runHalcyonCallbacks(downloader, urls: urls, decode: false) })
    results[clients[3], default: []].append(try await timed { try await runRawClient(rawClient, urls: urls) })
    results[clients[1], default: []].append(try await timed { try await runHalcyon(downloader, urls: urls, decode: false) })
    results[clients[5], default: []].append(try await timed { try await runRawClient(rawClient, urls: urls, collect: true) })
    results[clients[6], default: []].append(try await timed { try await runHalcyonWorkers(downloader, urls: urls) })
    if includeDecode {
        results[clients[2], default: []].append(try await timed { try await runHalcyonCallbacks(downloader, urls: urls, decode: true) })
    }
    print("round \(round)/\(rounds): " + shownClients.map { String(format: "%@ %.3f s", $0, results[$0]!.last!.seconds) }.joined(separator: ", "))
}

func median(_ values: [Measurement]) -> Measurement {
    values.sorted { $0.seconds < $1.seconds }[values.count / 2]
}

let curlMedian = median(results[curlClient]!)
let curlRate = Double(curlMedian.images) / curlMedian.seconds
/// The median of one client's CPU seconds per round (in-process clients only; curl runs in a child process).
func medianCPU(_ values: [Measurement]) -> Double {
    values.map(\.cpuSeconds).sorted()[values.count / 2]
}

var table = "| client | images | seconds (median of \(rounds)) | images/s | MB/s | CPU s per round (median) | vs curl |\n|---|---:|---:|---:|---:|---:|---:|\n"
for client in shownClients {
    let m = median(results[client]!)
    let rate = Double(m.images) / m.seconds
    let cpu = client == curlClient ? "—" : String(format: "%.3f", medianCPU(results[client]!))
    table += String(format: "| %@ | %d | %.3f | %.0f | %.1f | %@ | %.2f× |\n",
                    client, m.images, m.seconds, rate, Double(m.bytes) / 1_048_576 / m.seconds, cpu, rate / curlRate)
}
let header = String(format: "### DownloadBenchmark: %d distinct images (avg %.1f KB, JPEG+PNG) from loopback, concurrency %d, %d cores\n\n",
                    imageCount, averageKB, concurrency, ProcessInfo.processInfo.activeProcessorCount)
print("\n" + header + table)

appendToBenchResults(header + table)
for client in shownClients where client != curlClient {
    let m = median(results[client]!)
    recordSummary(benchmark: "Download", comparison: "\(client) vs curl --parallel (images/s)",
                  result: String(format: "%.2f× the throughput", Double(m.images) / m.seconds / curlRate), goal: "—", met: nil)
}
// Halcyon against each bare AsyncHTTPClient reference: bodies counted (the transport's ceiling, the goal's
// reference) and bodies collected (what a client that decodes them does).
for (reference, name) in [(clients[3], "bare AsyncHTTPClient"), (clients[5], "bare AsyncHTTPClient collecting bodies")] {
    let referenceMedian = median(results[reference]!)
    let referenceRate = Double(referenceMedian.images) / referenceMedian.seconds
    for client in [clients[0], clients[1], clients[6]] {
        let m = median(results[client]!)
        let ratio = Double(m.images) / m.seconds / referenceRate
        // Each round's own ratio (the clients ran back to back), for the spread.
        let perRound = zip(results[client]!, results[reference]!).map { $1.seconds / $0.seconds }
        let spread = String(format: "%.2f–%.2f", perRound.min() ?? 0, perRound.max() ?? 0)
        // CPU per round is steadier than wall time on shared cores: the reference's CPU over this client's.
        let cpuRatio = medianCPU(results[reference]!) / max(medianCPU(results[client]!), 1e-9)
        print(String(format: "%@ vs %@: %.2f× (rounds: %@); CPU: %.2f× the reference's efficiency", client, name, ratio, spread, cpuRatio))
        recordSummary(benchmark: "Download", comparison: "\(client) vs \(name) (images/s)",
                      result: String(format: "%.2f× the throughput (rounds %@)", ratio, spread), goal: "≥ 0.9×", met: ratio >= 0.9)
    }
}

await downloader.shutdown()
try await rawClient.shutdown()
await server.shutdown()
