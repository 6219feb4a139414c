import Foundation

extension ImageDownloader {
    /// Whether `url` is an http or https URL with a host.
    static func isFetchable(_ url: URL) -> Bool {
        if hasPlainHost(url.absoluteString) { return true }
        // The lowercase spellings, by far the usual ones, are checked without making a lowercased copy.
        guard let scheme = url.scheme,
              scheme == "http" || scheme == "https" || ["http", "https"].contains(scheme.lowercased()) else { return false }
        return !(url.host ?? "").isEmpty
    }

    /// Whether `text` is `http://` or `https://` and an authority without user info, brackets or escapes whose part
    /// before any `:port` (then the host) is not empty: the usual URL, checked without asking `URL` to parse its
    /// parts. False means "look closer".
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
        var inPort = false
        for byte in rest {
            switch byte {
            case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): return hostLength > 0
            case UInt8(ascii: "@"), UInt8(ascii: "["), UInt8(ascii: "%"), UInt8(ascii: "\\"): return false
            case UInt8(ascii: ":"): inPort = true
            default: if !inPort { hostLength += 1 }
            }
        }
        return hostLength > 0
    }
}
