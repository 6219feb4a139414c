import Foundation

extension ImageDownloader {
    /// The statuses that redirect when they carry a `Location`.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Whether a final answer's status is acceptable by default: 200; 206, which is taken only as the answer to the
    /// `Range` request of a resumed download (to any other request it is refused whatever the delegate says); and
    /// 304, the answer to a conditional request, reported as `HalcyonError.ResponseErrorReason.notModified`.
    ///
    /// Any other status is `invalidHTTPStatusCode`: another 2xx (201, 204, a 206 nobody asked for) is not the
    /// image, nor is a 3xx that is not followed (300, 305, a redirect without a `Location`).
    public static func isAcceptableStatus(_ code: Int) -> Bool {
        code == 200 || code == 206 || code == 304
    }

    /// Whether `url` is an http or https URL with a host, and a port, if any, from 0 to 65535.
    ///
    /// `URL` parses a port of any size; the HTTP client stops the process on one that does not fit 16 bits, so
    /// such a URL (a source, a redirect's target) is refused here as invalid.
    static func isFetchable(_ url: URL) -> Bool {
        if hasPlainHost(url.absoluteString) { return true }
        // The lowercase spellings, by far the usual ones, are checked without making a lowercased copy.
        guard let scheme = url.scheme,
              scheme == "http" || scheme == "https" || ["http", "https"].contains(scheme.lowercased()) else { return false }
        if let port = url.port, !(0...65535).contains(port) { return false }
        // A port too long for `URL` to read reads as none, which would send the request to the default port.
        if url.port == nil, hasPortText(url.absoluteString) { return false }
        return !(url.host ?? "").isEmpty
    }

    /// Whether the authority of `text` (`scheme://authority/...`) ends in `:` and at least one more character.
    static func hasPortText(_ text: String) -> Bool {
        guard let start = text.range(of: "://")?.upperBound else { return false }
        let authority = text[start...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostAndPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? authority[...]
        let afterBracket = hostAndPort.lastIndex(of: "]").map { hostAndPort[hostAndPort.index(after: $0)...] } ?? hostAndPort
        guard let colon = afterBracket.lastIndex(of: ":") else { return false }
        return afterBracket.index(after: colon) < afterBracket.endIndex
    }

    /// Whether `text` is `http://` or `https://` and an authority without user info, brackets or escapes whose part
    /// before any `:port` (then the host) is not empty and whose port, if any, is digits worth at most 65535: the
    /// usual URL, checked without asking `URL` to parse its parts. False means "look closer".
    static func hasPlainHost(_ text: String) -> Bool {
        var rest = Substring(text).utf8
        if rest.starts(with: "https://".utf8) {
            rest = rest.dropFirst(8)
        } else if rest.starts(with: "http://".utf8) {
            rest = rest.dropFirst(7)
        } else {
            return false
        }
        var hostLength = 0
        var port: Int?
        for byte in rest {
            switch byte {
            case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): return hostLength > 0
            case UInt8(ascii: "@"), UInt8(ascii: "["), UInt8(ascii: "%"), UInt8(ascii: "\\"): return false
            case UInt8(ascii: ":") where port == nil: port = 0
            case UInt8(ascii: "0")...UInt8(ascii: "9") where port != nil:
                port = (port ?? 0) * 10 + Int(byte - UInt8(ascii: "0"))
                if (port ?? 0) > 65535 { return false }
            default:
                if port != nil { return false }
                hostLength += 1
            }
        }
        return hostLength > 0
    }
}
