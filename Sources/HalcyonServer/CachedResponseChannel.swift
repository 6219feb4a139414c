import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1 channel with a ``CachedResponseHandler`` between its
/// connection-state handler and its async request loop, so response cache
/// hits are answered on the event loop and still count for the idle timeout
/// and graceful shutdown, and a ``KeepAliveHandler`` before the conversion to
/// HTTP types, so HTTP/1.0 and `Connection: close` end the connection.
struct CachedResponseChannel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let makeHandler: @Sendable () -> CachedResponseHandler

    /// The server builder: Hummingbird's HTTP/1 with `configuration`, a new handler from `makeHandler` per connection.
    static func builder(
        configuration: HTTP1Channel.Configuration, makeHandler: @escaping @Sendable () -> CachedResponseHandler
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            CachedResponseChannel(inner: HTTP1Channel(responder: responder, configuration: configuration), makeHandler: makeHandler)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(makeHandler(), position: .after(state))
            let codec = try pipeline.handler(type: HTTP1ToHTTPServerCodec.self)
            try pipeline.addHandler(KeepAliveHandler(), position: .before(codec))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
