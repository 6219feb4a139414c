import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1 channel with the service's own handlers: a
/// ``ConnectionHandler`` before the conversion to HTTP types, which applies
/// the connection policy (keep-alive rules for HTTP/1.0 and
/// `Connection: close`, and, under ``ConnectionLimits``, the cap, the head
/// and write timeouts, held closes and hang-up signals), and, when given, a
/// ``CachedResponseHandler`` between the connection-state handler and the
/// async request loop, so response cache hits are answered on the event loop
/// and still count for the idle timeout and graceful shutdown.
struct ServerHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let limits: ConnectionLimits?
    let makeCachedResponseHandler: (@Sendable () -> CachedResponseHandler)?

    /// The server builder: Hummingbird's HTTP/1 with `configuration` (its idle timeout among them); each
    /// connection under `limits` (nil: keep-alive rules only), with a new cached-response handler from
    /// `makeCachedResponseHandler` when given.
    static func builder(
        configuration: HTTP1Channel.Configuration, limits: ConnectionLimits?,
        makeCachedResponseHandler: (@Sendable () -> CachedResponseHandler)?
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            ServerHTTP1Channel(
                inner: HTTP1Channel(responder: responder, configuration: configuration),
                limits: limits, makeCachedResponseHandler: makeCachedResponseHandler)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            if let makeCachedResponseHandler {
                let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
                try pipeline.addHandler(makeCachedResponseHandler(), position: .after(state))
            }
            let codec = try pipeline.handler(type: HTTP1ToHTTPServerCodec.self)
            try pipeline.addHandler(ConnectionHandler(limits: limits), position: .before(codec))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
