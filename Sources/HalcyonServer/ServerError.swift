import Foundation
import Halcyon
import Hummingbird
import NIOCore

/// An error answer: HTTP status, a stable machine code and a short message,
/// rendered by itself as a JSON response (Hummingbird's `HTTPResponseError`).
///
/// Messages name the request's own input (an option, a limit) but never echo
/// an upstream body, internal paths or what a host name resolves to. Error
/// responses carry no `Cache-Control`: only successes are declared cacheable.
public struct ServerError: Error, Sendable, Equatable, HTTPResponseError {
    /// The HTTP status code.
    public let statusCode: Int
    /// The stable code, e.g. `invalid_signature`.
    public let code: String
    /// A short human-readable message.
    public let message: String
    /// Seconds for `Retry-After` (429 and 503 answers), nil for none.
    public var retryAfter: Int?
    /// The methods for `Allow` (405 answers), nil for none.
    public var allow: String?

    /// Makes an error.
    public init(status: Int, code: String, message: String, retryAfter: Int? = nil, allow: String? = nil) {
        self.statusCode = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.allow = allow
    }

    /// The HTTP status.
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: statusCode) }

    /// The JSON error response.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    /// The JSON error response, with the service's safety headers.
    public func response() -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.contentSecurityPolicy] = "default-src 'none'; sandbox"
        headers[.xContentTypeOptions] = "nosniff"
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        if let allow { headers[.allow] = allow }
        let body = self.body
        headers[.contentLength] = String(body.count)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The JSON body `{"error":{"code":"...","message":"..."}}`.
    public var body: Data {
        let payload = ["error": ["code": code, "message": message]]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(payload)) ?? Data(#"{"error":{"code":"internal","message":"internal error"}}"#.utf8)
    }

    /// The server's answer for a library error.
    public static func from(_ error: HalcyonError) -> ServerError {
        switch error {
        case .requestError(let reason): return from(reason)
        case .responseError(let reason): return from(reason)
        case .processorError(let reason): return from(reason)
        case .cacheError:
            return ServerError(status: 500, code: "cache_failed", message: "cache failure")
        case .imageSettingError(let reason):
            if case .dataProviderError = reason {
                return ServerError(status: 404, code: "source_not_found", message: "the local source cannot be read")
            }
            return ServerError(status: 502, code: "source_failed", message: "the source failed")
        }
    }

    // MARK: - Per reason group

    private static func from(_ reason: HalcyonError.RequestErrorReason) -> ServerError {
        switch reason {
        case .invalidURL: return ServerError(status: 400, code: "invalid_source", message: "the source URL cannot be fetched")
        case .taskCancelled, .downloaderShutDown, .dataProviderCancelled:
            return ServerError(status: 503, code: "cancelled", message: "the request was cancelled")
        case .redirectBlocked, .invalidRedirect:
            return ServerError(status: 502, code: "source_bad_redirect", message: "the source redirected somewhere it may not")
        case .tooManyRedirects(_, let limit):
            return ServerError(status: 502, code: "source_too_many_redirects", message: "the source needs more than \(limit) redirects")
        case .cannotConnect:
            return ServerError(status: 502, code: "source_unreachable", message: "cannot connect to the source")
        case .connectionRefusedByGate(_, let message) where message == AddressGate.notAllowedMessage:
            // A redirect hop outside the allowed sources: the same answer as a first hop outside them.
            return ServerError(status: 403, code: "source_not_allowed", message: "the source is not under an allowed prefix")
        case .connectionRefusedByGate:
            // The gate's detail (what the name resolves to) goes to the log, never to the client.
            return ServerError(status: 403, code: "source_address_forbidden", message: "source address forbidden")
        case .blockedURL, .emptyRequest:
            return ServerError(status: 502, code: "source_failed", message: "the source failed")
        }
    }

    private static func from(_ reason: HalcyonError.ResponseErrorReason) -> ServerError {
        switch reason {
        case .invalidHTTPStatusCode(_, let status) where status == 404 || status == 410:
            return ServerError(status: 404, code: "source_not_found", message: "the source answered \(status)")
        case .invalidHTTPStatusCode(_, let status):
            return ServerError(status: 502, code: "source_bad_status", message: "the source answered \(status)")
        case .timedOut:
            return ServerError(status: 504, code: "source_timeout", message: "the source did not answer in time")
        case .tooLarge(_, let limit, _):
            return ServerError(status: 422, code: "source_too_large", message: "the source is larger than \(limit) bytes")
        case .emptyBody:
            return ServerError(status: 422, code: "source_empty", message: "the source is empty")
        case .unsupportedContentEncoding:
            return ServerError(status: 502, code: "source_bad_encoding",
                               message: "the source's Content-Encoding cannot be decoded (gzip and deflate can)")
        case .contentDecodingFailed(_, let coding, let message):
            return ServerError(status: 502, code: "source_bad_encoding",
                               message: "the source's \(coding.isEmpty ? "compressed" : String(coding.prefix(40))) body does not decode: \(message)")
        default:
            return ServerError(status: 502, code: "source_failed", message: "the source could not be downloaded")
        }
    }

    private static func from(_ reason: HalcyonError.ProcessorErrorReason) -> ServerError {
        switch reason {
        case .tooManyPixels(let width, let height, let frames, let limit):
            let frameText = frames > 1 ? " x \(frames) frames" : ""
            return ServerError(status: 422, code: "source_too_many_pixels",
                               message: "source of \(width)x\(height)\(frameText) exceeds \(limit) pixels")
        case .tooManyFrames(let count, let limit):
            return ServerError(status: 422, code: "source_too_many_frames", message: "source of \(HalcyonError.ProcessorErrorReason.framesText(count)) frames exceeds \(limit) frames")
        case .emptyData, .unsupportedFormat:
            return ServerError(status: 422, code: "unsupported_image", message: "the source is not an image this server reads")
        case .corruptData:
            return ServerError(status: 422, code: "corrupt_image", message: "the source image is corrupt")
        case .invalidParameter(let processor, let message):
            return ServerError(status: 400, code: "invalid_option", message: "\(processor): \(message)")
        case .encodeFailed(let format, _):
            return ServerError(status: 500, code: "encode_failed", message: "cannot encode \(format)")
        case .resultTooLarge(let width, let height, _, let limit) where width > limit || height > limit:
            // The limit is a side length (a per-side check), not a pixel count.
            return ServerError(status: 422, code: "result_too_large",
                               message: "the result of \(width)x\(height) exceeds \(limit) pixels per side")
        case .resultTooLarge(let width, let height, let frames, let limit):
            let frameText = frames > 1 ? " x \(frames) frames" : ""
            return ServerError(status: 422, code: "result_too_many_pixels",
                               message: "result of \(width)x\(height)\(frameText) exceeds \(limit) pixels")
        case .memoryBudgetExceeded(let needed, let budget, let waited):
            let neededMB = (needed + 1_048_575) / 1_048_576
            if waited {
                return ServerError(status: 429, code: "memory_busy",
                                   message: "\(neededMB) MB of image memory did not come free in time", retryAfter: 1)
            }
            return ServerError(status: 413, code: "over_memory_budget",
                               message: "the image needs \(neededMB) MB, more than the budget of \(budget / 1_048_576) MB")
        case .processingFailed, .operationFailed, .invalidProcessorChain, .engineUnavailable:
            return ServerError(status: 500, code: "processing_failed", message: "processing failed")
        }
    }
}
