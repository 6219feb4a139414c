import Foundation
import Halcyon
import NIOCore
import NIOPosix

/// A loopback origin that answers with raw bytes: for answers a real HTTP server would never send, such as a
/// status line `HTTP/1.1 099`, or connections closed at moments a real server only reaches by chance.
final class RawHTTPOrigin: Sendable {
    /// What to send for the request for `path`, the `index`-th (from 0) on its connection: raw bytes, or nil to
    /// close the connection without answering.
    typealias Script = @Sendable (_ path: String, _ index: Int) -> [UInt8]?

    /// A raw response: `head` (status line and fields, without the blank line) with `Content-Length` and `body`.
    static func answer(_ head: String, body: Data = Data()) -> [UInt8] {
        Array("\(head)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + Array(body)
    }

    /// The port it listens on.
    let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    /// Starts an origin that sends `response` (raw bytes) to each connection once it has read a request's bytes,
    /// then closes it.
    static func start(response: String) async throws -> RawHTTPOrigin {
        try await start(responseBytes: Array(response.utf8))
    }

    /// Like ``start(response:)`` with bytes that need not be text.
    static func start(responseBytes bytes: [UInt8]) async throws -> RawHTTPOrigin {
        try await start { channel in
            try channel.pipeline.syncOperations.addHandler(Answer(bytes: bytes))
        }
    }

    /// Starts an origin that answers each request head (a request without a body) as `script` says and keeps the
    /// connection open until `script` returns nil.
    static func start(script: @escaping Script) async throws -> RawHTTPOrigin {
        try await start { channel in
            try channel.pipeline.syncOperations.addHandler(ScriptedAnswers(script: script))
        }
    }

    private static func start(
        _ install: @escaping @Sendable (any Channel) throws -> Void
    ) async throws -> RawHTTPOrigin {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try install(channel) }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else { throw CancellationError() }
        return RawHTTPOrigin(port: port, channel: channel)
    }

    /// Runs `body` with a new downloader (5 s timeout) for this origin, then shuts both down, also when `body` throws.
    func withDownloader(name: String, _ body: (ImageDownloader) async throws -> Void) async rethrows {
        let downloader = ImageDownloader(name: name)
        downloader.downloadTimeout = 5
        do {
            try await body(downloader)
        } catch {
            await downloader.shutdown()
            await shutdown()
            throw error
        }
        await downloader.shutdown()
        await shutdown()
    }

    /// The URL of `path` on this origin.
    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// Stops listening.
    func shutdown() async {
        try? await channel.close()
    }

    private final class Answer: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let bytes: [UInt8]
        var answered = false

        init(bytes: [UInt8]) { self.bytes = bytes }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !answered else { return }
            answered = true
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes))).whenComplete { _ in
                context.close(promise: nil)
            }
        }
    }

    private final class ScriptedAnswers: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let script: Script
        var pending: [UInt8] = []
        var index = 0

        init(script: @escaping Script) { self.script = script }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            pending.append(contentsOf: buffer.readableBytesView)
            while let end = headEnd() {
                let head = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeFirst(end + 4)
                let path = head.split(separator: " ", maxSplits: 2).dropFirst().first.map(String.init) ?? "/"
                defer { index += 1 }
                guard let answer = script(path, index) else {
                    context.close(promise: nil)
                    return
                }
                context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: answer)), promise: nil)
            }
        }

        /// Where the first complete request head ends (the index of its blank line), if one has arrived.
        private func headEnd() -> Int? {
            guard pending.count >= 4 else { return nil }
            for start in 0...(pending.count - 4)
            where pending[start] == 13 && pending[start + 1] == 10 && pending[start + 2] == 13 && pending[start + 3] == 10 {
                return start
            }
            return nil
        }
    }
}
