import Hummingbird
import Tracing

/// Answers a repeated image request from the response cache before the
/// signature is checked again or the path parsed.
///
/// Safe because the cache is keyed by the path as sent: an entry exists only
/// for a path that passed ``SignatureMiddleware`` and the image handler
/// once, and the same bytes verify the same way. Misses go on unchanged.
struct CachedResponseMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let service: ImageService
    /// Whether lookups get a span (tracing configured).
    let tracing: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let span = tracing ? startSpan("halcyon.cache.lookup", context: ServiceContext.current ?? .topLevel) : nil
        span?.attributes["halcyon.cache.tier"] = "response"
        let response = service.cachedResponse(for: request, context: context)
        span?.attributes["halcyon.cache.hit"] = response != nil
        span?.end()
        if let response { return response }
        return try await next(request, context)
    }
}
