// Server benchmark, in the shape of imgproxy's image-servers-benchmark, side by side in one run:
//
// - Uncached: the shipped `halcyon serve` binary with its default settings (HALCYON_BIN, started as
//   `halcyon serve --insecure --allow-loopback`) and thumbor 7 (two single-process instances behind
//   the nginx, `least_conn`, as thumbor is deployed; HTTP loader, PIL engine, no storage, no
//   AUTO_WEBP) resize sources fetched from a loopback nginx origin to fit 512×512: JPEG q80,
//   PNG as PNG, WebP q75, AVIF q65 (from the JPEG sources). Two source sets, each its own table:
//   "real", twelve 2560×1600 photographs from Debian's plasma-workspace-wallpapers with PNG and
//   WebP copies of the same pixels (BENCH_PHOTOS, made by scripts/bench-photos.sh), and
//   "generated", 21 photographic-looking 2–12 MP images. Every request has a distinct source path
//   (`/c<cell>x<n>/<file>`, which nginx maps to the file), so no cache answers. Each cell
//   (set × format × clients) runs wrk for BENCH_SECONDS (default 60) per side, the sides
//   alternating which goes first; ROUNDS (default 2) repeats all cells and reports the spread.
//   One-client cells run Halcyon only, for half as long: they measure its wall time per request against its CPU time.
//   Peak RSS is per cell (reset through /proc/PID/clear_refs), summed over each side's process trees;
//   "cores" is each round's req/s × its CPU per request (CPU seconds ÷ wall seconds), the median of the rounds.
// - Output check: dimensions and PSNR of both servers' results against a `vips thumbnail` reference.
// - Cached: one result served repeatedly by halcyon serve vs the same bytes from nginx.
//
// Environment: HALCYON_BIN (the halcyon executable, required), BENCH_PHOTOS (the photographs'
// folder), BENCH_SETS ("real,generated"), THUMBOR, NGINX, WRK (executables), BENCH_SECONDS, ROUNDS,
// BENCH_CLIENTS ("1,2,8"), BENCH_FORMATS ("jpeg,png,webp,avif"), CACHED_SECONDS (20), BENCH_RESULTS,
// BENCH_SUMMARY.
import BenchmarkSupport
import Foundation
import Halcyon
import HalcyonServer

// MARK: - Settings

let environment = ProcessInfo.processInfo.environment
let seconds = Int(environment["BENCH_SECONDS"] ?? "") ?? 60
let rounds = max(1, Int(environment["ROUNDS"] ?? "") ?? 2)
let clientCounts = (environment["BENCH_CLIENTS"] ?? "1,2,8").split(separator: ",").compactMap { Int($0) }
let formats = (environment["BENCH_FORMATS"] ?? "jpeg,png,webp,avif").split(separator: ",").map(String.init)
let cachedSeconds = Int(environment["CACHED_SECONDS"] ?? "") ?? 20
let cores = ProcessInfo.processInfo.activeProcessorCount
let work = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-server-bench-\(getpid())")
let quality = ["jpeg": 80, "png": 0, "webp": 75, "avif": 65]
let sides = ["halcyon serve", "thumbor"]
let setNames = (environment["BENCH_SETS"] ?? "real,generated").split(separator: ",").map(String.init)

guard let halcyonPath = environment["HALCYON_BIN"].flatMap({ FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }) else {
    print("HALCYON_BIN must name the halcyon executable (swift build -c release --product halcyon)")
    exit(1)
}

guard let wrkPath = which(environment["WRK"] ?? "wrk"), let nginxPath = which(environment["NGINX"] ?? "nginx") else {
    print("wrk and nginx are needed: apt-get install wrk nginx")
    exit(1)
}
guard let thumborPath = which(environment["THUMBOR"] ?? "thumbor") else {
    print("thumbor not found: pip install thumbor")
    exit(1)
}
guard let vipsPath = which("vips") else {
    print("the vips CLI is needed for the sources and the output check: apt-get install libvips-tools")
    exit(1)
}
try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: work) }

// MARK: - Sources and the nginx origin

/// One source set: its files, the folder they are in, and how the tables name it.
struct SourceSetRun {
    var name: String
    var title: String
    var folder: URL
    var sources: [SourceImage]
}

var sets: [SourceSetRun] = []
for name in setNames {
    switch name {
    case "real":
        guard let photos = environment["BENCH_PHOTOS"] else {
            print("BENCH_PHOTOS must name the photographs' folder (scripts/bench-photos.sh FOLDER)")
            exit(1)
        }
        let folder = URL(fileURLWithPath: photos)
        let images = try SourceSet.photographs(in: folder)
        sets.append(SourceSetRun(name: name, title: "\(images.count / 3) photographs (Debian's plasma-workspace-wallpapers), each as JPEG, PNG and WebP",
                                 folder: folder, sources: images))
    case "generated":
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-bench-sources-v2")
        print("==> generating the source set in \(folder.path)")
        let images = try SourceSet.make(in: folder, vips: vipsPath)
        sets.append(SourceSetRun(name: name, title: "\(images.count) generated photographic-looking sources, 2–12 MP", folder: folder, sources: images))
    default:
        print("unknown source set \(name) (real, generated)")
        exit(1)
    }
}
// The origin serves every set's files from one folder of links.
let originRoot = work.appendingPathComponent("origin")
try FileManager.default.createDirectory(at: originRoot, withIntermediateDirectories: true)
for set in sets {
    for source in set.sources {
        print("    \(set.name): \(source.name) \(source.width)×\(source.height) \(source.bytes / 1024) KiB")
        try FileManager.default.createSymbolicLink(at: originRoot.appendingPathComponent(source.name),
                                                   withDestinationURL: set.folder.appendingPathComponent(source.name))
    }
}

/// nginx config: the origin (any `/PREFIX/FILE` serves FILE), the cached-bytes server, and the front of the
/// thumbor instances (each request to the one with the fewest in flight).
func nginxConfig(originPort: Int, cachedPort: Int, cachedRoot: URL, thumborPort: Int, thumborInstances: [Int]) -> String {
    let user = getuid() == 0 ? "user root;\n" : ""
    return """
    \(user)worker_processes 1;
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
      types { image/jpeg jpg; image/png png; image/webp webp; image/avif avif; }
      server {
        listen 127.0.0.1:\(originPort);
        root \(originRoot.path);
        rewrite ^/[^/]+/(.+)$ /$1 break;
      }
      server {
        listen 127.0.0.1:\(cachedPort);
        root \(cachedRoot.path);
        etag on;
        add_header Cache-Control "public, max-age=31536000";
      }
      upstream thumbor {
        least_conn;
    \(thumborInstances.map { "    server 127.0.0.1:\($0);" }.joined(separator: "\n"))
        keepalive 16;
      }
      server {
        listen 127.0.0.1:\(thumborPort);
        location / {
          proxy_pass http://thumbor;
          proxy_http_version 1.1;
          proxy_set_header Connection "";
          proxy_read_timeout 300s;
        }
      }
    }
    """
}
let cachedRoot = work.appendingPathComponent("nginx-cached")
try FileManager.default.createDirectory(at: cachedRoot, withIntermediateDirectories: true)
for folder in [work, cachedRoot, originRoot] + sets.map(\.folder) { chmod(folder.path, 0o755) }
let originPort = freePort(), cachedPort = freePort()
let halcyonPort = freePort(), thumborPort = freePort(), thumborInstancePorts = [freePort(), freePort()]
try nginxConfig(originPort: originPort, cachedPort: cachedPort, cachedRoot: cachedRoot,
                thumborPort: thumborPort, thumborInstances: thumborInstancePorts)
    .write(to: work.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
let nginx = try start(nginxPath, ["-c", work.appendingPathComponent("nginx.conf").path, "-p", work.path],
                      log: work.appendingPathComponent("nginx.log"))
defer { terminateTree(nginx) }
/// Stops every server this run started (`exit` skips `defer`), then exits with status 1.
func fail(_ message: String, servers: [Process] = []) -> Never {
    print(message)
    for process in servers + [nginx] where process.isRunning { terminateTree(process) }
    try? FileManager.default.removeItem(at: work)
    exit(1)
}
let warmSource = sets[0].sources[0]
guard let (originStatus, _) = fetch("http://127.0.0.1:\(originPort)/c0x0/\(warmSource.name)"), originStatus == 200 else {
    fail("the nginx origin did not serve the sources")
}

// MARK: - The two servers

let halcyon = try start(halcyonPath, ["serve", "--insecure", "--allow-loopback", "--host", "127.0.0.1", "--port", String(halcyonPort),
                                      "--cache-dir", work.appendingPathComponent("halcyon-cache").path],
                        log: work.appendingPathComponent("halcyon.log"))
defer { if halcyon.isRunning { terminateTree(halcyon) } }
let thumborVersion = (try? run(thumborPath, ["--version"]))?.split(separator: "\n").first.map(String.init) ?? "thumbor"
try """
LOADER = 'thumbor.loaders.http_loader'
STORAGE = 'thumbor.storages.no_storage'
RESULT_STORAGE = None
AUTO_WEBP = False
QUALITY = 80
WEBP_QUALITY = 75
AVIF_QUALITY = 65
ALLOW_UNSAFE_URL = True
""".write(to: work.appendingPathComponent("thumbor.conf"), atomically: true, encoding: .utf8)
let thumbors = try thumborInstancePorts.map { port in
    try start(thumborPath, ["-p", String(port), "-i", "127.0.0.1", "-c", work.appendingPathComponent("thumbor.conf").path,
                            "-l", "error", "--processes", "1"], log: work.appendingPathComponent("thumbor-\(port).log"))
}
defer { for thumbor in thumbors where thumbor.isRunning { terminateTree(thumbor) } }
/// Each side's server processes: halcyon serve, and the thumbor instances.
let servers = [[halcyon], thumbors]

/// The path of one request to a side: the source `/c<cell>/<file>` on the origin, fit in 512×512, the format's quality.
func requestPath(side: Int, format: String, cell: String, file: String) -> String {
    let q = quality[format] ?? 80
    if side == 0 {
        let qualityOption = q > 0 ? "/q:\(q)" : ""
        return "/insecure/rs:fit:512:512\(qualityOption)/plain/http%3A%2F%2F127.0.0.1%3A\(originPort)%2F\(cell)%2F\(file)@\(format == "jpeg" ? "jpg" : format)"
    }
    let qualityFilter = q > 0 ? ":quality(\(q))" : ""
    return "/unsafe/fit-in/512x512/filters:format(\(format))\(qualityFilter)/127.0.0.1:\(originPort)/\(cell)/\(file)"
}
let bases = ["http://127.0.0.1:\(halcyonPort)", "http://127.0.0.1:\(thumborPort)"]

/// The sources of a format's cells in a set: the same format, and the JPEGs for AVIF (the sets have no AVIF).
func cellSources(for format: String, in set: SourceSetRun) -> [SourceImage] {
    let wanted: ImageFormat = switch format { case "png": .png; case "webp": .webp; default: .jpeg }
    return set.sources.filter { $0.format == wanted }
}

// The instances first (nginx would answer 502 while one is starting), then each side's front.
for port in thumborInstancePorts {
    guard let (status, _) = fetch("http://127.0.0.1:\(port)/healthcheck"), status == 200 else {
        let log = (try? String(contentsOf: work.appendingPathComponent("thumbor-\(port).log"), encoding: .utf8)) ?? ""
        fail("thumbor on port \(port) did not answer; its log:\n\(log)", servers: servers.flatMap { $0 })
    }
}
for side in 0..<2 {
    guard let (status, _) = fetch(bases[side] + requestPath(side: side, format: "jpeg", cell: "warm", file: warmSource.name)), status == 200 else {
        let logName = side == 0 ? "halcyon.log" : "thumbor-\(thumborInstancePorts[0]).log"
        let log = (try? String(contentsOf: work.appendingPathComponent(logName), encoding: .utf8)) ?? ""
        fail("\(sides[side]) did not answer; its log:\n\(log)", servers: servers.flatMap { $0 })
    }
}

// MARK: - Output check

print("==> output check against `vips thumbnail` references")
var qualityRows: [String: [QualityRow]] = [:]
for set in sets {
    for format in formats {
        let urls: [(SourceImage) -> String] = (0..<2).map { side in
            { source in bases[side] + requestPath(side: side, format: format, cell: "q", file: source.name) }
        }
        let row = QualityCheck.check(format: format, sources: cellSources(for: format, in: set), folder: set.folder, work: work, urls: urls)
        for problem in row.problems { print("    \(set.name) \(format): \(problem)") }
        qualityRows[set.name, default: []].append(row)
    }
}

// MARK: - Uncached cells

/// A wrk script that gives every request a distinct source path: `/c<cell>x<n>/<file>`, files in turn.
func cellScript(side: Int, format: String, set: SourceSetRun, cell: String) throws -> URL {
    let files = cellSources(for: format, in: set).map(\.name)
    let template = requestPath(side: side, format: format, cell: "CELL", file: "FILE")
    let parts = template.components(separatedBy: "CELL")
    let rest = parts[1].components(separatedBy: "FILE")
    var lua = "local files = {" + files.map { "\"\($0)\"" }.joined(separator: ", ") + "}\n"
    lua += "local counter = 0\nlocal threads = 0\n"
    lua += "setup = function(thread) thread:set(\"id\", threads); threads = threads + 1 end\n"
    lua += "request = function()\n  counter = counter + 1\n  local n = counter * 16 + (id or 0)\n"
    lua += "  local file = files[counter % #files + 1]\n"
    lua += "  return wrk.format(\"GET\", \"\(parts[0])\(cell)x\" .. n .. \"\(rest[0])\" .. file .. \"\(rest[1])\")\nend\n"
    let url = work.appendingPathComponent("\(cell)-\(side).lua")
    try lua.write(to: url, atomically: true, encoding: .utf8)
    return url
}

struct Cell {
    var set: Int
    var format: String
    var clients: Int
    var results: [[WrkResult]] = [[], []]
    var rss: [[Double]] = [[], []]
    var cpu: [[Double]] = [[], []]
    /// CPU seconds ÷ wall seconds of each round: its req/s × its CPU per request.
    var cores: [[Double]] = [[], []]
    /// One client measures Halcyon's wall time against its CPU time; thumbor is compared from two clients on.
    var sides: [Int] { clients == 1 ? [0] : [0, 1] }
    /// wrk's duration: BENCH_SECONDS, half of it for a one-client cell (a ratio of two steady figures, not a comparison).
    var duration: Int { clients == 1 ? max(10, seconds / 2) : seconds }
}

var cells: [Cell] = sets.indices.flatMap { set in
    formats.flatMap { format in clientCounts.map { Cell(set: set, format: format, clients: $0) } }
}
var cellNumber = 0
for round in 0..<rounds {
    for index in cells.indices {
        cellNumber += 1
        let cell = cells[index]
        let order = cellNumber.isMultiple(of: 2) ? cell.sides.reversed() : cell.sides
        for side in order {
            let script = try cellScript(side: side, format: cell.format, set: sets[cell.set], cell: "c\(cellNumber)")
            let pids = servers[side].map(\.processIdentifier)
            pids.forEach(resetPeakRSS(of:))
            let cpuBefore = pids.map(cpuSeconds(of:)).reduce(0, +)
            let result = try wrk(wrkPath, url: bases[side], threads: min(2, cell.clients), connections: cell.clients, seconds: cell.duration, script: script)
            let rss = pids.map(peakRSS(of:)).reduce(0, +)
            let cpu = 1000 * (pids.map(cpuSeconds(of:)).reduce(0, +) - cpuBefore) / Double(max(1, result.requests))
            cells[index].results[side].append(result)
            cells[index].rss[side].append(rss)
            cells[index].cpu[side].append(cpu)
            cells[index].cores[side].append(cpu * result.requestsPerSecond / 1000)
            print("round \(round + 1) \(sets[cell.set].name) \(cell.format) c\(cell.clients) \(sides[side]): \(result), peak RSS \(String(format: "%.0f", rss)) MiB, CPU \(String(format: "%.1f", cpu)) ms/request, \(String(format: "%.2f", cpu * result.requestsPerSecond / 1000)) cores")
            fflush(nil)
        }
    }
}

// MARK: - Cached responses vs nginx

let cachedPath = requestPath(side: 0, format: "jpeg", cell: "cached", file: warmSource.name)
var cachedRows: [(String, WrkResult)] = []
if let (status, body) = fetch(bases[0] + cachedPath), status == 200 {
    try body.write(to: cachedRoot.appendingPathComponent("thumb.jpg"))
    chmod(cachedRoot.appendingPathComponent("thumb.jpg").path, 0o644)
    if let (nginxStatus, same) = fetch("http://127.0.0.1:\(cachedPort)/thumb.jpg"), nginxStatus == 200, same == body {
        for (name, url) in [("halcyon serve (response cache)", bases[0] + cachedPath), ("nginx (same bytes from disk)", "http://127.0.0.1:\(cachedPort)/thumb.jpg")] {
            let result = try wrk(wrkPath, url: url, threads: 2, connections: 16, seconds: cachedSeconds)
            print("cached \(name): \(result)")
            cachedRows.append((name, result))
        }
    }
}
let halcyonStop = ContinuousClock.now
terminateTree(halcyon)
print("halcyon serve stopped on SIGTERM in \(ContinuousClock.now - halcyonStop), exit status \(halcyon.terminationStatus)")

// MARK: - Report

func f1(_ value: Double) -> String { String(format: "%.1f", value) }
func spread(_ values: [Double]) -> String { values.count < 2 ? "" : " (\(f1(values.min() ?? 0))–\(f1(values.max() ?? 0)))" }
func coresSpread(_ values: [Double]) -> String {
    values.count < 2 ? "" : String(format: " (%.2f–%.2f)", values.min() ?? 0, values.max() ?? 0)
}

/// The goal of a format's req/s ratio to thumbor: the JPEG entropy decode both servers run bounds JPEG near imgproxy's 1.54×.
func ratioGoal(_ format: String) -> Double { format == "jpeg" ? 1.5 : 2.5 }

/// The table rows of one cell, and its lines in the summary.
func cellRows(_ cell: Cell, set: SourceSetRun) -> String {
    let rps = (0..<2).map { median(cell.results[$0].map(\.requestsPerSecond)) }
    let rss = (0..<2).map { cell.rss[$0].max() ?? 0 }
    // Each round's own cores and wall time per CPU time, then their median: a product of medians taken from
    // different rounds can pair one round's req/s with another's CPU (and read above the machine's cores).
    let usedCores = median(cell.cores[0])
    let wallPerCPU = median(zip(cell.results[0], cell.cpu[0]).map { $0.requestsPerSecond > 0 && $1 > 0 ? (1000 / $0.requestsPerSecond) / $1 : 0 })
    var rows = ""
    for side in cell.sides {
        let sorted = cell.results[side].sorted { $0.requestsPerSecond < $1.requestsPerSecond }
        let mid = sorted[sorted.count / 2]
        let sideCores = String(format: "%.2f", median(cell.cores[side])) + coresSpread(cell.cores[side])
        let ratio = cell.clients == 1 ? "–" : side == 0 ? String(format: "%.2f", rps[0] / max(0.001, rps[1])) : "1.00"
        let rssRatio = cell.clients == 1 ? "–" : side == 0 ? String(format: "%.2f", rss[0] / max(0.001, rss[1])) : "1.00"
        let wall = cell.clients == 1 ? String(format: "%.2f", wallPerCPU) : ""
        rows += "| \(cell.format) | \(cell.clients) | \(sides[side]) | \(f1(rps[side]))\(spread(cell.results[side].map(\.requestsPerSecond))) | \(mid.p50) | \(mid.p99) | \(f1(median(cell.cpu[side]))) | \(sideCores) | \(wall) | \(f1(rss[side])) | \(mid.errors) | \(ratio) | \(rssRatio) |\n"
    }
    let label = "\(set.name) \(cell.format), \(cell.clients) client\(cell.clients == 1 ? "" : "s")"
    if cell.clients == 1 {
        recordSummary(benchmark: "Server", comparison: "\(label): halcyon wall time per request ÷ its CPU time",
                      result: String(format: "%.2f", wallPerCPU), goal: "≤ 1.15", met: wallPerCPU <= 1.15)
        return rows
    }
    let ratio = rps[0] / max(0.001, rps[1]), rssRatio = rss[0] / max(0.001, rss[1])
    recordSummary(benchmark: "Server", comparison: "\(label): halcyon serve vs \(thumborVersion) (req/s)",
                  result: String(format: "%.2f×", ratio), goal: String(format: "≥ %.1f×", ratioGoal(cell.format)), met: ratio >= ratioGoal(cell.format))
    recordSummary(benchmark: "Server", comparison: "\(label): peak RSS halcyon / thumbor",
                  result: String(format: "%.2f (%.0f vs %.0f MiB)", rssRatio, rss[0], rss[1]), goal: "≤ 1", met: rssRatio <= 1)
    if cell.clients == 2 {
        recordSummary(benchmark: "Server", comparison: "\(label): cores busy (halcyon)",
                      result: String(format: "%.2f", usedCores), goal: "≥ 1.8", met: usedCores >= 1.8)
    }
    return rows
}

var table = ""
for (setIndex, set) in sets.enumerated() {
    table += """

    ## ServerBenchmark (\(set.name) set): uncached, fit in 512×512, \(set.title), from a loopback nginx

    \(cores) cores; wrk \(seconds) s per side and cell (one-client cells \(max(10, seconds / 2)) s), \(rounds) round(s), sides alternating; every request a distinct source URL.
    halcyon serve: the shipped binary, default settings (`--insecure --allow-loopback` for the origin). \(thumborVersion): \(thumbors.count) single-process instances behind nginx (`least_conn`), HTTP loader, PIL engine, no storage, no AUTO_WEBP.
    req/s is the median of the rounds (min–max when more than one); p50/p99 from the median round's wrk; peak RSS is per cell, the process trees summed;
    CPU is the server trees' user + system time per request served (median of the rounds); cores = a round's req/s × its CPU per request, the median of the rounds (the proxying nginx is not counted);
    wall/CPU (one client) = a round's wall time per request (1 / req/s) ÷ its CPU time, the median of the rounds.

    | format | clients | server | req/s | p50 | p99 | CPU ms/req | cores | wall/CPU | peak RSS MiB | errors | req/s ratio | RSS ratio |
    |---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|

    """
    for cell in cells where cell.set == setIndex {
        table += cellRows(cell, set: set)
    }
    table += "\nOutput check: results fetched once per source and format, compared with `vips thumbnail SRC ref.png 512 --height 512`.\n\n"
    table += "| format | server | same size as reference | mean PSNR dB | lowest PSNR dB | mean KiB |\n|---|---|---:|---:|---:|---:|\n"
    for row in qualityRows[set.name] ?? [] { table += row.markdown(servers: sides) }
}

if !cachedRows.isEmpty {
    table += "\nCached response (one 512 px JPEG repeated), wrk -t2 -c16 -d\(cachedSeconds)s:\n\n| server | req/s | p50 | p99 | errors |\n|---|---:|---:|---:|---|\n"
    for (name, result) in cachedRows { table += "| \(name) | \(f1(result.requestsPerSecond)) | \(result.p50) | \(result.p99) | \(result.errors) |\n" }
    if cachedRows.count == 2 {
        let ratio = cachedRows[0].1.requestsPerSecond / max(0.001, cachedRows[1].1.requestsPerSecond)
        table += "\nCached ratio halcyon / nginx: \(String(format: "%.2f", ratio))\n"
        recordSummary(benchmark: "Server", comparison: "cached 512 px JPEG, halcyon serve vs nginx (req/s)",
                      result: String(format: "%.2f×", ratio), goal: "≥ 0.6×", met: ratio >= 0.6)
    }
}
print(table)
appendToBenchResults(table)
