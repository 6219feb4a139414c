import Hummingbird

/// Checks an image path's signature before anything else reads it: 400 for a
/// path that is not an image path, 403 for a signature that does not match.
/// Without a signer (insecure mode) every path passes.
struct SignatureMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let signer: URLSigner?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        context.record.route = "image"
        if let signer {
            let parsed = try ImageService.parsePath(request.uri.path)
            guard signer.verify(signature: parsed.signature, path: parsed.signedPath) else {
                throw ServerError(status: 403, code: "invalid_signature", message: "the signature does not match")
            }
        }
        return try await next(request, context)
    }
}
