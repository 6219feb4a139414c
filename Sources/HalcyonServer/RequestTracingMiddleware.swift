import Foundation
import Hummingbird
import Tracing

/// One server span per request (`halcyon.request`), child of the caller's
/// trace when the request carries W3C trace context (`traceparent`), and the
/// task-local context of everything the handler does: the disk and Redis
/// lookups, the origin fetch (whose HTTP client span carries the context to
/// the origin), decode, process and encode spans are its children. The
/// in-memory response cache gets no span of its own (a dictionary read would
/// cost less than its span): a hit there is `halcyon.cache.tier = response`
/// on this span.
///
/// Installed only when tracing is configured (``ServerConfiguration/traceEndpoint``).
/// The span names the path without its signature, as the request log does,
/// and records the status, the cache tier and the error code. Errors are
/// rendered by ``RequestLogMiddleware`` outside this one, so the status here is
/// the one sent.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: RequestHeaderExtractor())
        let span = startSpan("halcyon.request", context: parent, ofKind: .server)
        defer { span.end() }
        span.attributes["http.request.method"] = request.method.rawValue
        return try await ServiceContext.withValue(span.context) {
            do {
                let response = try await next(request, context)
                record(span, status: Int(response.status.code), context: context, path: request.uri.path)
                return response
            } catch {
                let status = (error as? any HTTPResponseError).map { Int($0.status.code) } ?? 500
                record(span, status: status, context: context, path: request.uri.path)
                if let error = error as? ServerError { span.attributes["halcyon.error.code"] = error.code }
                span.recordError(error)
                throw error
            }
        }
    }

    private func record(_ span: any Span, status: Int, context: Context, path: String) {
        let record = context.record
        span.attributes["url.path"] = RequestLogMiddleware.loggedPath(path, route: record.route)
        span.attributes["http.route"] = record.route
        span.attributes["http.response.status_code"] = status
        if let tier = record.cacheTier { span.attributes["halcyon.cache.tier"] = tier }
        if let code = record.errorCode { span.attributes["halcyon.error.code"] = code }
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }
}

/// Reads propagation fields from request headers.
struct RequestHeaderExtractor: Extractor {
    func extract(key: String, from headers: HTTPFields) -> String? {
        let wanted = key.lowercased()
        return headers.first { $0.name.canonicalName == wanted }?.value
    }
}
