// Server benchmark: `halcyon serve` under wrk on loopback, side by side in one run with
// (a) nginx serving the very same thumbnail bytes from disk (cached thumbnail req/s), and
// (b) thumbor 7 with its file loader (uncached 4 MP → 500 px JPEG req/s).
//
// The Halcyon server runs in a child process (this executable with `--serve`, which is exactly
// what `halcyon serve` runs), so its peak RSS is its own. nginx and thumbor configs are written
// at run time into a temporary folder. Uncached runs use one distinct path per request (hard
// links to the same 4 MP JPEG), so neither server can answer from a cache.
//
// Environment: THUMBOR (thumbor executable, default `thumbor`), NGINX (default `nginx`),
// WRK (default `wrk`), BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 16),
// BENCH_RESULTS (append the markdown table to this file).
import BenchmarkSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Halcyon
import HalcyonServer

// MARK: - Child mode: the server

let arguments = CommandLine.arguments
if arguments.count >= 4, arguments[1] == "--serve" {
    var configuration = ServerConfiguration()
    configuration.insecure = true
    configuration.port = Int(arguments[2]) ?? 0
    configuration.localRoot = arguments[3]
    configuration.cacheDirectory = arguments.count > 4 ? arguments[4] : nil
    configuration.maxInFlight = 64
    try await ImageServer.runUntilSignalled(configuration: configuration, logLevel: .error)
    exit(0)
}

// MARK: - Helpers

let environment = ProcessInfo.processInfo.environment
let seconds = Int(environment["BENCH_SECONDS"] ?? "") ?? 10
let connections = Int(environment["BENCH_CONNECTIONS"] ?? "") ?? 16
let cores = ProcessInfo.processInfo.activeProcessorCount
let wrkThreads = max(1, min(cores, 2))
let work = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-server-bench-\(getpid())")

func which(_ name: String) -> String? {
    if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
    let found = (try? run("/bin/sh", ["-c", "PATH=\"$PATH:/usr/sbin:/sbin\" command -v \(name)"]))?
        .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    return found.hasPrefix("/") ? found : nil
}

@discardableResult
func run(_ path: String, _ args: [String], output: Bool = true) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = args
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

func start(_ path: String, _ args: [String], log: URL) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = args
    FileManager.default.createFile(atPath: log.path, contents: nil)
    let handle = try FileHandle(forWritingTo: log)
    process.standardOutput = handle
    process.standardError = handle
    try process.run()
    return process
}

func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// GETs a URL on loopback with a raw socket-free helper: curl is not assumed, so use URLSession-free Foundation.
func fetch(_ url: String, attempts: Int = 100) -> (Int, Data)? {
    for _ in 0..<attempts {
        let semaphore = DispatchSemaphore(value: 0)
        let box = ResultBox()
        guard let target = URL(string: url) else { return nil }
        var request = URLRequest(url: target)
        request.timeoutInterval = 30
        URLSession.shared.dataTask(with: request) { data, response, _ in
            if let response = response as? HTTPURLResponse, let data { box.set((response.statusCode, data)) }
            semaphore.signal()
        }.resume()
        semaphore.wait()
        if let result = box.get() { return result }
        usleep(200_000)
    }
    return nil
}

/// The answer of one fetch, handed from URLSession's queue; one lock.
final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (Int, Data)?
    func set(_ new: (Int, Data)) { lock.lock(); value = new; lock.unlock() }
    func get() -> (Int, Data)? { lock.lock(); defer { lock.unlock() }; return value }
}

/// A process and all its descendants, from /proc.
func processTree(_ root: Int32) -> [Int32] {
    let all = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { Int32($0) } ?? []
    var children: [Int32: [Int32]] = [:]
    for pid in all {
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
           let close = stat.lastIndex(of: ")") {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = Int32(fields[1]) { children[parent, default: []].append(pid) }
        }
    }
    var result: [Int32] = []
    var pending = [root]
    while let pid = pending.popLast() {
        guard !result.contains(pid) else { continue }
        result.append(pid)
        pending += children[pid] ?? []
    }
    return result
}

/// Peak RSS (VmHWM) in MiB of a process and all its descendants, summed.
func peakRSS(of root: Int32) -> Double {
    var total = 0.0
    for pid in processTree(root) {
        if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kb = Double(line.split(separator: " ").dropFirst().first ?? "") {
            total += kb / 1024
        }
    }
    return total
}

/// Sends SIGTERM to a process and its descendants, then waits for it.
func terminateTree(_ process: Process) {
    for pid in processTree(process.processIdentifier).reversed() { kill(pid, SIGTERM) }
    process.waitUntilExit()
}

struct WrkResult {
    var requestsPerSecond: Double
    var latency: String
    var requests: Int
    var errors: String
}

func wrk(_ wrkPath: String, url: String, script: URL? = nil) throws -> WrkResult {
    var args = ["-t\(wrkThreads)", "-c\(connections)", "-d\(seconds)s", "--latency"]
    if let script { args += ["-s", script.path] }
    args.append(url)
    let text = try run(wrkPath, args)
    func value(after label: String) -> String? {
        text.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label) }
            .map { $0.trimmingCharacters(in: .whitespaces).dropFirst(label.count).trimmingCharacters(in: .whitespaces) }
    }
    let rps = Double(value(after: "Requests/sec:") ?? "") ?? 0
    let p50 = value(after: "50%") ?? "?"
    let total = text.split(separator: "\n").first { $0.contains("requests in") }
        .flatMap { Int($0.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") } ?? 0
    let errors = [value(after: "Non-2xx or 3xx responses:"), value(after: "Socket errors:")].compactMap { $0 }.joined(separator: "; ")
    return WrkResult(requestsPerSecond: rps, latency: p50, requests: total, errors: errors.isEmpty ? "none" : errors)
}

/// A wrk script that walks a list of paths, one per request, in order.
func pathScript(_ paths: [String], name: String) throws -> URL {
    let url = work.appendingPathComponent("\(name).lua")
    var lua = "local paths = {\n"
    for path in paths { lua += "  \"\(path)\",\n" }
    // Each wrk thread takes every n-th path from its own offset, so no two requests share a path.
    lua += "}\nlocal threads = 0\nlocal counter = 0\n"
    lua += "setup = function(thread) thread:set(\"id\", threads); threads = threads + 1 end\n"
    lua += "request = function()\n  counter = counter + 1\n"
    lua += "  local index = ((counter - 1) * \(wrkThreads) + (id or 0)) % #paths + 1\n"
    lua += "  return wrk.format(\"GET\", paths[index])\nend\n"
    try lua.write(to: url, atomically: true, encoding: .utf8)
    return url
}

// MARK: - Inputs

guard let wrkPath = which(environment["WRK"] ?? "wrk") else {
    print("wrk not found: apt-get install wrk")
    exit(1)
}
try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: work) }
let images = work.appendingPathComponent("images")
try FileManager.default.createDirectory(at: images, withIntermediateDirectories: true)

print("==> making a 2000×2000 (4 MP) JPEG")
let side = 2000
var pixels = [UInt8](repeating: 255, count: side * side * 4)
var seed: UInt32 = 0x9E37_79B9
for y in 0..<side {
    for x in 0..<side {
        seed ^= seed << 13; seed ^= seed >> 17; seed ^= seed << 5
        let noise = Int(seed & 31) - 16
        let offset = (y * side + x) * 4
        let wave = Int(60 * sin(Double(x) / 180) * cos(Double(y) / 140))
        pixels[offset] = UInt8(clamping: x * 255 / side + noise + wave)
        pixels[offset + 1] = UInt8(clamping: y * 255 / side + noise - wave)
        pixels[offset + 2] = UInt8(clamping: (x + y) / 40 % 256 + noise)
    }
}
let photo = try Image(rgbaPixels: pixels, width: side, height: side).encoded(as: .jpeg(quality: 85))
let original = images.appendingPathComponent("photo.jpg")
try photo.write(to: original)
// One copy per uncached request: distinct paths (distinct cache keys). Copies, not hard links:
// halcyon serve refuses local files with more than one link (403 hard_linked). BENCH_LINKS sets
// how many (disk use is that many times the photo); the summary warns when wrk needed more.
let linkCount = Int(environment["BENCH_LINKS"] ?? "") ?? 1500
for index in 0..<linkCount {
    try FileManager.default.copyItem(at: original, to: images.appendingPathComponent(String(format: "p%05d.jpg", index)))
}

// MARK: - Halcyon

let halcyonPort = freePort()
let cacheFolder = work.appendingPathComponent("halcyon-cache")
let halcyon = try start(CommandLine.arguments[0], ["--serve", String(halcyonPort), images.path, cacheFolder.path],
                        log: work.appendingPathComponent("halcyon.log"))
defer { if halcyon.isRunning { halcyon.terminate() } }
let halcyonBase = "http://127.0.0.1:\(halcyonPort)"
func halcyonPath(_ file: String) -> String { "/insecure/w:500/q:80/plain/local:%2F%2F\(file)@jpg" }
guard let (status, thumbnail) = fetch(halcyonBase + halcyonPath("photo.jpg")), status == 200 else {
    print("halcyon serve did not answer; log: \((try? String(contentsOf: work.appendingPathComponent("halcyon.log"), encoding: .utf8)) ?? "")")
    exit(1)
}
let thumbInfo = try ImageDecoder.probe(thumbnail)
print("==> halcyon thumbnail: \(thumbInfo.width)×\(thumbInfo.height), \(thumbnail.count) bytes")

// MARK: - nginx with the same bytes

let halcyonCached = try wrk(wrkPath, url: halcyonBase + halcyonPath("photo.jpg"))
print("halcyon cached: \(halcyonCached)")

var nginxCached: WrkResult?
var nginxRSS = 0.0
if let nginxPath = which(environment["NGINX"] ?? "nginx") {
    let root = work.appendingPathComponent("nginx-root")
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    try thumbnail.write(to: root.appendingPathComponent("thumb.jpg"))
    chmod(work.path, 0o755); chmod(root.path, 0o755); chmod(root.appendingPathComponent("thumb.jpg").path, 0o644)
    let port = freePort()
    let conf = work.appendingPathComponent("nginx.conf")
    let user = getuid() == 0 ? "user root;\n" : ""
    try """
    \(user)worker_processes \(cores);
    daemon off;
    pid \(work.path)/nginx.pid;
    error_log \(work.path)/nginx-error.log;
    events { worker_connections 1024; }
    http {
      access_log off;
      sendfile on;
      tcp_nopush on;
      keepalive_requests 100000;
      client_body_temp_path \(work.path)/nginx-body;
      proxy_temp_path \(work.path)/nginx-proxy;
      fastcgi_temp_path \(work.path)/nginx-fastcgi;
      uwsgi_temp_path \(work.path)/nginx-uwsgi;
      scgi_temp_path \(work.path)/nginx-scgi;
      types { image/jpeg jpg; }
      server {
        listen 127.0.0.1:\(port);
        root \(root.path);
        etag on;
        add_header Cache-Control "public, max-age=31536000";
      }
    }
    """.write(to: conf, atomically: true, encoding: .utf8)
    let nginx = try start(nginxPath, ["-c", conf.path, "-p", work.path], log: work.appendingPathComponent("nginx.log"))
    if let (status, body) = fetch("http://127.0.0.1:\(port)/thumb.jpg"), status == 200, body == thumbnail {
        nginxCached = try wrk(wrkPath, url: "http://127.0.0.1:\(port)/thumb.jpg")
        nginxRSS = peakRSS(of: nginx.processIdentifier)
        print("nginx: \(nginxCached!)")
    } else {
        print("nginx did not serve the thumbnail; skipped")
    }
    terminateTree(nginx)
} else {
    print("nginx not found: apt-get install nginx; skipped")
}

// MARK: - Uncached: halcyon vs thumbor

let halcyonScript = try pathScript((0..<linkCount).map { halcyonPath(String(format: "p%05d.jpg", $0)) }, name: "halcyon")
let halcyonUncached = try wrk(wrkPath, url: halcyonBase, script: halcyonScript)
let halcyonRSS = peakRSS(of: halcyon.processIdentifier)
print("halcyon uncached: \(halcyonUncached)")
let halcyonStop = ContinuousClock.now
terminateTree(halcyon)
print("halcyon serve stopped on SIGTERM in \(ContinuousClock.now - halcyonStop), exit status \(halcyon.terminationStatus)")

var thumborUncached: WrkResult?
var thumborRSS = 0.0
var thumborVersion = "thumbor"
if let thumborPath = which(environment["THUMBOR"] ?? "thumbor") {
    thumborVersion = (try? run(thumborPath, ["--version"]))?.split(separator: "\n").first.map(String.init) ?? "thumbor"
    let port = freePort()
    let conf = work.appendingPathComponent("thumbor.conf")
    try """
    LOADER = 'thumbor.loaders.file_loader'
    FILE_LOADER_ROOT_PATH = '\(images.path)'
    STORAGE = 'thumbor.storages.no_storage'
    RESULT_STORAGE = None
    QUALITY = 80
    ALLOW_UNSAFE_URL = True
    """.write(to: conf, atomically: true, encoding: .utf8)
    let thumbor = try start(thumborPath, ["-p", String(port), "-i", "127.0.0.1", "-c", conf.path, "-l", "error", "--processes", String(cores)],
                            log: work.appendingPathComponent("thumbor.log"))
    if let (status, body) = fetch("http://127.0.0.1:\(port)/unsafe/500x0/photo.jpg"), status == 200 {
        let info = try? ImageDecoder.probe(body)
        print("==> thumbor thumbnail: \(info?.width ?? 0)×\(info?.height ?? 0), \(body.count) bytes")
        let script = try pathScript((0..<linkCount).map { "/unsafe/500x0/" + String(format: "p%05d.jpg", $0) }, name: "thumbor")
        thumborUncached = try wrk(wrkPath, url: "http://127.0.0.1:\(port)", script: script)
        thumborRSS = peakRSS(of: thumbor.processIdentifier)
        print("thumbor uncached: \(thumborUncached!)")
    } else {
        print("thumbor did not answer; skipped. log: \((try? String(contentsOf: work.appendingPathComponent("thumbor.log"), encoding: .utf8)) ?? "")")
    }
    terminateTree(thumbor)
} else {
    print("thumbor not found: pip install thumbor; skipped")
}

// MARK: - Report

func format(_ value: Double) -> String { String(format: "%.1f", value) }
var table = """
| run | server | req/s | p50 latency | ratio (halcyon / other) | peak RSS MiB | requests | errors |
|---|---|---:|---:|---:|---:|---:|---|

"""
func row(_ run: String, _ server: String, _ result: WrkResult?, ratio: String, rss: Double) -> String {
    guard let result else {
        return "| \(run) | \(server) | – | – | – | – | – | not run |\n"
    }
    return "| \(run) | \(server) | \(format(result.requestsPerSecond)) | \(result.latency) | \(ratio) | \(format(rss)) | \(result.requests) | \(result.errors) |\n"
}
let cachedRatio = nginxCached.map { String(format: "%.2f", halcyonCached.requestsPerSecond / max(0.001, $0.requestsPerSecond)) } ?? "–"
let uncachedRatio = thumborUncached.map { String(format: "%.2f", halcyonUncached.requestsPerSecond / max(0.001, $0.requestsPerSecond)) } ?? "–"
table += row("cached 500 px thumbnail", "halcyon serve", halcyonCached, ratio: cachedRatio, rss: halcyonRSS)
table += row("cached 500 px thumbnail", "nginx (same bytes from disk)", nginxCached, ratio: "1.00", rss: nginxRSS)
table += row("uncached 4 MP → 500 px", "halcyon serve", halcyonUncached, ratio: uncachedRatio, rss: halcyonRSS)
table += row("uncached 4 MP → 500 px", "\(thumborVersion) (file loader, \(cores) processes)", thumborUncached, ratio: "1.00", rss: thumborRSS)
let header = """

## ServerBenchmark — wrk -t\(max(1, min(cores, 2))) -c\(connections) -d\(seconds)s on loopback, \(cores) cores

halcyon serve RSS is its peak over the whole run (cached then uncached). Uncached runs use \(linkCount) distinct paths.
\(halcyonUncached.requests > linkCount ? "WARNING: halcyon made more requests than distinct paths; some were cache hits.\n" : "")
"""
print(header)
print(table)
appendToBenchResults(header + "\n" + table)
recordSummary(benchmark: "Server", comparison: "cached 500 px thumbnail, halcyon serve vs nginx (req/s)",
              result: cachedRatio == "–" ? "not run" : "\(cachedRatio)× the throughput", goal: "—", met: nil)
recordSummary(benchmark: "Server", comparison: "uncached 4 MP → 500 px, halcyon serve vs \(thumborVersion) (req/s)",
              result: uncachedRatio == "–" ? "not run" : "\(uncachedRatio)× the throughput", goal: "—", met: nil)
