import Hummingbird

/// Answers a repeated image request from the response cache before the
/// signature is checked again or the path parsed.
///
/// Most hits never get here: the connection's ``CachedResponseHandler``
/// answers them first. This answers the rest: a hit pipelined behind a
/// request still being answered, one with `Connection: close`, and every hit
/// when tracing is on (each request is then a span).
///
/// Safe because the cache is keyed by the path as sent: an entry exists only
/// for a path that passed ``SignatureMiddleware`` and the image handler
/// once, and the same bytes verify the same way. Misses go on unchanged.
struct CachedResponseMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let service: ImageService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let response = service.cachedResponse(for: request, context: context) { return response }
        return try await next(request, context)
    }
}
