import Foundation
import Halcyon

/// A parsed image request path.
public struct ImageRequestPath: Sendable, Hashable {
    /// The signature segment (or `insecure`/`unsafe`/`_` in unsigned mode).
    public var signature: String
    /// The option segments.
    public var options: [String]
    /// The source URL text, decoded.
    public var source: String
    /// The output format from the extension, if any.
    public var outputExtension: ImageFormat?
    /// The part of the path that is signed: everything after the signature segment, with its leading "/".
    public var signedPath: String
}

/// Parses `/{signature}/{options}/{base64url(source)}[.{ext}]` and
/// `/{signature}/{options}/plain/{percent-encoded source}[@{ext}]`.
public enum ImageURLParser {
    /// Why a path cannot be parsed.
    public struct ParseError: Error, Sendable, Equatable {
        /// What is wrong.
        public let message: String
    }

    /// Parses a raw request path (still percent-encoded, without query).
    public static func parse(_ rawPath: String) throws(ParseError) -> ImageRequestPath {
        guard rawPath.hasPrefix("/") else { throw ParseError(message: "path must start with /") }
        let segments = rawPath.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard segments.count >= 2, !segments[0].isEmpty else {
            throw ParseError(message: "expected /{signature}/{options}/{source}")
        }
        let signature = segments[0]
        let signedPath = String(rawPath.dropFirst(signature.count + 1))
        let rest = Array(segments.dropFirst())

        if let plainIndex = rest.firstIndex(of: "plain") {
            let options = Array(rest[..<plainIndex])
            var encoded = rest[(plainIndex + 1)...].joined(separator: "/")
            var ext: ImageFormat?
            if let at = encoded.lastIndex(of: "@"), let format = ProcessingOptions.outputFormat(extension: String(encoded[encoded.index(after: at)...])) {
                ext = format
                encoded = String(encoded[..<at])
            }
            guard !encoded.isEmpty, let source = encoded.removingPercentEncoding, !source.isEmpty else {
                throw ParseError(message: "the plain source is empty or not percent-encoded correctly")
            }
            return ImageRequestPath(signature: signature, options: options, source: source, outputExtension: ext, signedPath: signedPath)
        }

        guard var encoded = rest.last, !encoded.isEmpty else { throw ParseError(message: "the source is missing") }
        let options = Array(rest.dropLast())
        var ext: ImageFormat?
        if let dot = encoded.lastIndex(of: ".") {
            let suffix = String(encoded[encoded.index(after: dot)...])
            guard let format = ProcessingOptions.outputFormat(extension: suffix) else {
                throw ParseError(message: "unknown extension \"\(suffix)\"")
            }
            ext = format
            encoded = String(encoded[..<dot])
        }
        guard let bytes = Data(base64URL: encoded), let source = String(data: bytes, encoding: .utf8), !source.isEmpty else {
            throw ParseError(message: "the source is not URL-safe base64 of a UTF-8 URL")
        }
        return ImageRequestPath(signature: signature, options: options, source: source, outputExtension: ext, signedPath: signedPath)
    }
}
