import HalcyonServer
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// The Hummingbird side of the bridge: the image routes of ``HalcyonImageRoutes`` behind a Hummingbird router at
/// the mount path, answering requests described in framework-neutral values (method, request target, header
/// pairs, body bytes) with the whole answer collected in memory.
///
/// The router matches the mount path, sets the endpoint path the routes read their image path from (the path
/// below the mount) and renders `HTTPResponseError`s, so a request answers here exactly as it would in a
/// Hummingbird application that mounted the same routes at the same path.
struct ImageRoutesResponder: Sendable {
    /// One answer: its status code, header fields in order, and the body's bytes.
    struct Answer: Sendable {
        /// The HTTP status code.
        var status: Int
        /// The status's reason phrase.
        var reason: String
        /// The header fields, in order; `Content-Length` is among them only when the routes set it.
        var headers: [(name: String, value: String)]
        /// The body, collected.
        var body: ByteBuffer
    }

    private let responder: RouterResponder<BridgeRequestContext>

    /// Routes `routes` under `mountPath` (a Hummingbird router path such as `/img` or `/media/{id}/img`).
    init(routes: HalcyonImageRoutes<BridgeRequestContext>, mountPath: String) {
        let router = Router(context: BridgeRequestContext.self)
        router.addRoutes(routes.routes, atPath: RouterPath(mountPath))
        responder = router.buildResponder()
    }

    /// Answers one request; `target` is its request target as sent (path and query), `authority` its `Host`.
    ///
    /// Errors the routes render (signature, path, source) are answers; anything else is thrown. Runs on the
    /// caller's task: cancelling it cancels the image work.
    func answer(
        method: String, target: String, authority: String?, headers: [(name: String, value: String)],
        body: ByteBuffer, logger: Logger
    ) async throws -> Answer {
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let fieldName = HTTPField.Name(name), fieldName.canonicalName != "host" else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        let head = HTTPRequest(
            method: HTTPRequest.Method(method) ?? .get, scheme: nil, authority: authority, path: target,
            headerFields: fields)
        let request = Request(head: head, body: RequestBody(buffer: body))
        let context = BridgeRequestContext(source: .init(logger: logger))
        let response = try await responder.respond(to: request, context: context)
        let sink = BodySink()
        try await response.body.write(CollectingBodyWriter(sink: sink))
        return Answer(
            status: response.status.code, reason: response.status.reasonPhrase,
            headers: response.headers.map { ($0.name.rawName, $0.value) },
            body: sink.collected)
    }
}

/// The request context of bridged requests: Hummingbird's core context (logger, endpoint path, parameters)
/// and nothing else. Without a connection to watch, a client hanging up is not seen; the work ends when the
/// request's task is cancelled or at the service's request timeout.
struct BridgeRequestContext: RequestContext {
    /// Where a bridged request's context comes from: its logger.
    struct Source: RequestContextSource {
        /// The logger of the request (the host framework's request logger).
        let logger: Logger
    }

    /// Hummingbird's per-request storage.
    var coreContext: CoreRequestContextStorage

    /// A context logging to `source`'s logger.
    init(source: Source) {
        coreContext = CoreRequestContextStorage(source: source)
    }
}

/// Bytes a response body wrote, gathered for one answer.
final class BodySink: Sendable {
    private let buffer = Mutex(ByteBuffer())

    /// Appends `part`.
    func append(_ part: ByteBuffer) {
        buffer.withLock { collected in
            var part = part
            collected.writeBuffer(&part)
        }
    }

    /// Everything appended so far.
    var collected: ByteBuffer { buffer.withLock { $0 } }
}

/// A `ResponseBodyWriter` that appends every buffer to a ``BodySink``; trailing headers are dropped (the image
/// routes send none).
struct CollectingBodyWriter: ResponseBodyWriter {
    /// Where the bytes go.
    let sink: BodySink

    mutating func write(_ buffer: ByteBuffer) async throws {
        sink.append(buffer)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
