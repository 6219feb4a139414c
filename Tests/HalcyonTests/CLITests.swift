import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
@testable import Halcyon

/// Runs the built `halcyon` executable.
struct CLIRun {
    let exitCode: Int32
    let stdout: String
    let stderr: String

    static func executable() -> URL? {
        builtExecutableURL(named: "halcyon")
    }

    static func run(
        _ arguments: [String], cacheHome: URL, workingDirectory: URL? = nil, stdin: Data? = nil, unsetting: Set<String> = []
    ) async throws -> CLIRun {
        let binary = try #require(executable(), "the halcyon executable is not built")
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CACHE_HOME"] = cacheHome.path
        process.environment = environment.filter { !unsetting.contains($0.key) }
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        let (stdout, stderr) = await Task.detached {
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (stdout, stderr)
        }.value
        return CLIRun(exitCode: process.terminationStatus,
                      stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Standard output parsed as one JSON object.
    func json() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
        return try #require(object as? [String: Any])
    }
}

/// A scratch folder for one CLI test.
struct CLIScratch {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-cli-\(UUID().uuidString)")
    var cache: URL { root.appendingPathComponent("cache") }
    var output: URL { root.appendingPathComponent("out") }
    func remove() { try? FileManager.default.removeItem(at: root) }

    /// Writes `files` into the folder, then starts `halcyon serve --insecure` on a free loopback port with the
    /// folder as its local root and `cache` as its cache; `unsetting` leaves variables out of its environment.
    func serve(_ files: [String: Data], unsetting: Set<String> = []) async throws -> ServeProcess {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        for (name, bytes) in files { try bytes.write(to: root.appendingPathComponent(name)) }
        return try await ServeProcess.start(
            ["serve", "--insecure", "--host", "127.0.0.1", "--port", "0", "--local-root", root.path, "--cache-dir", cache.path],
            in: root, unsetting: unsetting)
    }
}

@Suite("halcyon command-line tool")
struct CLITests {
    @Test("version, help and exit codes documented")
    func versionAndHelp() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let version = try await CLIRun.run(["version"], cacheHome: scratch.cache)
        #expect(version.exitCode == 0)
        #expect(version.stdout.hasPrefix("halcyon \(HalcyonVersion.string) (libvips 8."))
        let help = try await CLIRun.run(["--help"], cacheHome: scratch.cache)
        #expect(help.exitCode == 0)
        for word in ["fetch", "prefetch", "process", "cache", "64", "65", "66", "69"] {
            #expect(help.stdout.contains(word), "help lacks \(word)")
        }
    }

    @Test("fetch: network, then memory in the same run, then disk in the next; JSON shape")
    func fetch() async throws {
        let server = try await TestHTTPServer.start(image: TestImages.encodedGradient(.png(), width: 120, height: 80))
        defer { Task { await server.shutdown() } }
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let url = server.url("/image/cli").absoluteString
        let first = try await CLIRun.run(["fetch", url, url, "-p", "resize(60x40,force)", "-o", scratch.output.path], cacheHome: scratch.cache)
        #expect(first.exitCode == 0, "\(first.stderr)")
        let lines = first.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first?.contains("  network  ") == true)
        #expect(lines.last?.contains("  memory  ") == true)
        #expect(lines.first?.contains("60x40") == true)
        let second = try await CLIRun.run(["fetch", url, "-p", "resize(60x40,force)", "--json", "-o", scratch.output.appendingPathComponent("x.webp").path],
                                          cacheHome: scratch.cache)
        #expect(second.exitCode == 0, "\(second.stderr)")
        let results = try #require(try second.json()["results"] as? [[String: Any]])
        #expect(results.count == 1)
        #expect(results[0]["cacheType"] as? String == "disk")
        #expect(results[0]["ok"] as? Bool == true)
        #expect(results[0]["width"] as? Int == 60)
        #expect(results[0]["format"] as? String == "webp")
        let written = try Data(contentsOf: scratch.output.appendingPathComponent("x.webp"))
        #expect(ImageFormat(sniffing: written) == .webp)
        #expect(server.hits("/image/cli") == 1)
    }

    @Test("fetch failures: one clear line and the documented exit code each")
    func fetchFailures() async throws {
        let server = try await TestHTTPServer.start(image: Data("<html>hello</html>".utf8))
        defer { Task { await server.shutdown() } }
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let cases: [([String], Int32, String)] = [
            (["fetch", "ftp://example.com/a.png"], 64, "not an http"),
            (["fetch", server.url("/image/a").absoluteString, "-p", "blur(x)"], 64, "character 6"),
            (["fetch", "http://127.0.0.1:1/unreachable.png"], 69, "connection refused"),
            (["fetch", server.url("/image/html").absoluteString], 65, "not an image"),
            (["fetch", server.url("/status/404").absoluteString], 69, "HTTP 404"),
            (["fetch", server.url("/image/miss").absoluteString, "--only-from-cache"], 66, "not in the cache"),
            (["fetch", scratch.root.appendingPathComponent("missing.png").path], 66, "missing.png"),
        ]
        for (arguments, code, text) in cases {
            let run = try await CLIRun.run(arguments + ["-o", scratch.output.path], cacheHome: scratch.cache)
            #expect(run.exitCode == code, "\(arguments): \(run.stderr)")
            let errorLines = run.stderr.split(separator: "\n")
            #expect(errorLines.count == 1, "\(arguments): \(run.stderr)")
            #expect(run.stderr.hasPrefix("halcyon: ") && run.stderr.contains(text), "\(arguments): \(run.stderr)")
        }
        let json = try await CLIRun.run(["fetch", server.url("/status/500").absoluteString, "--json"], cacheHome: scratch.cache)
        #expect(json.exitCode == 69)
        let result = try #require((try json.json()["results"] as? [[String: Any]])?.first)
        #expect(result["ok"] as? Bool == false)
        #expect((result["error"] as? [String: Any])?["code"] as? String == "http-status")
    }

    @Test("prefetch: list from a file and stdin, plain lines, summary, non-zero on failure, JSON")
    func prefetch() async throws {
        let server = try await TestHTTPServer.start(image: TestImages.encodedGradient(.jpeg(), width: 40, height: 30))
        defer { Task { await server.shutdown() } }
        let scratch = CLIScratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(at: scratch.root, withIntermediateDirectories: true)
        let list = scratch.root.appendingPathComponent("urls.txt")
        let urls = (1...3).map { server.url("/image/p\($0)").absoluteString }
        try ("# images\n" + urls.joined(separator: "\n") + "\n\n").write(to: list, atomically: true, encoding: .utf8)
        let run = try await CLIRun.run(["prefetch", "--from", list.path, "--concurrency", "2"], cacheHome: scratch.cache)
        #expect(run.exitCode == 0, "\(run.stderr)")
        #expect(run.stdout.components(separatedBy: "completed  ").count - 1 == 3)
        #expect(run.stdout.contains("prefetched 3: 3 completed, 0 skipped, 0 failed"))
        let again = try await CLIRun.run(["prefetch", "--from", "-", "--json", server.url("/status/404").absoluteString],
                                         cacheHome: scratch.cache, stdin: Data(urls.joined(separator: "\n").utf8))
        #expect(again.exitCode == 69)
        let json = try again.json()
        #expect((json["skipped"] as? [String])?.count == 3)
        #expect((json["failed"] as? [[String: Any]])?.first?["code"] as? String == "http-status")
        #expect(server.hits("/image/p1") == 1)
    }

    @Test("cache info, clean, path and clear")
    func cacheCommands() async throws {
        let server = try await TestHTTPServer.start(image: TestImages.encodedGradient(.png(), width: 20, height: 20))
        defer { Task { await server.shutdown() } }
        let scratch = CLIScratch()
        defer { scratch.remove() }
        _ = try await CLIRun.run(["prefetch", server.url("/image/c1").absoluteString, server.url("/image/c2").absoluteString, "--name", "mine"],
                                 cacheHome: scratch.cache)
        let info = try await CLIRun.run(["cache", "info", "--name", "mine", "--json"], cacheHome: scratch.cache)
        #expect(info.exitCode == 0)
        let details = try info.json()
        #expect(details["entries"] as? Int == 2)
        #expect(details["expired"] as? Int == 0)
        #expect((details["bytes"] as? Int ?? 0) > 0)
        let path = try await CLIRun.run(["cache", "path", "--name", "mine"], cacheHome: scratch.cache)
        #expect(path.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == scratch.cache.appendingPathComponent("halcyon/mine").path)
        let clean = try await CLIRun.run(["cache", "clean", "--name", "mine"], cacheHome: scratch.cache)
        #expect(clean.exitCode == 0 && clean.stdout.contains("removed 0 expired"))
        let clear = try await CLIRun.run(["cache", "clear", "--name", "mine", "--json"], cacheHome: scratch.cache)
        #expect(try clear.json()["removed"] as? Int == 2)
        let after = try await CLIRun.run(["cache", "info", "--name", "mine", "--json"], cacheHome: scratch.cache)
        #expect(try after.json()["entries"] as? Int == 0)
    }

    @Test("process: a file through a chain; a bad chain points at the token")
    func process() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(at: scratch.root, withIntermediateDirectories: true)
        let input = scratch.root.appendingPathComponent("in.png")
        try TestImages.encodedGradient(.png(), width: 100, height: 50).write(to: input)
        let output = scratch.root.appendingPathComponent("out.webp")
        let run = try await CLIRun.run(["process", input.path, output.path, "-p", "resize(50x50,fit)|>round(5)"], cacheHome: scratch.cache)
        #expect(run.exitCode == 0, "\(run.stderr)")
        let image = try ImageDecoder.decode(Data(contentsOf: output))
        #expect(image.width == 50 && image.height == 25 && image.originalFormat == .webp)
        let bad = try await CLIRun.run(["process", input.path, output.path, "-p", "resize(50x50)|>sparkle"], cacheHome: scratch.cache)
        #expect(bad.exitCode == 64)
        #expect(bad.stderr.contains("character 16") && bad.stderr.contains("unknown step \"sparkle\""))
    }

    @Test("process: a folder runs several files at once; lines in the folder's order; the first failure's exit code")
    func processFolder() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(at: scratch.root, withIntermediateDirectories: true)
        let names = ["a.jpg", "b.png", "c.jpg", "d.webp", "e.png"]
        for (index, name) in names.enumerated() {
            let format: ImageEncodingFormat = name.hasSuffix(".jpg") ? .jpeg(quality: 85) : name.hasSuffix(".png") ? .png() : .webp(quality: 80)
            try TestImages.encodedGradient(format, width: 200 + index * 40, height: 120).write(to: scratch.root.appendingPathComponent(name))
        }
        try Data("not an image".utf8).write(to: scratch.root.appendingPathComponent("broken.jpg"))
        let output = scratch.root.appendingPathComponent("out")
        for jobs in ["1", "3"] {
            try? FileManager.default.removeItem(at: output)
            let run = try await CLIRun.run(["process", scratch.root.path, output.path, "-p", "downsample(64x64)", "--jobs", jobs],
                                           cacheHome: scratch.cache)
            #expect(run.exitCode == 65, "jobs \(jobs): \(run.stderr)")
            #expect(run.stderr.contains("broken.jpg") && run.stderr.split(separator: "\n").count == 1, "jobs \(jobs): \(run.stderr)")
            let printed = run.stdout.split(separator: "\n").compactMap { line in line.split(separator: " ").first.map { URL(fileURLWithPath: String($0)).lastPathComponent } }
            #expect(printed == names, "jobs \(jobs): lines in the folder's order: \(run.stdout)")
            for (index, name) in names.enumerated() {
                let image = try ImageDecoder.decode(Data(contentsOf: output.appendingPathComponent(name)))
                #expect(image.width == 64 && image.height < 64, "\(name) (\(200 + index * 40)x120): \(image.width)x\(image.height)")
            }
        }
        let budget = try await CLIRun.run(["process", scratch.root.path, output.path, "-p", "downsample(64x64)", "--memory-budget", "1"],
                                          cacheHome: scratch.cache)
        #expect(budget.exitCode == 65 && budget.stdout.split(separator: "\n").count == names.count,
                "a budget smaller than one file still runs every file, one at a time: \(budget.stdout) \(budget.stderr)")
    }
}

@Suite("halcyon serve from the command line")
struct CLIServeTests {
    @Test("--print-config shows the effective values; no key and no --insecure is refused")
    func printConfig() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let printed = try await CLIRun.run(["serve", "--insecure", "--port", "0", "--max-in-flight", "3", "--print-config"], cacheHome: scratch.cache)
        #expect(printed.exitCode == 0, "\(printed.stderr)")
        let config = try printed.json()
        #expect(config["insecure"] as? Bool == true)
        #expect(config["maxInFlight"] as? Int == 3)
        let refused = try await CLIRun.run(["serve", "--port", "0"], cacheHome: scratch.cache)
        #expect(refused.exitCode != 0)
        #expect(refused.stderr.contains("HALCYON_KEY"), "\(refused.stderr)")
    }

    @Test("starts on a free port, answers /health and an image, stops cleanly on SIGTERM")
    func startAndStop() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let serve = try await scratch.serve(["a.png": TestImages.encodedGradient(.png(), width: 40, height: 20)])
        defer { serve.terminateIfRunning() }
        let bound = serve.port
        #expect(serve.logText.contains("listening on 127.0.0.1:\(bound)"), "\(serve.logText)")
        let health = try await httpGet("http://127.0.0.1:\(bound)/health")
        #expect(String(decoding: health, as: UTF8.self).contains("ok"))
        let image = try await httpGet("http://127.0.0.1:\(bound)/insecure/rs:fit:20:20/plain/local:///a.png")
        let decoded = try ImageDecoder.decode(image)
        #expect(decoded.width == 20 && decoded.height == 10)
        let exited = await serve.stop()
        #expect(exited == 0)
    }
}

/// The body of a GET on loopback, through AsyncHTTPClient's shared client.
func httpGet(_ url: String) async throws -> Data {
    let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
    let body = try await response.body.collect(upTo: 10 << 20)
    return Data(buffer: body)
}
