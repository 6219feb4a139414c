import NIOCore
import NIOHTTP1
import Vapor

/// The Vapor side of the bridge: a Vapor request handed to the image routes' ``ImageRoutesResponder`` as
/// sent (method, request target, headers, collected body), its answer turned into a Vapor response.
struct VaporImageRoutes: Sendable {
    /// The image routes behind their Hummingbird router.
    let responder: ImageRoutesResponder

    /// Answers `request` through the image routes, logging to `request.logger`.
    ///
    /// The answer's headers are kept as the routes set them (`Content-Length` added from the body when they set
    /// none, except for `HEAD`, 204 and 304); for `HEAD` Vapor sends no body. Runs on the request's task: cancelling it
    /// cancels the image work.
    func respond(to request: Request) async throws -> Response {
        var logger = request.logger
        logger[metadataKey: "hb.request.id"] = .string(request.id)
        let answer = try await responder.answer(
            method: request.method.rawValue, target: request.url.string, authority: request.headers.first(name: .host),
            headers: request.headers.map { ($0.name, $0.value) }, body: request.body.data ?? ByteBuffer(),
            logger: logger)
        var headers = HTTPHeaders(answer.headers.map { ($0.name, $0.value) })
        if !headers.contains(name: .contentLength), request.method != .HEAD, answer.status != 204, answer.status != 304 {
            headers.replaceOrAdd(name: .contentLength, value: String(answer.body.readableBytes))
        }
        return Response(
            status: HTTPResponseStatus(statusCode: answer.status, reasonPhrase: answer.reason),
            version: request.version, headersNoUpdate: headers, body: Response.Body(buffer: answer.body))
    }
}
