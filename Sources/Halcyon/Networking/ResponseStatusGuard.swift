import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// Refuses an HTTP/1 response whose status code is below 100 before AsyncHTTPClient reads it.
///
/// AsyncHTTPClient 1.37 takes any status under 200 for an informational (1xx) answer and skips it, while the HTTP
/// decoder reads a status under 100 as a final answer with a body: the first body part, or the end, then stops the
/// process (a precondition in the client's state machine). An origin answering `HTTP/1.1 099` could so stop a
/// server that fetches from it. This handler sits between the response decoder and the client's own handler (added
/// through the client's connection initializer hook, on the connection's event loop): it turns such a head into
/// ``InvalidResponseStatus``, closes the connection and drops the rest of its input.
final class ResponseStatusGuard: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if case .head(let head) = unwrapInboundIn(data), head.status.code < 100 {
            refused = true
            context.fireErrorCaught(InvalidResponseStatus(code: Int(head.status.code)))
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    /// Adds a guard right after the response decoder of a new HTTP/1 connection; the connection is used either way
    /// (a pipeline without the decoder gets no guard).
    @Sendable static func install(on channel: any Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            guard let decoder = try? pipeline.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self) else { return }
            try pipeline.addHandler(ResponseStatusGuard(), position: .after(decoder))
        }
    }
}

/// An HTTP response whose status code is not a valid one (below 100); see ``ResponseStatusGuard``.
struct InvalidResponseStatus: Error, Sendable {
    /// The status code the origin sent.
    let code: Int
}

extension HTTPClient.Configuration {
    /// Puts a ``ResponseStatusGuard`` on every connection the client opens, so an origin's invalid status line is
    /// an error (`invalidHTTPStatusCode`) instead of stopping the process; an HTTP/1 initializer already set runs
    /// after it. Every client that fetches sources needs it: the downloader's own, and those a gate hands out.
    ///
    /// Also limits the client to HTTP/1.1: over HTTP/2 the same status (`:status: 099`) reaches the same trap,
    /// and the guard is not placed on HTTP/2 streams.
    public mutating func guardResponseStatus() {
        let previous = http1_1ConnectionDebugInitializer
        http1_1ConnectionDebugInitializer = { channel in
            ResponseStatusGuard.install(on: channel).flatMap { previous?(channel) ?? channel.eventLoop.makeSucceededVoidFuture() }
        }
        httpVersion = .http1Only
    }
}
