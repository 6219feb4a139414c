import Foundation
import Halcyon
import HalcyonVapor
import Logging
import Vapor

/// The repository's `Samples` folder (`HALCYON_SAMPLES` overrides it).
let samples = ProcessInfo.processInfo.environment["HALCYON_SAMPLES"].map { URL(fileURLWithPath: $0) }
    ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Samples")

/// `GET /avatar/{size}`: a square WebP thumbnail (16 to 512 pixels) of `Samples/landscape.jpg`, made through
/// `req.halcyon` (the first request decodes and processes, the next ones are memory-cache hits).
func configure(_ app: Application) throws {
    let source = samples.appendingPathComponent("landscape.jpg")
    app.get("avatar", ":size") { request async throws -> Response in
        let size = try request.parameters.require("size", as: Int.self)
        guard (16...512).contains(size) else { throw Abort(.badRequest, reason: "size is 16 to 512") }
        let square = CGSize(width: size, height: size)
        let fill = ResizingImageProcessor(referenceSize: square, mode: .aspectFill)
        let result = try await request.halcyon.retrieveImage(
            with: source, options: [.processor(fill |> CroppingImageProcessor(size: square))])
        var headers = HTTPHeaders()
        headers.replaceOrAdd(name: .contentType, value: "image/webp")
        headers.replaceOrAdd(name: "X-Halcyon-Cache", value: "\(result.cacheType)")
        let webp = try result.image.encoded(as: .webp(quality: 80))
        return Response(status: .ok, headers: headers, body: .init(data: webp))
    }
}

var environment = try Environment.detect()
try LoggingSystem.bootstrap(from: &environment)
let app = try await Application.make(environment)
do {
    try configure(app)
    try await app.execute()
} catch {
    app.logger.report(error: error)
    try? await app.asyncShutdown()
    throw error
}
try await app.asyncShutdown()
