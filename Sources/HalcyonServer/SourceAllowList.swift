import Foundation

/// The `--allow-source` list, parsed: each entry is a scheme, a canonical
/// host (``CanonicalHost``), a port (the scheme's default when not written)
/// and a path prefix that matches on path-segment boundaries.
///
/// `http://a.test` allows `http://a.test/…` and `http://a.test:80/…` only;
/// `https://a.test/images` allows `/images` and `/images/…`, not
/// `/images-private/…`. A URL with userinfo, or with a `.`, `..` or
/// encoded-slash path segment, matches no entry. An empty list allows any
/// source; an entry that does not parse matches nothing.
public struct SourceAllowList: Sendable, Hashable {
    /// One allowed source.
    public struct Entry: Sendable, Hashable {
        /// `http` or `https`.
        public var scheme: String
        /// The canonical host.
        public var host: CanonicalHost
        /// The port, explicit or the scheme's default.
        public var port: Int
        /// The percent-encoded path prefix without a trailing slash; empty for the whole host.
        public var pathPrefix: String

        /// Parses `text` (`scheme://host[:port][/path]`); nil when it is not such an http(s) URL.
        public init?(_ text: String) {
            guard let url = URL(string: text), url.user == nil, url.password == nil, url.query == nil, url.fragment == nil,
                  let target = Target(url) else { return nil }
            scheme = target.scheme
            host = target.host
            port = target.port
            pathPrefix = target.path.hasSuffix("/") ? String(target.path.dropLast()) : target.path
        }

        /// Whether `target` is under this entry.
        func matches(_ target: Target) -> Bool {
            guard target.scheme == scheme, target.host == host, target.port == port else { return false }
            return pathPrefix.isEmpty || target.path == pathPrefix || target.path.hasPrefix(pathPrefix + "/")
        }
    }

    /// The parsed entries.
    public let entries: [Entry]
    /// The entries that did not parse (they match nothing).
    public let invalid: [String]
    /// Whether the list restricts sources at all (it was given any entry).
    public var isRestricted: Bool { !entries.isEmpty || !invalid.isEmpty }

    /// A list that allows any source.
    public static let any = SourceAllowList([])

    /// Parses `sources`; entries that do not parse are kept in ``invalid`` and match nothing.
    public init(_ sources: [String]) {
        var entries: [Entry] = [], invalid: [String] = []
        for source in sources {
            if let entry = Entry(source) { entries.append(entry) } else { invalid.append(source) }
        }
        self.entries = entries
        self.invalid = invalid
    }

    /// Whether `url` may be fetched: any http(s) URL without userinfo when the
    /// list is empty, else one under an entry.
    public func allows(_ url: URL) -> Bool {
        guard url.user == nil, url.password == nil, let target = Target(url) else { return false }
        guard isRestricted else { return true }
        guard !target.hasUnsafeSegment else { return false }
        return entries.contains { $0.matches(target) }
    }

    /// The parts of a URL an entry is matched against.
    struct Target {
        var scheme: String
        var host: CanonicalHost
        var port: Int
        var path: String

        init?(_ url: URL) {
            guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                  let host = CanonicalHost(of: url) else { return nil }
            self.scheme = scheme
            self.host = host
            self.port = url.port ?? (scheme == "https" ? 443 : 80)
            self.path = url.path(percentEncoded: true)
        }

        /// Whether a path segment is `.` or `..` or hides a slash, once decoded.
        var hasUnsafeSegment: Bool {
            path.split(separator: "/", omittingEmptySubsequences: false).contains { segment in
                let decoded = segment.removingPercentEncoding ?? String(segment)
                return decoded == "." || decoded == ".." || decoded.contains("/") || decoded.contains("\\")
            }
        }
    }
}
