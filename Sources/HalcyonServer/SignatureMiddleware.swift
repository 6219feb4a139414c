import Hummingbird

/// Parses an image path and checks its signature before anything else reads
/// it: 400 for a path that is not an image path, 403 for a signature that does
/// not match. Without a signer (insecure mode) every signature passes. The
/// parsed path goes on in the context (``ServerRequestContext/imagePath``).
struct SignatureMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let signer: URLSigner?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        context.record.route = "image"
        let parsed = try ImageService.parsePath(request.uri.path)
        if let signer, !signer.verify(signature: parsed.signature, path: parsed.signedPath) {
            throw ServerError(status: 403, code: "invalid_signature", message: "the signature does not match")
        }
        var context = context
        context.imagePath = parsed
        return try await next(request, context)
    }
}
