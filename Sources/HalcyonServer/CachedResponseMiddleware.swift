import Hummingbird

/// Answers a repeated image request from the response cache before the
/// signature is checked again or the path parsed: the one path every cache
/// hit takes, so a hit is logged, counted and (when tracing) a span like any
/// other request, and pipelined answers keep their order (Hummingbird's).
///
/// Safe because the cache is keyed by the path as sent (and the format its
/// `Accept` negotiates, ``ResponseCache/Key``): an entry exists only for a
/// path that passed ``SignatureMiddleware`` and the image handler once, and
/// the same bytes verify the same way. A request with a body is not answered
/// here (the image handler refuses it). Misses go on unchanged.
struct CachedResponseMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let service: ImageService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let response = service.cachedResponse(for: request, context: context) { return response }
        return try await next(request, context)
    }
}
