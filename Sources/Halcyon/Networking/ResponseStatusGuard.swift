import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// Refuses a response whose status code is below 100 before AsyncHTTPClient reads it.
///
/// AsyncHTTPClient 1.37 takes any status under 200 for an informational (1xx) answer and skips it, while the HTTP
/// decoder (and NIOHTTP2's translation of `:status`) reads a status under 100 as a final answer with a body: the
/// first body part, or the end, then stops the process (a precondition in the client's state machine). An origin
/// answering `HTTP/1.1 099` or `:status: 099` could so stop a server that fetches from it. This handler sits
/// between the response decoder (HTTP/1) or the HTTP/2 stream's translation to HTTP/1 parts and the client's own
/// handler, added through the client's connection and stream initializer hooks on the channel's event loop: it
/// turns such a head into ``InvalidResponseStatus``, closes the connection (HTTP/1) or the stream (HTTP/2) and
/// drops the rest of its input.
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

    /// Adds a guard, and a ``ContentCodingGuard`` after it, right after the response decoder of a new HTTP/1
    /// connection; the connection is used either way (a pipeline without the decoder gets no guard).
    @Sendable static func install(on channel: any Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            guard let decoder = try? pipeline.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self) else { return }
            let statusGuard = ResponseStatusGuard()
            try pipeline.addHandler(statusGuard, position: .after(decoder))
            try pipeline.addHandler(ContentCodingGuard(), position: .after(statusGuard))
        }
    }

    /// Adds a guard, and a ``ContentCodingGuard`` after it, right after the translation of a new HTTP/2 stream's
    /// frames to HTTP/1 parts; the stream is used either way (a pipeline without the translation gets no guard).
    @Sendable static func install(onStream channel: any Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            guard let codec = try? pipeline.handler(type: HTTP2FramePayloadToHTTP1ClientCodec.self) else { return }
            let statusGuard = ResponseStatusGuard()
            try pipeline.addHandler(statusGuard, position: .after(codec))
            try pipeline.addHandler(ContentCodingGuard(), position: .after(statusGuard))
        }
    }
}

/// An HTTP response whose status code is not a valid one (below 100); see ``ResponseStatusGuard``.
struct InvalidResponseStatus: Error, Sendable {
    /// The status code the origin sent.
    let code: Int
}

extension HTTPClient.Configuration {
    /// Puts a `ResponseStatusGuard` on every HTTP/1 connection and every HTTP/2 stream the client opens, so an
    /// origin's invalid status is an error (`invalidHTTPStatusCode`) instead of stopping the process, and a
    /// `ContentCodingGuard`, so a body in a coding the client cannot decode is `unsupportedContentEncoding`
    /// instead of undecoded bytes; initializers already set run after them. Every client that fetches sources needs it: the downloader's own, and those a
    /// gate hands out.
    public mutating func guardResponseStatus() {
        let previous = http1_1ConnectionDebugInitializer
        http1_1ConnectionDebugInitializer = { channel in
            ResponseStatusGuard.install(on: channel).flatMap { previous?(channel) ?? channel.eventLoop.makeSucceededVoidFuture() }
        }
        let previousStream = http2StreamChannelDebugInitializer
        http2StreamChannelDebugInitializer = { channel in
            ResponseStatusGuard.install(onStream: channel).flatMap {
                previousStream?(channel) ?? channel.eventLoop.makeSucceededVoidFuture()
            }
        }
    }
}
