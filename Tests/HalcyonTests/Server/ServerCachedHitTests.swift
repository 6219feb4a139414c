import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

/// Response cache hits (the image route's first step, the one path every hit takes), checked over raw sockets: the
/// same answers as the router gives, in request order when pipelined, counted, and subject to the idle timeout.
@Suite("Server: cached hits")
struct ServerCachedHitTests {
    /// One response read from a raw HTTP/1.1 stream.
    struct RawResponse {
        let status: Int
        let headers: [String: String]
        let body: Data
    }

    /// Splits `data` into complete responses framed by `Content-Length`; `bodiless[i]` marks answers to HEAD.
    static func responses(_ data: Data, bodiless: [Bool] = []) -> [RawResponse] {
        var result: [RawResponse] = []
        var rest = data[...]
        while let end = rest.range(of: Data("\r\n\r\n".utf8)) {
            let lines = String(decoding: rest[rest.startIndex..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            guard let statusLine = lines.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else { break }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let noBody = status == 304 || (bodiless.indices.contains(result.count) && bodiless[result.count])
            let length = noBody ? 0 : Int(headers["content-length"] ?? "0") ?? 0
            guard rest[end.upperBound...].count >= length else { break }
            result.append(RawResponse(status: status, headers: headers, body: Data(rest[end.upperBound..<end.upperBound + length])))
            rest = rest[(end.upperBound + length)...]
        }
        return result
    }

    /// Sends `requests` in one write on a new connection and reads `count` responses.
    static func exchange(_ port: Int, _ requests: String, count: Int, bodiless: [Bool] = []) async throws -> [RawResponse] {
        let socket = try #require(RawSocket(port: port))
        defer { socket.hangUp() }
        let (sent, data) = await offThePool {
            (socket.send(requests), socket.receive(timeout: 10) { responses($0, bodiless: bodiless).count >= count })
        }
        #expect(sent)
        return responses(data, bodiless: bodiless)
    }

    /// Sends `request` on `socket` and reads one response (off the cooperative pool).
    static func ask(_ socket: RawSocket, _ request: String) async -> [RawResponse] {
        let data = await offThePool { socket.send(request) ? socket.receive(timeout: 5) { responses($0).count >= 1 } : Data() }
        return responses(data)
    }

    static func get(_ path: String, _ extra: String = "", method: String = "GET") -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(extra)\r\n"
    }

    @Test("A hit gives the router's bytes and headers, 304 for its ETag and no body to HEAD, and is counted")
    func sameAnswers() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:24", source: fixture.source("/image/hit"))
        let first = try await fixture.get(path)
        #expect(first.status == 200)
        let etag = try #require(first.header("etag"))
        let requests = Self.get(path) + Self.get(path, "If-None-Match: \(etag)\r\n") + Self.get(path, method: "HEAD")
        let answers = try await Self.exchange(fixture.port, requests, count: 3, bodiless: [false, false, true])
        try #require(answers.count == 3, "\(answers.count) answers")
        #expect(answers.map(\.status) == [200, 304, 200])
        #expect(answers[0].body == first.body)
        for name in ["etag", "content-type", "cache-control", "last-modified", "x-content-type-options", "content-security-policy"] {
            #expect(answers[0].headers[name] == first.header(name), "\(name)")
        }
        #expect(answers.allSatisfy { $0.headers["date"]?.hasSuffix(" GMT") == true }, "every answer has a Date")
        #expect(answers[1].headers["etag"] == etag && answers[1].body.isEmpty)
        #expect(answers[2].headers["content-length"] == String(first.body.count) && answers[2].body.isEmpty)
        let metrics = String(decoding: try await fixture.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"halcyon_requests_total{route="image",status="200"} 3"#))
        #expect(metrics.contains(#"halcyon_requests_total{route="image",status="304"} 1"#))
        #expect(metrics.contains(#"halcyon_cache_results_total{type="response"} 3"#))
        await fixture.stop()
    }

    @Test("Pipelined behind a request the router is still answering, a hit waits its turn")
    func pipelinedOrder() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let cached = fixture.signedPath("w:24", source: fixture.source("/image/cached"))
        let warm = try await fixture.get(cached)
        let etag = try #require(warm.header("etag"))
        let slow = fixture.signedPath("w:20", source: fixture.source("/slow/first?delay=100&chunks=3"))
        let answers = try await Self.exchange(fixture.port, Self.get(slow) + Self.get(cached), count: 2)
        try #require(answers.count == 2, "\(answers.count) answers")
        #expect(answers.map(\.status) == [200, 200])
        #expect(answers[0].headers["etag"] != etag, "the slow request's answer comes first")
        #expect(answers[1].headers["etag"] == etag && answers[1].body == warm.body)
        await fixture.stop()
    }

    /// How many answers came from the response cache, read from `/metrics`.
    static func responseHits(_ fixture: ServerFixture) async throws -> Int {
        let text = String(decoding: try await fixture.get("/metrics").body, as: UTF8.self)
        let prefix = #"halcyon_cache_results_total{type="response"} "#
        let line = text.split(separator: "\n").first { $0.hasPrefix(prefix) }
        return line.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
    }

    @Test("A client that does not read gets backpressure: hits stop once the connection takes no more writes")
    func backpressure() async throws {
        var pixels = [UInt8](repeating: 255, count: 512 * 512 * 4)
        var seed: UInt32 = 3
        for index in pixels.indices where index % 4 != 3 {
            seed = seed &* 1_103_515_245 &+ 12345
            pixels[index] = UInt8(truncatingIfNeeded: seed >> 24)
        }
        let noise = try Image(rgbaPixels: pixels, width: 512, height: 512).encoded(as: .png())
        let fixture = try await ServerFixture.start(image: noise) { $0.responseCacheMegabytes = 64 }
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:512", source: fixture.source("/image/noise"), ext: "png")
        let warm = try await fixture.get(path)
        #expect(warm.status == 200 && warm.body.count > 500_000, "\(warm.body.count) bytes")
        let socket = try #require(RawSocket(port: fixture.port))
        // About 60 KB of requests: they fit in the socket buffers, so the send returns though nothing is read.
        let requests = String(repeating: Self.get(path), count: 400)
        #expect(await offThePool { socket.send(requests) })
        // Hummingbird's request loop hands answers to the channel's async writer, which takes them until the event
        // loop reports the channel unwritable: how many get in first depends on scheduling (7-96 alone, up to 228
        // under the parallel suites). What must hold is that answering stops: the count settles below the 400 sent.
        try await Task.sleep(for: .seconds(2))
        let answered = try await Self.responseHits(fixture)
        try await Task.sleep(for: .seconds(1))
        let later = try await Self.responseHits(fixture)
        socket.hangUp()
        #expect(answered > 0 && answered < 400 && later == answered,
                "\(answered), then \(later), of 400 answered to a client that reads nothing")
        #expect(try await fixture.get(path).status == 200, "the server still answers")
        await fixture.stop()
    }

    @Test("After a request asks to close the connection, nothing more is answered on it")
    func nothingAfterClose() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:24", source: fixture.source("/image/closing"))
        #expect(try await fixture.get(path).status == 200)
        let socket = try #require(RawSocket(port: fixture.port))
        defer { socket.hangUp() }
        #expect(await Self.ask(socket, Self.get(path, "Connection: close\r\n")).map(\.status) == [200])
        let again = Self.get(path)
        _ = await offThePool { socket.send(again) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await Self.responseHits(fixture) == 1, "only the closing request was answered")
        await fixture.stop()
    }

    @Test("An expired URL is refused, not answered from the response cache")
    func expiredURL() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let expires = Int(Date().timeIntervalSince1970) + 2
        let path = fixture.signedPath("w:24/exp:\(expires)", source: fixture.source("/image/expiring"))
        #expect(try await fixture.get(path).status == 200)
        #expect(try await Self.exchange(fixture.port, Self.get(path), count: 1).first?.status == 200, "a hit before it expires")
        while Date().timeIntervalSince1970 <= Double(expires) + 0.2 { try await Task.sleep(for: .milliseconds(100)) }
        let after = try await Self.exchange(fixture.port, Self.get(path), count: 1)
        #expect(after.first?.status == 404, "\(after.map(\.status))")
        let routed = try await fixture.get(path)
        #expect(routed.status == 404 && routed.errorCode == "expired")
        await fixture.stop()
    }

    @Test("Hits keep a connection open past the idle timeout; idle, it still closes; Connection: close closes after the answer")
    func idleTimeout() async throws {
        let fixture = try await ServerFixture.start { $0.idleTimeout = 1 }
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:24", source: fixture.source("/image/idle"))
        #expect(try await fixture.get(path).status == 200)
        let socket = try #require(RawSocket(port: fixture.port))
        defer { socket.hangUp() }
        let started = ContinuousClock.now
        var statuses: [Int] = []
        while ContinuousClock.now - started < .milliseconds(2400) {
            statuses += await Self.ask(socket, Self.get(path)).map(\.status)
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(statuses.count >= 6 && statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(await offThePool { socket.closedByPeer(within: 3) }, "an idle connection is closed after the idle timeout")

        let closing = try #require(RawSocket(port: fixture.port))
        defer { closing.hangUp() }
        #expect(await Self.ask(closing, Self.get(path, "Connection: close\r\n")).first?.status == 200)
        #expect(await offThePool { closing.closedByPeer(within: 2) })
        await fixture.stop()
    }
}
