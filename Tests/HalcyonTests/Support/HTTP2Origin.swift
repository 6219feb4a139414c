import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// A loopback HTTP/2 origin over TLS (ALPN `h2`, a fixed self-signed certificate for `localhost`) that answers
/// every request with one fixed status, header fields and body: for answers over HTTP/2 a real server would never send, such as
/// `:status: 099`. Clients must not verify its certificate.
final class HTTP2Origin: Sendable {
    /// The port it listens on.
    let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    /// Starts an origin answering `:status` `status` with `body`.
    static func start(status: String, body: String) async throws -> HTTP2Origin {
        try await start(status: status, bytes: Array(body.utf8))
    }

    /// Starts an origin answering `:status` `status`, then `fields`, with `bytes` as the body.
    static func start(status: String, fields: [(String, String)] = [], bytes: [UInt8]) async throws -> HTTP2Origin {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(certificate.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKey.utf8), format: .pem)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }.flatMap {
                    channel.configureHTTP2Pipeline(mode: .server) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(Answer(status: status, fields: fields, body: bytes))
                        }
                    }.map { _ in }
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else { throw CancellationError() }
        return HTTP2Origin(port: port, channel: channel)
    }

    /// The URL of `path` on this origin.
    func url(_ path: String) -> String {
        "https://127.0.0.1:\(port)\(path)"
    }

    /// Stops listening.
    func shutdown() async {
        try? await channel.close()
    }

    private final class Answer: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload
        let status: String
        let fields: [(String, String)]
        let body: [UInt8]

        init(status: String, fields: [(String, String)], body: [UInt8]) {
            self.status = status
            self.fields = fields
            self.body = body
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .headers(let request) = unwrapInboundIn(data), request.endStream else { return }
            let headers = HPACKHeaders([(":status", status)] + fields + [("content-length", String(body.count))])
            context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
            let buffer = context.channel.allocator.buffer(bytes: body)
            context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
        }
    }

    /// A self-signed P-256 certificate for `localhost`, valid until 2126.
    private static let certificate = """
-----BEGIN CERTIFICATE-----
MIIBgDCCASWgAwIBAgIUNAhheQwvfTtVCzHgUoNkYEmso7swCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNjE0MDYxOFoYDzIxMjYxMTAy
MTQwNjE4WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAASjOq4gF8abL942beBvWexazLpYFKP8EO5X9Fnknhq+OdbCkklKZde9
8rjOAqWnuUa6lo5MhQ/QfZrW9sEsYWPuo1MwUTAdBgNVHQ4EFgQU0x/fc64F9vdH
J0ELDxSuvH9BlPgwHwYDVR0jBBgwFoAU0x/fc64F9vdHJ0ELDxSuvH9BlPgwDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEAiAVbPIfht8IuN91NdSQN
YmIDcegUEn4ha1LjXihHYzACIQCPU1Ydv26CZKtseqcjS6AHyHyo0njJZAVHzJIC
mwXmrw==
-----END CERTIFICATE-----
"""

    private static let privateKey = """
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgnsgmOKYz2ZShmiCg
gDDl+2QG9A6BaesEzkekWEN659qhRANCAASjOq4gF8abL942beBvWexazLpYFKP8
EO5X9Fnknhq+OdbCkklKZde98rjOAqWnuUa6lo5MhQ/QfZrW9sEsYWPu
-----END PRIVATE KEY-----
"""
}
