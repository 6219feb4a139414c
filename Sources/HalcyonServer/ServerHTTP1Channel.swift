import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1 channel with one handler of the service's own: a
/// ``ConnectionHandler`` before the conversion to HTTP types, which applies
/// the connection policy (keep-alive rules for HTTP/1.0 and
/// `Connection: close`, and, under ``ConnectionLimits``, the cap, the head
/// and write timeouts, held closes and hang-up signals). Everything after it,
/// the idle timeout, graceful shutdown and every answer (response cache hits
/// too), is Hummingbird's.
struct ServerHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let limits: ConnectionLimits?

    /// The server builder: Hummingbird's HTTP/1 with `configuration` (its idle timeout among them); each
    /// connection under `limits` (nil: keep-alive rules only).
    static func builder(configuration: HTTP1Channel.Configuration, limits: ConnectionLimits?) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            ServerHTTP1Channel(inner: HTTP1Channel(responder: responder, configuration: configuration), limits: limits)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let codec = try pipeline.handler(type: HTTP1ToHTTPServerCodec.self)
            try pipeline.addHandler(ConnectionHandler(limits: limits), position: .before(codec))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
