import Foundation

/// `halcyon serve` as a child process for one test: its output goes to a log file in `folder`, and the
/// port is read from its `listening on` line. ``stop()`` sends SIGTERM and returns the exit status.
struct ServeProcess {
    struct DidNotStart: Error, CustomStringConvertible {
        let log: String
        var description: String { "no 'listening on' line within 15 s; log:\n\(log)" }
    }

    struct Missing: Error {}

    let process: Process
    let port: Int
    let log: URL

    /// Starts `halcyon` with `arguments` (and `environment` over this process's) and waits up to 15 s for its port.
    static func start(
        _ arguments: [String], in folder: URL, environment: [String: String] = [:], unsetting: Set<String> = []
    ) async throws -> ServeProcess {
        guard let binary = CLIRun.executable() else { throw Missing() }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }.filter { !unsetting.contains($0.key) }
        let log = folder.appendingPathComponent("serve.log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        for _ in 0..<150 {
            try await Task.sleep(for: .milliseconds(100))
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            // Only a whole line counts: the log may be read while a line is half written.
            if let range = text.range(of: #"listening on [^ ]*:(\d+)\n"#, options: .regularExpression),
               let port = Int(text[range].dropLast().split(separator: ":").last ?? "") {
                return ServeProcess(process: process, port: port, log: log)
            }
        }
        process.terminate()
        throw DidNotStart(log: (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    /// What the server has written so far.
    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// SIGTERM without waiting, for `defer` after a test that may leave early.
    func terminateIfRunning() {
        if process.isRunning { process.terminate() }
    }

    /// SIGTERM, then the exit status once the process has ended.
    func stop() async -> Int32 {
        if process.isRunning { process.terminate() }
        return await Task.detached { () -> Int32 in
            process.waitUntilExit()
            return process.terminationStatus
        }.value
    }
}
