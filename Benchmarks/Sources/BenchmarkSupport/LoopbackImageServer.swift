import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP/1.1 server on 127.0.0.1 serving `/img/<n>` from memory: body `n` modulo the body count,
/// with Content-Length, a Content-Type sniffed from the bytes, and keep-alive.
public final class LoopbackImageServer: Sendable {
    /// The port it listens on.
    public let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    /// Starts serving `bodies` on a free port.
    public static func start(bodies: [[UInt8]]) async throws -> LoopbackImageServer {
        let buffers = bodies.map { ByteBuffer(bytes: $0) }
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.backlog, value: 512)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(BodyHandler(bodies: buffers))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else { throw CancellationError() }
        return LoopbackImageServer(port: port, channel: channel)
    }

    /// The URL string of image `index`.
    public func url(_ index: Int) -> String { "http://127.0.0.1:\(port)/img/\(index)" }

    /// Stops listening.
    public func shutdown() async {
        try? await channel.close()
    }
}

/// Answers one connection's requests on its event loop.
private final class BodyHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let bodies: [ByteBuffer]
    private var uri = ""

    init(bodies: [ByteBuffer]) { self.bodies = bodies }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            uri = head.uri
        case .body:
            break
        case .end:
            guard let index = uri.split(separator: "/").last.flatMap({ Int($0) }), index >= 0, !bodies.isEmpty else {
                let head = HTTPResponseHead(version: .http1_1, status: .notFound, headers: ["Content-Length": "0"])
                context.write(wrapOutboundOut(.head(head)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            }
            let body = bodies[index % bodies.count]
            let type = body.getInteger(at: body.readerIndex, as: UInt8.self) == 0xFF ? "image/jpeg" : "image/png"
            let head = HTTPResponseHead(
                version: .http1_1, status: .ok,
                headers: ["Content-Length": String(body.readableBytes), "Content-Type": type])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
