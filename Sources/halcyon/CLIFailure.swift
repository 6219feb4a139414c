import ArgumentParser
import Foundation
import Halcyon

/// A failure the tool reports: a stable code, a one-line message, an exit code
/// and, for `--verbose`, the detail the message leaves out (libvips' own text).
///
/// Exit codes (also in `halcyon --help`): 64 bad usage or a bad URL or chain,
/// 65 data that is not a usable image, 66 missing input (no such file, not
/// cached with --only-from-cache), 69 the source is unavailable (unreachable
/// host, timeout, HTTP error), 1 anything else.
struct CLIFailure: Error, CustomStringConvertible {
    let code: String
    let message: String
    let exitCode: Int32
    /// The lower layers' own account (libvips' text, the full error), shown with `--verbose` only.
    let detail: String?

    init(code: String, message: String, exitCode: Int32, detail: String? = nil) {
        self.code = code
        self.message = message
        self.exitCode = exitCode
        self.detail = detail
    }

    /// Classifies a library error.
    init(error: any Error, context: String? = nil) {
        let prefix = context.map { "\($0): " } ?? ""
        if let failure = error as? CLIFailure {
            self.init(code: failure.code, message: prefix + failure.message, exitCode: failure.exitCode, detail: failure.detail)
            return
        }
        if let missing = CLIFailure.missingInput(error) {
            self.init(code: "no-input", message: prefix + missing, exitCode: 66, detail: "\(error)")
            return
        }
        guard let error = error as? HalcyonError else {
            self.init(code: "failed", message: prefix + "\(error)", exitCode: 1)
            return
        }
        let (code, exitCode) = CLIFailure.classify(error)
        self.init(code: code, message: prefix + CLIFailure.message(for: error), exitCode: exitCode, detail: CLIFailure.detail(for: error))
    }

    var description: String { message }

    /// The lines to print on standard error: the message, then the detail when `verbose`.
    func errorLines(verbose: Bool) -> String {
        guard verbose, let detail, !detail.isEmpty else { return "halcyon: \(message)" }
        let indented = detail.split(separator: "\n", omittingEmptySubsequences: true).map { "  detail: \($0)" }
        return (["halcyon: \(message)"] + indented).joined(separator: "\n")
    }

    /// The JSON `error` object: code and message, and the detail when `verbose`.
    func json(verbose: Bool) -> JSONValue {
        var object: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
        if verbose, let detail { object["detail"] = .string(detail) }
        return .object(object)
    }

    /// "no such file" for an input file that is missing or unreadable (EX_NOINPUT), else nil.
    private static func missingInput(_ error: any Error) -> String? {
        guard let cocoa = error as? CocoaError else { return nil }
        switch cocoa.code {
        case .fileReadNoSuchFile, .fileNoSuchFile: return "no such file"
        case .fileReadNoPermission: return "cannot read the file (permission denied)"
        default: return nil
        }
    }

    private static func classify(_ error: HalcyonError) -> (String, Int32) {
        switch error {
        case .requestError(let reason):
            switch reason {
            case .invalidURL, .emptyRequest: return ("invalid-url", 64)
            case .taskCancelled, .dataProviderCancelled: return ("cancelled", 1)
            case .blockedURL: return ("blocked-url", 69)
            default: return ("unreachable", 69)
            }
        case .responseError(let reason):
            switch reason {
            case .invalidHTTPStatusCode: return ("http-status", 69)
            case .timedOut: return ("timeout", 69)
            case .tooLarge: return ("too-large", 65)
            case .emptyBody: return ("not-an-image", 65)
            case .unsupportedContentEncoding, .contentDecodingFailed: return ("bad-encoding", 65)
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

    /// A short message for people in Halcyon's words; the caller's context names the source.
    private static func message(for error: HalcyonError) -> String {
        switch error {
        case .requestError(.cannotConnect(let url, let message)):
            let reason = message.lowercased().contains("refused") ? "connection refused" : message
            return "cannot connect to \(url.host ?? url.absoluteString): \(reason)"
        case .requestError(.invalidURL(let url)): return "not a fetchable URL: \(url?.absoluteString ?? "nil")"
        case .responseError(.invalidHTTPStatusCode(_, let status)): return "the server answered HTTP \(status)"
        case .responseError(.timedOut(_, let after)): return "timed out after \(after) s"
        case .processorError(let reason): return message(for: reason)
        case .cacheError(.imageNotExisting): return "not in the cache"
        case .imageSettingError(.dataProviderError(_, let error)): return "\(error)"
        default: return "\(error)"
        }
    }

    /// Decoding and processing failures: what is wrong with the data, never libvips' text.
    private static func message(for reason: HalcyonError.ProcessorErrorReason) -> String {
        let unusable = "not a usable image: "
        switch reason {
        case .emptyData: return unusable + "the data is empty"
        case .unsupportedFormat(.unknown): return unusable + "the data is not an image (no known image signature)"
        case .unsupportedFormat(let format): return unusable + "this build cannot read \(format.displayName) images"
        case .corruptData(let format, let message):
            let defect = isTruncation(message) ? "truncated" : "corrupt"
            return format == .unknown ? unusable + "the image has no pixels" : unusable + "the \(format.displayName) data is \(defect)"
        case .tooManyPixels, .tooManyFrames: return unusable + reason.description
        case .encodeFailed(let format, _): return "cannot encode the image as \(format.displayName)"
        case .operationFailed(let operation, _): return "processing failed in \(operation)"
        case .processingFailed(let processor, _): return "processor \(processor.identifier) failed"
        case .engineUnavailable: return "libvips, the image engine, could not start"
        default: return reason.description
        }
    }

    /// Whether a decoder's message says the data ends early.
    private static func isTruncation(_ message: String) -> Bool {
        let lowered = message.lowercased()
        return ["premature end of input file", "premature end of jpeg file", "unexpected end", "truncated", "not enough data"]
            .contains { lowered.contains($0) }
    }

    /// libvips' own text for the failures whose message leaves it out, else the whole error.
    private static func detail(for error: HalcyonError) -> String {
        switch error {
        case .processorError(.corruptData(_, let message)), .processorError(.encodeFailed(_, let message)),
             .processorError(.operationFailed(_, let message)), .processorError(.engineUnavailable(let message)):
            return message
        default:
            return "\(error)"
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
