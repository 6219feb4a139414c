import Foundation
import Hummingbird
import Logging

/// The outermost middleware: turns any error into its response, counts the
/// request in the metrics, and logs one line per request through swift-log
/// (method, path without the signature, status, bytes, milliseconds, cache
/// tier), so refused attempts are visible without `/metrics`. Errors log at
/// `notice`, image successes at `info`, `/health` and `/metrics` successes
/// (probes, scrapers) at `debug`.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let logger: Logger
    let metrics: ServerMetrics
    /// `max-age` of 404 and 422 answers; 0 sends `no-store` for them too.
    let negativeCacheTTL: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await answer(request, context: context, record: context.record) { try await next(request, context) }
    }

    /// The answer of `next` for `request`, its error rendered, logged (as `path`, the request's path when nil) and
    /// counted with what `record` holds; what mounted routes in another app's context use in place of the middleware.
    func answer(
        _ request: Request, context: some RequestContext, record: RequestRecord, path: String? = nil,
        _ next: () async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        var response: Response
        do {
            response = try await next()
        } catch let error as ServerError {
            response = error.response()
            record.errorCode = error.code
        } catch let error as HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            let internalError = ServerError(status: 500, code: "internal", message: "internal error")
            response = internalError.response()
            record.errorCode = internalError.code
        }
        let status = Int(response.status.code)
        if status >= 400 { response.headers[.cacheControl] = errorCacheControl(status: status) }
        log(method: request.method, path: path ?? request.uri.path, status: status, bytes: response.headers[.contentLength],
            elapsed: ContinuousClock.now - start, route: record.route, cacheTier: record.cacheTier, errorCode: record.errorCode)
        return response
    }

    /// Counts a finished request in the metrics and logs its line.
    func log(method: HTTPRequest.Method, path: String, status: Int, bytes: String?, elapsed: Duration,
             route: String, cacheTier: String?, errorCode: String?) {
        metrics.request(route: route, status: status)
        metrics.total(elapsed)
        if let errorCode { metrics.error(code: errorCode) }
        let routine = route == "health" || route == "metrics"
        // The message is an autoclosure: nothing is formatted unless the level is logged.
        logger.log(level: status >= 400 ? .notice : routine ? .debug : .info, """
            \(method) \(Self.loggedPath(path, route: route)) \(status) \(bytes ?? "0") B \(Self.milliseconds(elapsed)) ms \
            cache=\(cacheTier ?? "-")\(errorCode.map { " error=\($0)" } ?? "")
            """)
    }

    /// Errors are not cached, except 404 and 422 for `negativeCacheTTL` seconds (a missing or unusable source
    /// asked again and again by a CDN's clients costs one origin fetch per TTL, not one per request).
    func errorCacheControl(status: Int) -> String {
        (status == 404 || status == 422) && negativeCacheTTL > 0 ? "public, max-age=\(negativeCacheTTL)" : "no-store"
    }

    /// A duration in milliseconds with one decimal, rounded; integer arithmetic, since every logged request
    /// formats one (`String(format:)` was 3% of a cache hit's CPU).
    static func milliseconds(_ elapsed: Duration) -> String {
        let (seconds, attoseconds) = elapsed.components
        let tenths = max(0, seconds) * 10_000 + (max(0, attoseconds) + 50_000_000_000_000) / 100_000_000_000_000
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// The path as logged: an image path without its signature (the first segment), others as they are.
    static func loggedPath(_ path: String, route: String) -> String {
        guard route == "image", path.count > 1, let slash = path.dropFirst().firstIndex(of: "/") else { return path }
        return "/-" + path[slash...]
    }
}
