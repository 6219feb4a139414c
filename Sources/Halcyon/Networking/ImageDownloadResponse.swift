import Foundation

/// The head of an HTTP response: what a delegate or redirect handler sees.
public struct ImageDownloadResponse: Sendable {
    /// The URL that answered (the last one after redirects).
    public let url: URL
    /// The HTTP status code.
    public let statusCode: Int
    /// The header fields; repeated names are joined with ", " and keys are lowercased.
    public let headers: [String: String]

    /// Makes a response head.
    public init(url: URL, statusCode: Int, headers: [String: String]) {
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
    }

    /// The value of the header `name` (case-insensitive), or nil.
    public func value(forHTTPHeaderField name: String) -> String? {
        headers[name.lowercased()]
    }

    /// The Content-Length the server announced, or nil when absent or invalid.
    public var expectedContentLength: Int? {
        value(forHTTPHeaderField: "content-length").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }
}
