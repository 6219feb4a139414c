import Foundation

/// The HTTP request the downloader sends for an image.
///
/// A small, Sendable stand-in for `URLRequest`: the URL, the method and the
/// header fields. Header names are matched case-insensitively, as in HTTP.
/// A request modifier receives one and may return a changed copy.
public struct ImageDownloadRequest: Sendable, Hashable {
    /// The URL to fetch; coalescing of concurrent downloads is keyed on it.
    public var url: URL
    /// The HTTP method. Default `"GET"`.
    public var httpMethod: String
    /// Per-request idle timeout; nil uses the downloader's `downloadTimeout`.
    public var timeoutInterval: TimeInterval?
    private var fields: [Field]

    private struct Field: Sendable, Hashable {
        var name: String
        var value: String
    }

    /// Makes a GET request for `url` with no header fields.
    public init(url: URL, httpMethod: String = "GET", timeoutInterval: TimeInterval? = nil) {
        self.url = url
        self.httpMethod = httpMethod
        self.timeoutInterval = timeoutInterval
        self.fields = []
    }

    // MARK: - Header fields

    /// Every header field, names as first set.
    public var allHTTPHeaderFields: [String: String] {
        Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// The value of the header `field` (case-insensitive), or nil.
    public func value(forHTTPHeaderField field: String) -> String? {
        fields.first { $0.name.caseInsensitiveCompare(field) == .orderedSame }?.value
    }

    /// Sets or, with nil, removes the header `field` (case-insensitive).
    public mutating func setValue(_ value: String?, forHTTPHeaderField field: String) {
        fields.removeAll { $0.name.caseInsensitiveCompare(field) == .orderedSame }
        if let value { fields.append(Field(name: field, value: value)) }
    }

    /// Header fields in the order they were set.
    var orderedHeaderFields: [(name: String, value: String)] {
        fields.map { ($0.name, $0.value) }
    }

    /// What requests must share to be coalesced into one HTTP request: the URL,
    /// plus the header fields that change the answer (conditional and range
    /// validators, credentials), so a revalidation never answers a plain request with a 304.
    var coalescingKey: String {
        var key = url.absoluteString
        // Without a varying field (the usual request) the key is the URL alone: an absolute URL has no line
        // break, so it cannot equal a key that carries validators.
        guard fields.contains(where: { field in
            !field.value.isEmpty && Self.varyingFields.contains { $0.caseInsensitiveCompare(field.name) == .orderedSame }
        }) else { return key }
        for name in Self.varyingFields {
            key += "\n" + (value(forHTTPHeaderField: name) ?? "")
        }
        return key
    }

    /// The header fields that make two requests for one URL different downloads.
    private static let varyingFields = ["If-None-Match", "If-Modified-Since", "Range", "If-Range", "Authorization"]
}
