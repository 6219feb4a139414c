import Hummingbird

/// Answers any method but `GET` and `HEAD` with 405 `method_not_allowed` and
/// `Allow: GET, HEAD`, before routing: the service serves nothing else, and
/// an `OPTIONS`, `TRACE` or unknown method on a real path is not a missing
/// path (Hummingbird's router answers 404 for a method it has no route for).
struct MethodGuardMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method == .get || request.method == .head else {
            context.record.route = Self.route(of: request.uri.path)
            throw ServerError(status: 405, code: "method_not_allowed", message: "only GET and HEAD are served", allow: "GET, HEAD")
        }
        return try await next(request, context)
    }

    /// The route a path would take, for the log and the metrics (an image path's signature is not logged).
    static func route(of path: String) -> String {
        switch path {
        case "/health": "health"
        case "/metrics": "metrics"
        default: path.hasPrefix("/info/") ? "info" : "image"
        }
    }
}
