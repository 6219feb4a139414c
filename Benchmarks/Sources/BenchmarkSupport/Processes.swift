import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Processes

/// The absolute path of an executable on PATH (plus /usr/sbin and /sbin), or nil.
public func which(_ name: String) -> String? {
    if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
    let found = (try? run("/bin/sh", ["-c", "PATH=\"$PATH:/usr/sbin:/sbin\" command -v \(name)"]))?
        .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    return found.hasPrefix("/") ? found : nil
}

/// Runs a program to its end and returns its standard output and error together.
@discardableResult
public func run(_ path: String, _ args: [String]) throws -> String {
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

/// Starts a program in the background with its output going to `log`.
public func start(_ path: String, _ args: [String], log: URL, environment: [String: String]? = nil) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = args
    if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    FileManager.default.createFile(atPath: log.path, contents: nil)
    let handle = try FileHandle(forWritingTo: log)
    process.standardOutput = handle
    process.standardError = handle
    try process.run()
    return process
}

/// A free TCP port on 127.0.0.1 (bound, read, released).
public func freePort() -> Int {
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

/// A process and all its descendants, from /proc.
public func processTree(_ root: Int32) -> [Int32] {
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
public func peakRSS(of root: Int32) -> Double {
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

/// CPU time (user + system) in seconds used so far by a process tree's live processes, from /proc.
public func cpuSeconds(of root: Int32) -> Double {
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    var total = 0.0
    for pid in processTree(root) {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3 (index 0 here), utime 14 (index 11), stime 15 (index 12).
        if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
            total += (user + system) / ticks
        }
    }
    return total
}

/// Resets the peak RSS of a process tree to its current RSS (`/proc/PID/clear_refs`, value 5).
public func resetPeakRSS(of root: Int32) {
    for pid in processTree(root) {
        if let handle = FileHandle(forWritingAtPath: "/proc/\(pid)/clear_refs") {
            handle.write(Data("5".utf8))
            handle.closeFile()
        }
    }
}

/// Sends SIGTERM to a process and its descendants, then waits for it.
public func terminateTree(_ process: Process) {
    for pid in processTree(process.processIdentifier).reversed() { kill(pid, SIGTERM) }
    process.waitUntilExit()
}

// MARK: - HTTP

/// GETs a URL (retrying while the server starts); the status and body, or nil.
public func fetch(_ url: String, attempts: Int = 100) -> (Int, Data)? {
    for _ in 0..<attempts {
        let semaphore = DispatchSemaphore(value: 0)
        let box = FetchBox()
        guard let target = URL(string: url) else { return nil }
        var request = URLRequest(url: target)
        request.timeoutInterval = 60
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
final class FetchBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (Int, Data)?
    func set(_ new: (Int, Data)) { lock.lock(); value = new; lock.unlock() }
    func get() -> (Int, Data)? { lock.lock(); defer { lock.unlock() }; return value }
}

// MARK: - wrk

/// One wrk run's figures.
public struct WrkResult: CustomStringConvertible, Sendable {
    public var requestsPerSecond: Double
    public var p50: String
    public var p99: String
    public var requests: Int
    public var errors: String
    public var description: String { "\(String(format: "%.1f", requestsPerSecond)) req/s, p50 \(p50), p99 \(p99), \(requests) requests, errors: \(errors)" }
}

/// Runs wrk with `threads` threads and `connections` connections for `seconds` against `url`, optionally with a Lua script.
public func wrk(_ wrkPath: String, url: String, threads: Int, connections: Int, seconds: Int, script: URL? = nil) throws -> WrkResult {
    var args = ["-t\(threads)", "-c\(connections)", "-d\(seconds)s", "--timeout", "30s", "--latency"]
    if let script { args += ["-s", script.path] }
    args.append(url)
    let text = try run(wrkPath, args)
    func value(after label: String) -> String? {
        text.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label) }
            .map { $0.trimmingCharacters(in: .whitespaces).dropFirst(label.count).trimmingCharacters(in: .whitespaces) }
    }
    let rps = Double(value(after: "Requests/sec:") ?? "") ?? 0
    let total = text.split(separator: "\n").first { $0.contains("requests in") }
        .flatMap { Int($0.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") } ?? 0
    let errors = [value(after: "Non-2xx or 3xx responses:").map { "non-2xx \($0)" }, value(after: "Socket errors:")]
        .compactMap { $0 }.joined(separator: "; ")
    return WrkResult(requestsPerSecond: rps, p50: value(after: "50%") ?? "?", p99: value(after: "99%") ?? "?",
                     requests: total, errors: errors.isEmpty ? "none" : errors)
}
