import ArgumentParser
import Foundation
import Halcyon

/// A failure the tool reports: a stable code, a one-line message and an exit code.
///
/// Exit codes (also in `halcyon --help`): 64 bad usage or a bad URL or chain,
/// 65 data that is not a usable image, 66 missing input (no such file, not
/// cached with --only-from-cache), 69 the source is unavailable (unreachable
/// host, timeout, HTTP error), 1 anything else.
struct CLIFailure: Error, CustomStringConvertible {
    let code: String
    let message: String
    let exitCode: Int32

    init(code: String, message: String, exitCode: Int32) {
        self.code = code
        self.message = message
        self.exitCode = exitCode
    }

    /// Classifies a library error.
    init(error: any Error, context: String? = nil) {
        let prefix = context.map { "\($0): " } ?? ""
        guard let error = error as? HalcyonError else {
            self.init(code: "failed", message: prefix + "\(error)", exitCode: 1)
            return
        }
        let (code, exitCode) = CLIFailure.classify(error)
        self.init(code: code, message: prefix + CLIFailure.message(for: error), exitCode: exitCode)
    }

    var description: String { message }

    private static func classify(_ error: HalcyonError) -> (String, Int32) {
        switch error {
        case .requestError(let reason):
            switch reason {
            case .invalidURL, .emptyRequest: return ("invalid-url", 64)
            case .taskCancelled: return ("cancelled", 1)
            case .blockedURL: return ("blocked-url", 69)
            default: return ("unreachable", 69)
            }
        case .responseError(let reason):
            switch reason {
            case .invalidHTTPStatusCode: return ("http-status", 69)
            case .timedOut: return ("timeout", 69)
            case .tooLarge: return ("too-large", 65)
            case .emptyBody: return ("not-an-image", 65)
            default: return ("network", 69)
            }
        case .processorError(let reason):
            switch reason {
            case .emptyData, .unsupportedFormat, .corruptData: return ("not-an-image", 65)
            case .tooManyPixels, .tooManyFrames, .resultTooLarge: return ("too-large", 65)
            case .invalidProcessorChain, .invalidParameter: return ("bad-chain", 64)
            default: return ("processing", 1)
            }
        case .cacheError(let reason):
            if case .imageNotExisting = reason { return ("not-cached", 66) }
            return ("cache", 1)
        case .imageSettingError(let reason):
            switch reason {
            case .dataProviderError: return ("no-input", 66)
            case .alternativeSourcesExhausted: return ("unavailable", 69)
            default: return ("failed", 1)
            }
        }
    }

    /// A short message for people; the caller's context names the source.
    private static func message(for error: HalcyonError) -> String {
        switch error {
        case .requestError(.cannotConnect(let url, let message)):
            let reason = message.lowercased().contains("refused") ? "connection refused" : message
            return "cannot connect to \(url.host ?? url.absoluteString): \(reason)"
        case .requestError(.invalidURL(let url)): return "not a fetchable URL: \(url?.absoluteString ?? "nil")"
        case .responseError(.invalidHTTPStatusCode(_, let status)): return "the server answered HTTP \(status)"
        case .responseError(.timedOut(_, let after)): return "timed out after \(after) s"
        case .processorError(.unsupportedFormat(.unknown)): return "the data is not an image"
        case .processorError(let reason): return reason.description
        case .cacheError(.imageNotExisting): return "not in the cache"
        case .imageSettingError(.dataProviderError(let message)): return message
        default: return "\(error)"
        }
    }
}

/// Parses a command-line source: an http(s) URL, or a path to a local file.
enum SourceArgument {
    static func parse(_ text: String) throws -> Source {
        if let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme.count > 1 {
            guard ["http", "https", "file"].contains(scheme), scheme == "file" || url.host?.isEmpty == false else {
                throw CLIFailure(code: "invalid-url", message: "\(text): not an http, https or file URL", exitCode: 64)
            }
            return url.convertToSource()
        }
        return URL(fileURLWithPath: text).convertToSource()
    }
}
