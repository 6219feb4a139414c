import Foundation
import HalcyonRedis
import Testing

/// The client against a real `redis-server` on loopback.
@Suite("Redis client", .serialized)
struct RedisClientTests {
    private static func client(_ server: RedisServerProcess, _ change: (inout RedisConfiguration) -> Void = { _ in }) throws -> RedisClient {
        var configuration = try RedisConfiguration(url: server.url)
        change(&configuration)
        return RedisClient(configuration: configuration)
    }

    @Test("SET, GET, EXISTS, DEL; a missing key is nil; PX expires")
    func roundTrip() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.stop() }
        let client = try Self.client(server)
        try await client.ping()
        try await client.set("a", value: Array("one".utf8))
        #expect(try await client.get("a") == Array("one".utf8))
        #expect(try await client.exists("a"))
        #expect(try await client.get("nope") == nil)
        #expect(try await client.delete(["a", "nope"]) == 1)
        #expect(try await !client.exists("a"))
        let storedAt = ContinuousClock.now
        try await client.set("brief", value: [1], expiresIn: .seconds(1))
        let early = try await client.get("brief")
        if ContinuousClock.now - storedAt < .milliseconds(800) { #expect(early == [1]) }
        try await Task.sleep(for: .milliseconds(1500))
        #expect(try await client.get("brief") == nil)
        await client.shutdown()
        await #expect(throws: RedisError.shutDown) { try await client.ping() }
    }

    @Test("Binary values: every byte value, CR/LF and RESP-looking text, and 5 MB, byte for byte")
    func binary() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.stop() }
        let client = try Self.client(server) { $0.commandTimeout = .seconds(5) }
        let every = (0...255).map(UInt8.init) + Array("\r\n$5\r\n*2\r\n".utf8)
        try await client.set("bytes", value: every)
        #expect(try await client.get("bytes") == every)
        let big = (0..<5_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        try await client.set("big", value: big)
        #expect(try await client.get("big") == big)
        await client.shutdown()
    }

    @Test("200 concurrent commands over a pool of 2 pipelined connections all get their own reply")
    func pipelining() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.stop() }
        let client = try Self.client(server) { $0.poolSize = 2 }
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let value = Array("value-\(index)".utf8)
                    guard (try? await client.set("k\(index)", value: value)) != nil else { return 1 }
                    return (try? await client.get("k\(index)")) == value ? 0 : 1
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        #expect(Int(server.cli(["CLIENT", "LIST"]).split(separator: "\n").count) <= 3, "more connections than the pool allows")
        await client.shutdown()
    }

    @Test("Redis killed: calls fail fast; restarted on the same port: the same client works again by itself")
    func killAndRestart() async throws {
        let server = try await RedisServerProcess.start()
        let client = try Self.client(server) { $0.maximumBackoff = .milliseconds(400) }
        try await client.set("before", value: [1])
        server.kill()
        for _ in 0..<5 {
            let started = ContinuousClock.now
            do {
                _ = try await client.get("before")
                Issue.record("a killed server answered")
            } catch {
                guard case .connectionFailed = error else { Issue.record("\(error)"); continue }
            }
            #expect(ContinuousClock.now - started < .milliseconds(500), "a call waited on a dead server")
        }
        let again = try await RedisServerProcess.start(port: server.port)
        defer { again.stop() }
        var recovered = false
        for _ in 0..<40 where !recovered {
            recovered = (try? await client.set("after", value: [2])) != nil
            if !recovered { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(recovered, "the client never reconnected")
        #expect(try await client.get("after") == [2])
        await client.shutdown()
    }

    @Test("Wrong password, no password and the right one")
    func authentication() async throws {
        let server = try await RedisServerProcess.start(password: "p4ss")
        defer { server.stop() }
        let wrong = RedisClient(configuration: try RedisConfiguration(url: "redis://:nope@127.0.0.1:\(server.port)"))
        await #expect { try await wrong.ping() } throws: { error in
            if case .authenticationFailed = error as? RedisError { return true }
            return false
        }
        let none = RedisClient(configuration: try RedisConfiguration(url: "redis://127.0.0.1:\(server.port)"))
        await #expect { try await none.get("x") } throws: { error in
            if case .authenticationFailed(let message) = error as? RedisError { return message.hasPrefix("NOAUTH") }
            return false
        }
        let right = try Self.client(server)
        try await right.ping()
        for client in [wrong, none, right] { await client.shutdown() }
    }

    @Test("A paused server: the command times out on time, a cancelled call returns at once, and the client recovers")
    func timeoutAndCancel() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.stop() }
        let client = try Self.client(server) { $0.commandTimeout = .milliseconds(300) }
        try await client.ping()
        _ = server.cli(["CLIENT", "PAUSE", "1500", "ALL"])
        let started = ContinuousClock.now
        await #expect(throws: RedisError.timeout) { _ = try await client.get("x") }
        let waited = ContinuousClock.now - started
        // Bounded well below the 1.5 s pause (sanitizer runs are slow): the timeout fired, not the pause's end.
        #expect(waited >= .milliseconds(280) && waited < .milliseconds(1200), "\(waited)")

        let call = Task { try await client.get("y") }
        try await Task.sleep(for: .milliseconds(100))
        let cancelledAt = ContinuousClock.now
        call.cancel()
        await #expect(throws: RedisError.cancelled) { _ = try await call.value }
        #expect(ContinuousClock.now - cancelledAt < .milliseconds(400), "the pause had 1.3 s left")

        try await Task.sleep(for: .milliseconds(1500))
        try await client.set("later", value: [7])
        #expect(try await client.get("later") == [7])
        await client.shutdown()
    }
}
