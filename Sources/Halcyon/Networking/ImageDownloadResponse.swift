import Foundation

/// The head of an HTTP response: what a delegate or redirect handler sees.
public struct ImageDownloadResponse: Sendable {
    /// The URL that answered (the last one after redirects).
    public let url: URL
    /// The HTTP status code.
    public let statusCode: Int
    /// The header fields; repeated names are joined with ", " and keys are lowercased.
    public let headers: [String: String]

    /// The Content-Length the server announced, or nil when absent or invalid.
    public let expectedContentLength: Int?

    /// Makes a response head; header names are lowercased.
    public init(url: URL, statusCode: Int, headers: [String: String]) {
        self.init(url: url, statusCode: statusCode, fields: headers.lazy.map { ($0.key, $0.value) })
    }

    /// A response from header fields as received: names are lowercased, repeated fields joined with ", ".
    init<Fields: Sequence<(String, String)>>(url: URL, statusCode: Int, fields: Fields) {
        self.url = url
        self.statusCode = statusCode
        var lowercased: [String: String] = Dictionary(minimumCapacity: fields.underestimatedCount)
        for (name, value) in fields {
            // Servers mostly send lowercase names (HTTP/2 and nginx always): ASCII names without capitals are kept as they are.
            let key = name.utf8.contains(where: { $0 >= 0x80 || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) ? name.lowercased() : name
            lowercased[key] = lowercased[key].map { "\($0), \(value)" } ?? value
        }
        self.headers = lowercased
        self.expectedContentLength = lowercased["content-length"].flatMap(Self.parseLength)
    }

    /// The value of the header `name` (case-insensitive), or nil.
    public func value(forHTTPHeaderField name: String) -> String? {
        headers[name.lowercased()]
    }

    /// A non-negative decimal length, tolerating surrounding spaces and tabs.
    private static func parseLength(_ text: String) -> Int? {
        if let value = Int(text) { return value >= 0 ? value : nil }
        let trimmed = text.utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
        guard let value = Int(String(decoding: Array(trimmed), as: UTF8.self)), value >= 0 else { return nil }
        return value
    }
}
