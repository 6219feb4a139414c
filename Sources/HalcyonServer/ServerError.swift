import Foundation
import Halcyon

/// An error answer: HTTP status, a stable machine code and a short message.
///
/// Messages name the request's own input (an option, a limit) but never echo
/// an upstream body or internal paths.
public struct ServerError: Error, Sendable, Equatable {
    /// The HTTP status.
    public let status: Int
    /// The stable code, e.g. `invalid_signature`.
    public let code: String
    /// A short human-readable message.
    public let message: String

    /// Makes an error.
    public init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
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
        case .requestError(let reason):
            switch reason {
            case .invalidURL: return ServerError(status: 400, code: "invalid_source", message: "the source URL cannot be fetched")
            case .taskCancelled, .downloaderShutDown:
                return ServerError(status: 503, code: "cancelled", message: "the request was cancelled")
            case .redirectBlocked, .invalidRedirect:
                return ServerError(status: 502, code: "source_bad_redirect", message: "the source redirected somewhere it may not")
            case .tooManyRedirects(_, let limit):
                return ServerError(status: 502, code: "source_too_many_redirects", message: "the source needs more than \(limit) redirects")
            case .cannotConnect:
                return ServerError(status: 502, code: "source_unreachable", message: "cannot connect to the source")
            case .connectionRefusedByGate(_, let message):
                return ServerError(status: 403, code: "source_address_forbidden", message: "source address not allowed: \(message)")
            case .blockedURL, .emptyRequest:
                return ServerError(status: 502, code: "source_failed", message: "the source failed")
            }
        case .responseError(let reason):
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
            default:
                return ServerError(status: 502, code: "source_failed", message: "the source could not be downloaded")
            }
        case .processorError(let reason):
            switch reason {
            case .tooManyPixels(let width, let height, let frames, let limit):
                let frameText = frames > 1 ? " x \(frames) frames" : ""
                return ServerError(status: 422, code: "source_too_many_pixels",
                                   message: "source of \(width)x\(height)\(frameText) exceeds \(limit) pixels")
            case .tooManyFrames(let count, let limit):
                return ServerError(status: 422, code: "source_too_many_frames", message: "source of \(count) frames exceeds \(limit) frames")
            case .emptyData, .unsupportedFormat:
                return ServerError(status: 422, code: "unsupported_image", message: "the source is not an image this server reads")
            case .corruptData:
                return ServerError(status: 422, code: "corrupt_image", message: "the source image is corrupt")
            case .invalidParameter(let processor, let message):
                return ServerError(status: 400, code: "invalid_option", message: "\(processor): \(message)")
            case .encodeFailed(let format, _):
                return ServerError(status: 500, code: "encode_failed", message: "cannot encode \(format)")
            case .processingFailed, .invalidProcessorChain, .engineUnavailable:
                return ServerError(status: 500, code: "processing_failed", message: "processing failed")
            }
        case .cacheError:
            return ServerError(status: 500, code: "cache_failed", message: "cache failure")
        case .imageSettingError(let reason):
            if case .dataProviderError = reason {
                return ServerError(status: 404, code: "source_not_found", message: "the local source cannot be read")
            }
            return ServerError(status: 502, code: "source_failed", message: "the source failed")
        }
    }
}
