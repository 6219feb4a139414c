import Foundation
import Halcyon
import Hummingbird
import NIOCore

// MARK: - /info/{signature}/{options}/{source}

extension ImageService {
    /// Answers `GET /info/{signature}/{options}/{source}`: the source's `ImageInfo` (Halcyon's) as JSON.
    ///
    /// Signed like image paths (the signature covers what follows it). Options: `bh`/`blurhash:X:Y`
    /// sets the BlurHash components (1...9 each, default 4:3); anything else is a 400 naming it. The
    /// source goes through the same resolver, SSRF guard, size limits and ``Admission`` (a slot, then memory by
    /// estimate: `Admission.Ticket.reserveInfo(_:source:)`) as an image, and only its header and a 64-pixel
    /// shrink-on-load decode are read. `path` is what follows `/info` (below the mount prefix), as sent; without a
    /// `channel` there is no hang-up signal (see ``Admission``).
    func info(path: String, record: RequestRecord, channel: (any Channel)?) async throws -> Response {
        record.route = "info"
        let parsed = try Self.parsePath(path)
        if let signer, !signer.verify(signature: parsed.signature, path: parsed.signedPath) {
            throw ServerError(status: 403, code: "invalid_signature", message: "the signature does not match")
        }
        let components = try Self.infoComponents(parsed.options)
        let source = try resolve(parsed.source)
        try checkLocalSize(source)
        let limits = decodingLimits
        let info = try await admission.run(on: channel) { ticket in
            let data = try await self.sourceData(source)
            do throws(HalcyonError) {
                // Memory like an image request: the estimate of the loader and the small decode, reserved before any pixel.
                try await ticket.reserveInfo(ImageDecoder.open(data, options: limits), source: data)
                return try await RenderCancellation.perform(on: self.encodeQueue) { () throws(HalcyonError) -> ImageInfo in
                    try ImageInfo.inspect(data, blurHashComponents: components, options: limits)
                }
            } catch {
                throw ServerError.from(error)
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(info)) ?? Data("{}".utf8)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = configuration.successCacheControl
        headers[.xContentTypeOptions] = "nosniff"
        headers[.contentLength] = String(body.count)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The BlurHash components asked by the `/info` options, or a 400 naming the bad option.
    static func infoComponents(_ segments: [String]) throws(ServerError) -> (x: Int, y: Int) {
        var components = (x: 4, y: 3)
        for segment in segments {
            let parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts[0] == "bh" || parts[0] == "blurhash" else {
                throw ServerError(status: 400, code: "invalid_option", message: "option \"\(parts[0])\" is not an /info option (bh:X:Y)")
            }
            guard parts.count == 3, let x = Int(parts[1]), let y = Int(parts[2]), (1...9).contains(x), (1...9).contains(y) else {
                throw ServerError(status: 400, code: "invalid_option", message: "option \"\(segment)\": bh takes two component counts, 1...9 each")
            }
            components = (x, y)
        }
        return components
    }
}
