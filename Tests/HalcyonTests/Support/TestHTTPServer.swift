import Foundation
@testable import Halcyon
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP/1.1 server on 127.0.0.1, on a free port, for tests that need a real socket.
///
/// Serves one image (given at start) on routes that behave well or badly on
/// purpose, and counts what it sees: hits per request target (path and
/// query), requests in flight and their peak, the headers of each request,
/// and how often a client closed the connection while a request was open.
/// Routes (`<id>` is any text, so tests can use distinct URLs):
/// - `/image/<id>`: the image, with `ETag` and `Accept-Ranges`.
/// - `/files/<name>`: the body registered under `name` at start (404 when none).
/// - `/slow/<id>?delay=ms&chunks=n`: head at once, then the image in `n` chunks `delay` apart.
/// - `/delayed/<id>?delay=ms`: the image after `delay`.
/// - `/status/<code>`: that status with a short text body.
/// - `/redirect/<n>`: 302 to `/redirect/<n-1>`; `/redirect/0` is the image. `/loop/a` ↔ `/loop/b`.
/// - `/redirect-to?location=...`: 302 to the given location.
/// - `/truncated/<id>`: announces the image's length, sends half, closes.
/// - `/wrong-length/<id>`: announces 1000 bytes more than it sends, then keeps the connection open.
/// - `/huge/<id>?bytes=n&declare=0|1`: `n` bytes, with Content-Length when `declare=1`, else chunked.
/// - `/gzip/<id>`: the image gzip-encoded (`Content-Encoding: gzip`).
/// - `/auth/<id>`: 401 unless `Authorization` is `Basic user:pass` or `Bearer secret`.
/// - `/range/<id>`: like `/truncated` with `ETag` and `Accept-Ranges`; answers `Range` + matching `If-Range` with 206.
/// - `/empty/<id>`: 200 with an empty body.
/// - `/hang/<id>`: never answers.
/// - `/etag/<id>?v=X`: the image with `ETag: "X"`, `Last-Modified` and `Cache-Control`;
///   304 with no body when `If-None-Match` is `"X"`.
/// - `/flaky/<id>?fail=n`: 503 for the first `n` requests of that target, then the image.
final class TestHTTPServer: Sendable {
    /// The body of the image routes.
    let image: Data
    /// The port the server listens on.
    let port: Int
    private let channel: any Channel
    let recorder: Recorder

    /// What the server saw; one lock.
    final class Recorder: Sendable {
        struct Stats {
            var hits: [String: Int] = [:]
            var headers: [String: [[String: String]]] = [:]
            var inFlight = 0
            var maxInFlight = 0
            var clientClosedWhileOpen = 0
            var requestOrder: [String] = []
            var openConnections = 0
        }

        let stats = Locked(Stats())

        func begin(target: String, headers: HTTPHeaders) {
            var fields: [String: String] = [:]
            for (name, value) in headers { fields[name.lowercased()] = value }
            stats.withLock { stats in
                stats.hits[target, default: 0] += 1
                stats.headers[target, default: []].append(fields)
                stats.requestOrder.append(target)
                stats.inFlight += 1
                stats.maxInFlight = max(stats.maxInFlight, stats.inFlight)
            }
        }

        func connection(opened: Bool) {
            stats.withLock { $0.openConnections += opened ? 1 : -1 }
        }

        func end(clientClosed: Bool) {
            stats.withLock { stats in
                stats.inFlight -= 1
                if clientClosed { stats.clientClosedWhileOpen += 1 }
            }
        }
    }

    private init(image: Data, port: Int, channel: any Channel, recorder: Recorder) {
        self.image = image
        self.port = port
        self.channel = channel
        self.recorder = recorder
    }

    /// Starts a server serving `image`, and `files` under `/files/<name>`.
    static func start(image: Data, files: [String: Data] = [:]) async throws -> TestHTTPServer {
        let recorder = Recorder()
        let gzipped = Gzip.stored(image)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        RouteHandler(image: image, gzipped: gzipped, files: files, recorder: recorder))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else { throw CancellationError() }
        return TestHTTPServer(image: image, port: port, channel: channel, recorder: recorder)
    }

    /// Stops listening; open connections are closed with the event loop's next turn.
    func shutdown() async {
        try? await channel.close()
    }

    // MARK: - Queries

    /// The URL of `target` (a path with an optional query) on this server.
    func url(_ target: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(target)")!
    }

    /// How many requests had exactly this target.
    func hits(_ target: String) -> Int { recorder.stats.withLock { $0.hits[target] ?? 0 } }

    /// Total requests seen.
    var totalHits: Int { recorder.stats.withLock { $0.hits.values.reduce(0, +) } }

    /// The header fields (lowercased names) of each request for `target`, in order.
    func headers(_ target: String) -> [[String: String]] { recorder.stats.withLock { $0.headers[target] ?? [] } }

    /// The most requests that were open at the same time.
    var maxInFlight: Int { recorder.stats.withLock { $0.maxInFlight } }

    /// Requests open right now.
    var inFlight: Int { recorder.stats.withLock { $0.inFlight } }

    /// How often a client closed its connection while a request on it was unanswered or streaming.
    var clientClosedWhileOpen: Int { recorder.stats.withLock { $0.clientClosedWhileOpen } }

    /// Client connections open right now.
    var openConnections: Int { recorder.stats.withLock { $0.openConnections } }

    /// Request targets in arrival order.
    var requestOrder: [String] { recorder.stats.withLock { $0.requestOrder } }

    /// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
    func wait(timeout: TimeInterval = 10, until condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}

// MARK: - Routing

/// Answers one connection's requests; lives on the channel's event loop.
private final class RouteHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let image: Data
    private let gzipped: Data
    private let files: [String: Data]
    private let recorder: TestHTTPServer.Recorder
    private var head: HTTPRequestHead?
    private var open = false
    private var closingOnPurpose = false

    init(image: Data, gzipped: Data, files: [String: Data], recorder: TestHTTPServer.Recorder) {
        self.image = image
        self.gzipped = gzipped
        self.files = files
        self.recorder = recorder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            open = true
            recorder.begin(target: head.uri, headers: head.headers)
        case .body:
            break
        case .end:
            guard let head else { return }
            route(head, context: context)
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        recorder.connection(opened: true)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        recorder.connection(opened: false)
        if open {
            open = false
            recorder.end(clientClosed: !closingOnPurpose)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func route(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let components = URLComponents(string: head.uri)
        let parts = (components?.path ?? head.uri).split(separator: "/").map(String.init)
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let number = { (name: String, fallback: Int) in query[name].flatMap { Int($0) } ?? fallback }
        let imageHeaders = [("Content-Type", "image/png"), ("ETag", "\"v1\""), ("Accept-Ranges", "bytes")]

        switch parts.first ?? "" {
        case "image":
            respond(context, .ok, headers: imageHeaders, body: image)
        case "files":
            if parts.count > 1, let body = files[parts[1]] {
                respond(context, .ok, headers: [("ETag", "\"\(body.count)-\(parts[1])\""), ("Accept-Ranges", "bytes")], body: body)
            } else {
                respond(context, .notFound, headers: [], body: Data("not found".utf8))
            }
        case "slow":
            sendSlowly(context, chunks: max(1, number("chunks", 4)), delay: number("delay", 50))
        case "delayed":
            let loop = context.eventLoop.assumeIsolated()
            loop.scheduleTask(in: .milliseconds(Int64(number("delay", 1000)))) {
                self.respond(context, .ok, headers: imageHeaders, body: self.image)
            }
        case "status":
            let code = parts.count > 1 ? Int(parts[1]) ?? 500 : 500
            respond(context, HTTPResponseStatus(statusCode: code), headers: [], body: Data("status \(code)".utf8))
        case "redirect":
            let remaining = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            if remaining > 0 {
                respond(context, .found, headers: [("Location", "/redirect/\(remaining - 1)")], body: Data("moved".utf8))
            } else {
                respond(context, .ok, headers: imageHeaders, body: image)
            }
        case "redirect-to":
            respond(context, .found, headers: [("Location", query["location"] ?? "/")], body: Data())
        case "loop":
            let next = parts.count > 1 && parts[1] == "a" ? "/loop/b" : "/loop/a"
            respond(context, .movedPermanently, headers: [("Location", next)], body: Data())
        case "truncated":
            sendPartial(context, headers: [("Content-Type", "image/png")])
        case "wrong-length":
            var headers = HTTPHeaders([("Content-Length", String(image.count + 1000))])
            headers.add(name: "Content-Type", value: "image/png")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: image)))), promise: nil)
        case "huge":
            sendHuge(context, bytes: number("bytes", 1 << 20), declare: number("declare", 1) == 1)
        case "gzip":
            respond(context, .ok, headers: [("Content-Type", "image/png"), ("Content-Encoding", "gzip")], body: gzipped)
        case "auth":
            let value = head.headers.first(name: "authorization")
            let basic = "Basic " + Data("user:pass".utf8).base64EncodedString()
            if value == basic || value == "Bearer secret" {
                respond(context, .ok, headers: imageHeaders, body: image)
            } else {
                respond(context, .unauthorized, headers: [("WWW-Authenticate", "Basic realm=\"test\"")], body: Data("no".utf8))
            }
        case "range":
            let etag = "\"r1\""
            if let range = head.headers.first(name: "range"), head.headers.first(name: "if-range") == etag,
               range.hasPrefix("bytes="), range.hasSuffix("-"),
               let start = Int(range.dropFirst(6).dropLast()), start < image.count {
                respond(context, .partialContent, headers: [
                    ("Content-Type", "image/png"), ("ETag", etag), ("Accept-Ranges", "bytes"),
                    ("Content-Range", "bytes \(start)-\(image.count - 1)/\(image.count)"),
                ], body: image.subdata(in: start..<image.count))
            } else {
                sendPartial(context, headers: [("Content-Type", "image/png"), ("ETag", etag), ("Accept-Ranges", "bytes")])
            }
        case "empty":
            respond(context, .ok, headers: [("Content-Type", "image/png")], body: Data())
        case "hang":
            break
        case "etag":
            let etag = "\"\(query["v"] ?? "v1")\""
            if head.headers.first(name: "if-none-match") == etag {
                respond(context, .notModified, headers: [("ETag", etag)], body: Data())
            } else {
                respond(context, .ok, headers: [
                    ("Content-Type", "image/jpeg"), ("ETag", etag),
                    ("Last-Modified", "Wed, 21 Oct 2026 07:28:00 GMT"), ("Cache-Control", "public, max-age=60"),
                ], body: image)
            }
        case "flaky":
            let seen = recorder.stats.withLock { $0.hits[head.uri] ?? 0 }
            if seen <= number("fail", 1) {
                respond(context, .serviceUnavailable, headers: [], body: Data("try again".utf8))
            } else {
                respond(context, .ok, headers: imageHeaders, body: image)
            }
        default:
            respond(context, .notFound, headers: [], body: Data("not found".utf8))
        }
    }

    // MARK: - Writing

    private func respond(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, headers: [(String, String)], body: Data) {
        var fields = HTTPHeaders(headers)
        fields.replaceOrAdd(name: "Content-Length", value: String(body.count))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: fields))), promise: nil)
        if !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        }
        finish(context)
    }

    private func finish(_ context: ChannelHandlerContext) {
        // Counted out before the end is sent, so a client's next request never finds this one still open.
        if open {
            open = false
            recorder.end(clientClosed: false)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Announces the whole image, sends its first half, then closes.
    private func sendPartial(_ context: ChannelHandlerContext, headers: [(String, String)]) {
        var fields = HTTPHeaders(headers)
        fields.replaceOrAdd(name: "Content-Length", value: String(image.count))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: fields))), promise: nil)
        let half = image.prefix(image.count / 2)
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: half)))), promise: nil)
        closingOnPurpose = true
        if open {
            open = false
            recorder.end(clientClosed: false)
        }
        let loop = context.eventLoop.assumeIsolated()
        loop.scheduleTask(in: .milliseconds(20)) { context.close(promise: nil) }
    }

    private func sendSlowly(_ context: ChannelHandlerContext, chunks: Int, delay: Int) {
        var fields = HTTPHeaders([("Content-Type", "image/png"), ("ETag", "\"v1\""), ("Accept-Ranges", "bytes")])
        fields.add(name: "Content-Length", value: String(image.count))
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: fields))), promise: nil)
        let size = (image.count + chunks - 1) / chunks
        let pieces = stride(from: 0, to: image.count, by: max(1, size)).map { image.subdata(in: $0..<min(image.count, $0 + size)) }
        sendPieces(context, pieces[...], delay: delay)
    }

    private func sendPieces(_ context: ChannelHandlerContext, _ pieces: ArraySlice<Data>, delay: Int) {
        let loop = context.eventLoop.assumeIsolated()
        loop.scheduleTask(in: .milliseconds(Int64(delay))) {
            guard context.channel.isActive else { return }
            guard let piece = pieces.first else { return self.finish(context) }
            context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: piece)))), promise: nil)
            self.sendPieces(context, pieces.dropFirst(), delay: delay)
        }
    }

    private func sendHuge(_ context: ChannelHandlerContext, bytes: Int, declare: Bool) {
        var fields = HTTPHeaders([("Content-Type", "image/png")])
        if declare { fields.add(name: "Content-Length", value: String(bytes)) } else { fields.add(name: "Transfer-Encoding", value: "chunked") }
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: fields))), promise: nil)
        sendZeros(context, remaining: bytes)
    }

    private func sendZeros(_ context: ChannelHandlerContext, remaining: Int) {
        guard context.channel.isActive else { return }
        guard remaining > 0 else { return finish(context) }
        let count = min(remaining, 64 * 1024)
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(repeating: 0, count: count)))), promise: promise)
        promise.futureResult.assumeIsolated().whenSuccess { _ in
            self.sendZeros(context, remaining: remaining - count)
        }
    }
}

// MARK: - Gzip

/// A minimal gzip writer (stored deflate blocks) so the gzip route needs no zlib.
enum Gzip {
    static func stored(_ data: Data) -> Data {
        var out = Data([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff])
        let bytes = [UInt8](data)
        var offset = 0
        repeat {
            let count = min(65_535, bytes.count - offset)
            let last: UInt8 = offset + count >= bytes.count ? 1 : 0
            out.append(last)
            out.append(UInt8(count & 0xff))
            out.append(UInt8(count >> 8))
            out.append(UInt8(~count & 0xff))
            out.append(UInt8((~count >> 8) & 0xff))
            out.append(contentsOf: bytes[offset..<offset + count])
            offset += count
        } while offset < bytes.count
        appendLittleEndian(&out, crc32(bytes))
        appendLittleEndian(&out, UInt32(truncatingIfNeeded: bytes.count))
        return out
    }

    private static func appendLittleEndian(_ out: inout Data, _ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8((value >> UInt32(shift)) & 0xff)) }
    }

    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var table = [UInt32](repeating: 0, count: 256)
        for index in 0..<256 {
            var value = UInt32(index)
            for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
            table[index] = value
        }
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8) }
        return crc ^ 0xffff_ffff
    }
}
