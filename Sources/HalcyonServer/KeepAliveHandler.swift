import NIOCore
import NIOHTTP1

/// Applies HTTP/1's rules for keeping a connection open, which Hummingbird's
/// request loop leaves out: it closes only after a request whose
/// `Connection` is exactly `close`, so an HTTP/1.0 request without
/// `keep-alive`, or `Connection: Close`, was answered as HTTP/1.1 and then
/// held open until the idle timeout.
///
/// Sits between NIO's HTTP/1 request decoder and response encoder and the
/// conversion to HTTP types, where the request's version is still known
/// (requests may be pipelined: answers come in request order). A request that does
/// not keep the connection (NIO's `isKeepAlive`) reaches Hummingbird with
/// `Connection: close`, so the loop ends after its answer, and the answer
/// says `Connection: close`. An HTTP/1.0 request is answered as HTTP/1.0,
/// so the encoder never uses chunked framing it cannot read; one that asked
/// for `keep-alive` is told `keep-alive` when its answer is delimited (a
/// length, or no body: `HEAD`, 204, 304), and otherwise the answer ends with
/// the connection's output; the connection then ends when the client closes
/// it or the header timeout passes.
final class KeepAliveHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What an unanswered request asked for, oldest first (answers come in request order).
    private var waiting = CircularBuffer<(version: HTTPVersion, keepAlive: Bool, isHEAD: Bool)>()
    /// The answer being written ends with the connection's output.
    private var closeAfterAnswer = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        let keepAlive = head.isKeepAlive
        waiting.append((head.version, keepAlive, head.method == .HEAD))
        guard !keepAlive else {
            context.fireChannelRead(data)
            return
        }
        var closing = head
        closing.headers.replaceOrAdd(name: "connection", value: "close")
        context.fireChannelRead(wrapInboundOut(.head(closing)))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            // An answer no request head reached (a parse error's 400) goes out as it is.
            guard head.status.code >= 200, let request = waiting.popFirst() else {
                context.write(data, promise: promise)
                return
            }
            closeAfterAnswer = !(request.keepAlive && head.isKeepAlive)
            // The usual case: an HTTP/1.1 answer that keeps the connection goes out unchanged.
            guard closeAfterAnswer || request.version != .http1_1 else {
                context.write(data, promise: promise)
                return
            }
            if request.version == .http1_0 {
                head.version = .http1_0
                // An HTTP/1.0 body without a length ends where the connection does.
                let bodiless = request.isHEAD || head.status == .noContent || head.status == .notModified
                if !bodiless, !head.headers.contains(name: "content-length") { closeAfterAnswer = true }
                head.headers.replaceOrAdd(name: "connection", value: closeAfterAnswer ? "close" : "keep-alive")
            } else if closeAfterAnswer {
                head.headers.replaceOrAdd(name: "connection", value: "close")
            }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            guard closeAfterAnswer else {
                context.write(data, promise: promise)
                return
            }
            closeAfterAnswer = false
            let written = promise ?? context.eventLoop.makePromise()
            context.writeAndFlush(data, promise: written)
            // Output only: the client still reads the answer; Hummingbird ends the connection when its input ends.
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(mode: .output, promise: nil) }
        }
    }
}
