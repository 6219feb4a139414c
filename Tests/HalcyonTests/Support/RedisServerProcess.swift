import Foundation
import Halcyon

/// A real `redis-server` on 127.0.0.1 for one test: a free port (or a given
/// one), no persistence, optionally a password. Killed by ``stop()`` or
/// ``kill()``; `.ci/run` installs the server, and a missing one fails the test
/// with a message saying so.
final class RedisServerProcess: Sendable {
    struct Missing: Error, CustomStringConvertible {
        var description: String { "redis-server is not installed (apt-get install redis-server; .ci/run does it)" }
    }

    struct NotReady: Error, CustomStringConvertible {
        let port: Int
        var description: String { "redis-server on port \(port) did not answer PING within 5 s" }
    }

    let port: Int
    let password: String?
    private let process: Process

    /// `redis://[:password@]127.0.0.1:port/0`.
    var url: String { "redis://" + (password.map { ":\($0)@" } ?? "") + "127.0.0.1:\(port)/0" }

    private init(port: Int, password: String?, process: Process) {
        self.port = port
        self.password = password
        self.process = process
    }

    /// Starts a server and waits until it answers PING.
    static func start(password: String? = nil, port: Int? = nil) async throws -> RedisServerProcess {
        guard let binary = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        }) else { throw Missing() }
        let chosen = try port ?? freeLoopbackPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        var arguments = ["--port", String(chosen), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                         "--daemonize", "no", "--loglevel", "warning", "--dir", FileManager.default.temporaryDirectory.path]
        if let password { arguments += ["--requirepass", password] }
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = RedisServerProcess(port: chosen, password: password, process: process)
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if server.cli(["PING"]).contains("PONG") { return server }
            try await Task.sleep(for: .milliseconds(50))
        }
        server.stop()
        throw NotReady(port: chosen)
    }

    /// The number of keys in database 0 (`DBSIZE`), -1 when the server does not answer.
    func keyCount() -> Int {
        Int(cli(["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Runs `redis-cli` against this server and returns its output.
    func cli(_ command: [String]) -> String {
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        var arguments = ["-h", "127.0.0.1", "-p", String(port)]
        if let password { arguments += ["--no-auth-warning", "-a", password] }
        cli.arguments = arguments + command
        let pipe = Pipe()
        cli.standardOutput = pipe
        cli.standardError = FileHandle.nullDevice
        guard (try? cli.run()) != nil else { return "" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        cli.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// SIGKILL, then waits for the process to end.
    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Stops the server if it still runs.
    func stop() { kill() }

    /// A port on 127.0.0.1 that was free a moment ago.
    static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Missing() }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Int32 in
                guard bind(fd, raw, length) == 0 else { return -1 }
                return getsockname(fd, raw, &length)
            }
        }
        guard bound == 0 else { throw Missing() }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
