import Foundation
import Halcyon
import HalcyonServer
import Testing

/// Clients that stop reading their answers: the write timeout resets them, and at the cap they make room.
@Suite("Server slow readers", .serialized)
struct ServerSlowReaderTests {
    /// A 1000×1000 noise PNG: its answer is megabytes, more than the socket buffers hold.
    static func bigPNG() throws -> Data {
        try RenderCancellationTests.noise(width: 1000, height: 1000).encoded(as: .png())
    }

    /// A server whose source is ``bigPNG()``, with 30 s header and idle timeouts and `configure`'s settings; the path
    /// of its megabytes-long answer, fetched once on a connection that closes after it (the result is then stored;
    /// with a response cache over four times its size, answers to it are cache hits, given on the event loop).
    static func start(
        _ configure: @escaping (inout ServerConfiguration) -> Void
    ) async throws -> (fixture: ServerFixture, path: String, warm: ServerFixture.Reply) {
        let fixture = try await ServerFixture.start(image: try bigPNG()) { config in
            config.headerTimeout = 30
            config.idleTimeout = 30
            configure(&config)
        }
        let path = fixture.signedPath("f:png", source: fixture.source("/image"))
        let warm = try await fixture.get(path, headers: [("Connection", "close")])
        #expect(warm.status == 200 && warm.body.count > 2_000_000, "answer of \(warm.body.count) bytes")
        return (fixture, path, warm)
    }

    /// Opens a connection with a tiny receive window and pipelines `count` requests for `path` on it, reading nothing.
    static func stall(port: Int, path: String, count: Int) throws -> RawSocket {
        let socket = try #require(RawSocket(port: port, receiveBuffer: 4096))
        socket.send(String(repeating: "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", count: count))
        return socket
    }

    /// Reads `socket` in bursts of `burst` bytes, one every `interval` seconds, until `total` bytes came, the server
    /// closed, or 30 s passed; the bytes read.
    static func readInBursts(_ socket: RawSocket, total: Int, burst: Int, every interval: TimeInterval) async -> Int {
        await offThePool { () -> Int in
            var read = 0
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            let end = Date().addingTimeInterval(30)
            while read < total, Date() < end {
                Thread.sleep(forTimeInterval: interval)
                var chunk = 0
                while chunk < min(burst, total - read) {
                    let count = recv(socket.descriptor, &buffer, buffer.count, 0)
                    guard count > 0 else { return read + chunk }
                    chunk += count
                }
                read += chunk
            }
            return read
        }
    }

    /// Waits up to `seconds` for `condition`.
    static func eventually(_ seconds: Double, _ condition: () -> Bool) async throws -> Bool {
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < end {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    @Test("a client that stops reading is reset once its answers make no progress for the write timeout; its slot is given back")
    func writeTimeoutResets() async throws {
        let (fixture, path, warm) = try await Self.start { config in
            config.writeTimeout = 1
            config.responseCacheMegabytes = 64
        }
        defer { Task { await fixture.stop() } }
        let connections = fixture.server.service.connections
        #expect(try await Self.eventually(2) { connections.openConnections == 0 })
        let sent = ContinuousClock.now
        let socket = try Self.stall(port: fixture.port, path: path, count: 4)
        // A new connection waits for its head at first; once answers come and get stuck, it waits for its client.
        #expect(await offThePool { socket.hasData(within: 5) }, "no answer came")
        #expect(try await Self.eventually(2) { connections.counts == (1, 1) }, "the stalled connection does not count as waiting")
        #expect(await offThePool { socket.resetByPeer(within: 5) }, "a client that read nothing was not reset")
        let elapsed = ContinuousClock.now - sent
        #expect(elapsed >= .milliseconds(900), "reset after \(elapsed), before the write timeout")
        #expect(try await Self.eventually(1) { connections.openConnections == 0 }, "the reset connection still counts")
        let metrics = ServerHostileTrafficTests.metricsText(fixture.server.service)
        #expect(metrics.contains("halcyon_connections_write_timeouts_total 1\n"))
        let after = try await fixture.get(path)
        #expect(after.status == 200 && after.body == warm.body)
        await fixture.stop()
    }

    @Test("a client that reads slowly but steadily (800 KB/s in bursts) keeps its connection past the write timeout")
    func slowReaderKeepsConnection() async throws {
        let (fixture, path, warm) = try await Self.start { config in
            config.writeTimeout = 1
        }
        defer { Task { await fixture.stop() } }
        let socket = try Self.stall(port: fixture.port, path: path, count: 1)
        // 240 KB every 0.3 s. The server's kernel holds 128 KB unsent at most, so the answer moves in the server's
        // buffer at each burst; without that limit it moved only once a third of a send buffer of up to 4 MB was
        // free, over 1.6 s at this pace.
        let received = await Self.readInBursts(socket, total: warm.body.count, burst: 240_000, every: 0.3)
        #expect(received >= warm.body.count, "read \(received) of \(warm.body.count) bytes before the server gave up")
        let metrics = ServerHostileTrafficTests.metricsText(fixture.server.service)
        #expect(metrics.contains("halcyon_connections_write_timeouts_total 0\n"))
        await fixture.stop()
    }

    @Test("a client that trickles (2 KB every 0.5 s through an 8 KB window) keeps its connection past the write timeout")
    func tricklingReaderKeepsConnection() async throws {
        let (fixture, path, _) = try await Self.start { config in
            config.writeTimeout = 2
        }
        defer { Task { await fixture.stop() } }
        let socket = try Self.stall(port: fixture.port, path: path, count: 1)
        // At this pace the 128 KB the server's kernel holds unsent would take half a minute to fall below its
        // wake-up mark, so the server's own buffer would not move for far longer than the write timeout; what the
        // client's kernel acknowledges moves every read.
        let received = await offThePool { () -> Int in
            var total = 0
            var buffer = [UInt8](repeating: 0, count: 2048)
            for _ in 0..<14 {
                Thread.sleep(forTimeInterval: 0.5)
                let count = recv(socket.descriptor, &buffer, buffer.count, 0)
                guard count > 0 else { return total }
                total += count
            }
            return total
        }
        #expect(received >= 14 * 2048 - 2048, "read \(received) bytes before the server gave up")
        #expect(!(await offThePool { socket.resetByPeer(within: 0.1) }), "the trickling reader was reset")
        let metrics = ServerHostileTrafficTests.metricsText(fixture.server.service)
        #expect(metrics.contains("halcyon_connections_write_timeouts_total 0\n"))
        await fixture.stop()
    }

    @Test("an answer still being read when the idle timeout passes, or when its connection is to close, is delivered whole",
          arguments: [(64, "keep-alive"), (0, "close")])
    func answerOutlivesIdleTimeout(responseCacheMegabytes: Int, connection: String) async throws {
        let (fixture, path, warm) = try await Self.start { config in
            config.idleTimeout = 1
            config.responseCacheMegabytes = responseCacheMegabytes
        }
        defer { Task { await fixture.stop() } }
        let socket = try #require(RawSocket(port: fixture.port, receiveBuffer: 65536))
        socket.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: \(connection)\r\n\r\n")
        // 150 KB every 0.1 s: the answer takes about 2 s to read, twice the idle timeout.
        // The head comes too: the whole answer is more than the body.
        let received = await Self.readInBursts(socket, total: warm.body.count + 1, burst: 150_000, every: 0.1)
        #expect(received > warm.body.count, "\(connection): read \(received) bytes of a \(warm.body.count)-byte body and its head")
        // The close that waited for the answer is done once it is out.
        #expect(await offThePool { socket.closedByPeer(within: 3) }, "\(connection): the connection stayed open")
        let connections = fixture.server.service.connections
        #expect(try await Self.eventually(2) { connections.openConnections == 0 })
        await fixture.stop()
    }

    @Test("graceful shutdown ends within its timeout and a second although a client reads none of its answers, and resets it")
    func shutdownWithStalledClient() async throws {
        let (fixture, path, _) = try await Self.start { config in
            config.writeTimeout = 30
            config.shutdownTimeout = 1
        }
        defer { Task { await fixture.stop() } }
        let stalled = try Self.stall(port: fixture.port, path: path, count: 4)
        try await Task.sleep(for: .milliseconds(500))
        let start = ContinuousClock.now
        await fixture.stop()
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < .seconds(4), "shutdown took \(elapsed)")
        #expect(await offThePool { stalled.resetByPeer(within: 3) }, "the stalled connection was closed, not reset")
        stalled.hangUp()
    }

    @Test("graceful shutdown is not held by a client of the metrics port that reads none of its answers")
    func shutdownWithStalledMetricsClient() async throws {
        let fixture = try await ServerFixture.start { config in
            config.metricsPort = 0
            config.writeTimeout = 30
            config.shutdownTimeout = 1
        }
        defer { Task { await fixture.stop() } }
        let port = try #require(fixture.server.metricsPort)
        let socket = try #require(RawSocket(port: port, receiveBuffer: 4096))
        socket.send(String(repeating: "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", count: 400))
        #expect(await offThePool { socket.hasData(within: 5) }, "no answer came")
        try await Task.sleep(for: .milliseconds(500))
        // Unwatched, the connection held the shutdown until its client left: the client leaves after 8 s.
        let watchdog = Task.detached {
            try? await Task.sleep(for: .seconds(8))
            if !Task.isCancelled { socket.hangUp() }
        }
        let start = ContinuousClock.now
        await fixture.stop()
        let elapsed = ContinuousClock.now - start
        watchdog.cancel()
        await watchdog.value
        #expect(elapsed < .seconds(4), "shutdown took \(elapsed)")
        socket.hangUp()
    }

    @Test("at the cap, a connection whose client has not read for a second makes room for a new one, and is reset")
    func stalledConnectionIsDisplaced() async throws {
        let (fixture, path, _) = try await Self.start { config in
            config.maxConnections = 1
            config.writeTimeout = 30
        }
        defer { Task { await fixture.stop() } }
        let connections = fixture.server.service.connections
        #expect(try await Self.eventually(2) { connections.openConnections == 0 })
        let stalled = try Self.stall(port: fixture.port, path: path, count: 4)
        // A new connection waits for its head at first; once answers come and get stuck, it waits for its client.
        #expect(await offThePool { stalled.hasData(within: 5) }, "no answer came")
        #expect(try await Self.eventually(2) { connections.counts == (1, 1) }, "the stalled connection does not count as waiting")
        // The kernel takes what its send buffer holds first (progress); then nothing moves for over a second.
        try await Task.sleep(for: .milliseconds(2000))
        let health = try await fixture.get("/health")
        #expect(health.status == 200, "a new client was refused while the only connection's client read nothing")
        let metrics = ServerHostileTrafficTests.metricsText(fixture.server.service)
        #expect(metrics.contains("halcyon_connections_displaced_total 1\n"))
        // Displaced, it is reset: its unread answers are dropped, not kept for an orderly close.
        #expect(await offThePool { stalled.resetByPeer(within: 3) }, "the displaced connection was not reset")
        stalled.hangUp()
        await fixture.stop()
    }
}
