import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes

/// Answers a repeated image request from the response cache on the
/// connection's event loop, before Hummingbird's async request loop, router
/// and middleware see it: a hit costs one lookup and three writes instead of
/// two task switches and the middleware chain.
///
/// It answers only a bodiless `GET` or `HEAD` without `Connection: close`,
/// only when no earlier request on the connection is still being answered
/// by the router (so pipelined answers keep their order), only while the
/// connection takes writes (a client that does not read gets Hummingbird's
/// backpressure, not a growing write queue), and never after a request asked
/// to close the connection. Every other request, and every miss, goes on to
/// Hummingbird unchanged, where
/// ``CachedResponseMiddleware`` gives the same answer. A hit is counted and
/// logged as the request log middleware does. Safe for the same reason as
/// that middleware: an entry exists only under a path that passed the
/// signature check and the image handler.
final class CachedResponseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let service: ImageService
    private let log: RequestLogMiddleware
    /// Requests handed to Hummingbird whose answer has not ended yet.
    private var forwarded = 0
    /// Dropping the rest of a request answered here (its `.end`).
    private var answering = false
    private var needsFlush = false
    /// A request asked to close the connection, or its output is closed: nothing more is answered here.
    private var closing = false
    /// `Date` for the current second, made once per second.
    private var date: (second: Int, text: String) = (-1, "")

    init(service: ImageService, log: RequestLogMiddleware) {
        self.service = service
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            // The path is parsed only when this handler may answer; Hummingbird parses its own.
            if forwarded == 0, !closing, context.channel.isWritable, case let path = URI(head.path ?? "/").path,
               let answer = answer(head, path: path) {
                write(answer, for: head, path: path, context: context)
                answering = true
                return
            }
            answering = false
            forwarded += 1
            if Self.asksToClose(head) { closing = true }
        case .body, .end:
            if answering { return }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .outputClosed = event as? ChannelEvent { closing = true }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { forwarded = max(0, forwarded - 1) }
        context.write(data, promise: promise)
    }

    /// The cached answer for `head`, when this handler may give it.
    private func answer(_ head: HTTPRequest, path: String) -> CachedAnswer? {
        guard head.method == .get || head.method == .head, !Self.asksToClose(head) else { return nil }
        return service.cachedAnswer(path: path, headers: head.headerFields)
    }

    /// Whether `head` has `Connection: close`.
    private static func asksToClose(_ head: HTTPRequest) -> Bool {
        head.headerFields[.connection]?.lowercased().contains("close") ?? false
    }

    /// The `Date` header's value now, as Hummingbird sends it on routed answers.
    private func dateNow() -> String {
        let now = Date()
        let second = Int(now.timeIntervalSince1970)
        if second != date.second { date = (second, ResponseCache.httpDate(now)) }
        return date.text
    }

    /// Writes `answer` (no body for `HEAD`); the flush comes at the end of the read.
    private func write(_ answer: CachedAnswer, for head: HTTPRequest, path: String, context: ChannelHandlerContext) {
        let start = ContinuousClock.now
        var headers = answer.headers
        headers[.date] = dateNow()
        context.write(wrapOutboundOut(.head(HTTPResponse(status: answer.status, headerFields: headers))), promise: nil)
        if let body = answer.body, head.method != .head {
            context.write(wrapOutboundOut(.body(body)), promise: nil)
        }
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        needsFlush = true
        log.log(method: head.method, path: path, status: Int(answer.status.code),
                bytes: answer.body.map { String($0.readableBytes) }, elapsed: ContinuousClock.now - start,
                route: "image", cacheTier: "response", errorCode: nil)
    }
}
