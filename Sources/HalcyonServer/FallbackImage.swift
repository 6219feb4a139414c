import Crypto
import Foundation
import Halcyon
import Hummingbird
import NIOCore

/// The operator's fallback image (`--fallback-image`, imgproxy's `IMGPROXY_FALLBACK_IMAGE_PATH`): served,
/// processed with the request's own options, in place of the JSON error when the source fails.
///
/// A source failure is a 404, a 502 or a 422 about the source (missing, unreachable, bad status, not an
/// image, over the source limits); errors about the request (options, signature, result size, timeouts,
/// load) stay JSON errors. The answer keeps the failure's status, and `Cache-Control` follows the error
/// policy (the negative TTL for 404 and 422), so nothing caches the fallback as the source's result.
struct FallbackImage: Sendable {
    /// The fallback as a source: its bytes under a fixed cache key.
    let source: Source

    /// Reads and checks the file; a missing or unusable one is a configuration error.
    init(path: String) throws(ServerConfiguration.ConfigurationError) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
            _ = try ImageDecoder.probe(data)
        } catch {
            throw ServerConfiguration.ConfigurationError(message: "the fallback image \(path) cannot be used: \(error)")
        }
        let digest = Data(SHA256.hash(data: data).prefix(12)).hexString
        source = .provider(RawImageDataProvider(data: data, cacheKey: "halcyon-fallback:\(digest)"))
    }

    /// Whether `error` is a failure of the source, which the fallback stands in for.
    static func replaces(_ error: ServerError) -> Bool {
        switch error.statusCode {
        case 404, 502: return error.code != "expired"
        case 422: return error.code.hasPrefix("source_") || error.code == "corrupt_image" || error.code == "unsupported_image"
        default: return false
        }
    }

    /// The fallback's answer: its encoded bytes with the failure's status (the failure's code goes to the log and metrics).
    static func response(_ entry: ResponseCache.Entry, failure: ServerError) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = entry.contentType
        headers[.contentLength] = String(entry.buffer.readableBytes)
        headers[.xContentTypeOptions] = "nosniff"
        headers[.contentSecurityPolicy] = "default-src 'none'; sandbox"
        return Response(status: failure.status, headers: headers, body: ResponseBody(byteBuffer: entry.buffer))
    }
}
