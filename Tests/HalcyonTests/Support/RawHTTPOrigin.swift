import Foundation
import NIOCore
import NIOPosix

/// A loopback origin that answers every connection's first bytes with one fixed, raw response and then closes:
/// for answers a real HTTP server would never send, such as a status line `HTTP/1.1 099`.
final class RawHTTPOrigin: Sendable {
    /// The port it listens on.
    let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    /// Starts an origin that sends `response` (raw bytes) to each connection once it has read a request's bytes.
    static func start(response: String) async throws -> RawHTTPOrigin {
        let bytes = Array(response.utf8)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Answer(bytes: bytes))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else { throw CancellationError() }
        return RawHTTPOrigin(port: port, channel: channel)
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
}
