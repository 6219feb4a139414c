import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

/// HTTP/1 connection persistence (`ConnectionStateMachine`'s keep-alive rules), over raw sockets: a request that does not keep the
/// connection gets `Connection: close` and the connection ends at once, not at the idle timeout (10 s here).
@Suite("Server: keep-alive and Connection: close")
struct ServerKeepAliveTests {
    typealias Raw = ServerCachedHitTests

    /// Sends `request` on a new connection; returns the bytes received and whether the server closed the
    /// connection within 3 s of answering.
    static func askOnce(_ port: Int, _ request: String) async throws -> (data: Data, closed: Bool) {
        let socket = try #require(RawSocket(port: port))
        defer { socket.hangUp() }
        return await offThePool {
            guard socket.send(request) else { return (Data(), false) }
            let data = socket.receive(timeout: 5) { Raw.responses($0).count >= 1 }
            return (data, socket.closedByPeer(within: 3))
        }
    }

    static func statusLine(_ data: Data) -> String {
        String(decoding: data.prefix { $0 != 13 }, as: UTF8.self)
    }

    @Test("HTTP/1.0 without keep-alive: an HTTP/1.0 answer with Connection: close, and the connection ends")
    func http10Closes() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let health = try await Self.askOnce(fixture.port, "GET /health HTTP/1.0\r\n\r\n")
        #expect(Self.statusLine(health.data) == "HTTP/1.0 200 OK")
        #expect(Raw.responses(health.data).first?.headers["connection"] == "close")
        #expect(health.closed, "the connection stayed open after an HTTP/1.0 answer")

        let path = fixture.signedPath("w:24", source: fixture.source("/image/ten"))
        let image = try await Self.askOnce(fixture.port, "GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        let answer = try #require(Raw.responses(image.data).first)
        #expect(answer.status == 200 && answer.headers["transfer-encoding"] == nil && !answer.body.isEmpty)
        #expect(image.closed)
        await fixture.stop()
    }

    @Test("Connection: close in any spelling ends the connection after the answer, which says so")
    func connectionCloseAnySpelling() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        for value in ["Close", "keep-alive, close", "close"] {
            let reply = try await Self.askOnce(fixture.port, "GET /health HTTP/1.1\r\nHost: a\r\nConnection: \(value)\r\n\r\n")
            #expect(Self.statusLine(reply.data) == "HTTP/1.1 200 OK", "\(value)")
            #expect(Raw.responses(reply.data).first?.headers["connection"] == "close", "\(value)")
            #expect(reply.closed, "Connection: \(value) left the connection open")
        }
        await fixture.stop()
    }

    @Test("A request sent after one that closed the connection is not waited for: the connection ends within the header timeout")
    func requestAfterCloseEnds() async throws {
        let fixture = try await ServerFixture.start { config in
            config.headerTimeout = 1
            config.idleTimeout = 30
        }
        defer { Task { await fixture.stop() } }
        let connections = fixture.server.service.connections
        for pipelined in [true, false] {
            let socket = try #require(RawSocket(port: fixture.port))
            let closing = "GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", next = "GET /health HTTP/1.1\r\nHost: a\r\n\r\n"
            socket.send(pipelined ? closing + next : closing)
            let reply = await offThePool { socket.receive(timeout: 5) { Raw.responses($0).count >= 1 } }
            #expect(Self.statusLine(reply) == "HTTP/1.1 200 OK")
            if !pipelined { socket.send(next) }
            // Its output is closed at once; the connection ends within the header timeout.
            #expect(try await ServerSlowReaderTests.eventually(3) { connections.openConnections == 0 }, "pipelined: \(pipelined)")
            socket.hangUp()
            #expect(try await ServerSlowReaderTests.eventually(1) { connections.openConnections == 0 })
        }
        await fixture.stop()
    }

    @Test("Persistent connections stay: HTTP/1.1 by default, HTTP/1.0 with keep-alive, routed answers and cached hits")
    func persistentConnectionsStay() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:24", source: fixture.source("/image/kept"))
        for (version, extra) in [("HTTP/1.1", ""), ("HTTP/1.0", "Connection: keep-alive\r\n")] {
            let socket = try #require(RawSocket(port: fixture.port))
            let request = "GET \(path) \(version)\r\nHost: 127.0.0.1\r\n\(extra)\r\n"
            // The first answer is routed (or a hit after the first version's run); the second is a cached hit.
            var etag = ""
            for round in 0..<2 {
                let data = await offThePool { socket.send(request) ? socket.receive(timeout: 5) { Raw.responses($0).count >= 1 } : Data() }
                let answer = Raw.responses(data).first
                #expect(Self.statusLine(data).hasPrefix(version) && answer?.status == 200, "\(version) round \(round)")
                if version == "HTTP/1.0" { #expect(answer?.headers["connection"] == "keep-alive", "round \(round)") }
                etag = answer?.headers["etag"] ?? ""
            }
            // A 304 has no body, so it needs no length to keep the connection.
            let revalidate = "GET \(path) \(version)\r\nHost: 127.0.0.1\r\n\(extra)If-None-Match: \(etag)\r\n\r\n"
            let data = await offThePool {
                socket.send(revalidate) ? socket.receive(timeout: 5) { $0.range(of: Data("\r\n\r\n".utf8)) != nil } : Data()
            }
            #expect(Self.statusLine(data).hasPrefix("\(version) 304"), "\(String(decoding: data, as: UTF8.self))")
            if version == "HTTP/1.0" {
                #expect(String(decoding: data, as: UTF8.self).lowercased().contains("connection: keep-alive"))
            }
            #expect(await offThePool { !socket.closedByPeer(within: 0.5) }, "\(version): the connection was closed")
            socket.hangUp()
        }
        await fixture.stop()
    }
}
