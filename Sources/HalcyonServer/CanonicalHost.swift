import Foundation

/// The one spelling of a URL's host that the SSRF gate vets, pins and sends.
///
/// Host names are lower-cased (after NFKC, an approximation of the UTS 46
/// mapping), lose one trailing dot, and each non-ASCII label becomes its IDNA
/// ASCII form (`xn--` + Punycode). Every label must then be 1–63 letters,
/// digits, `-` (not first or last) or `_`, and the name at most 253
/// characters. Hosts that are numeric addresses (IPv6 in brackets) are
/// addresses. A host with percent-escapes of ASCII characters, empty labels or
/// any other character cannot be canonicalised and is refused.
public enum CanonicalHost: Sendable, Hashable, CustomStringConvertible {
    /// A host name in canonical ASCII form.
    case name(String)
    /// A numeric address.
    case address(IPAddress)

    /// The canonical host of `url`; nil when it has none or it cannot be canonicalised.
    public init?(of url: URL) {
        guard let raw = url.host(percentEncoded: true), !raw.isEmpty else { return nil }
        self.init(raw)
    }

    /// Canonicalises `raw`, the host as written in a URL (percent-encoded, IPv6 maybe in brackets).
    public init?(_ raw: String) {
        if raw.hasPrefix("[") || raw.contains(":") {
            guard let address = IPAddress(raw) else { return nil }
            self = .address(address)
            return
        }
        // A valid name has at most 253 bytes, and the mapping composes no more than a letter and its marks into
        // one scalar: a host of more than 4 × 253 scalars is refused before the mapping and the encoding.
        guard let text = Self.decoded(raw), text.unicodeScalars.count <= 4 * 253 else { return nil }
        let mapped = text.precomposedStringWithCompatibilityMapping.lowercased()
            .replacingOccurrences(of: "\u{3002}", with: ".")
        var labels = mapped.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if labels.count > 1, labels.last == "" { labels.removeLast() }
        var ascii: [String] = []
        for label in labels {
            guard let converted = Self.asciiLabel(label) else { return nil }
            ascii.append(converted)
        }
        let name = ascii.joined(separator: ".")
        guard !name.isEmpty, name.utf8.count <= 253 else { return nil }
        if let address = IPAddress(name) {
            self = .address(address)
        } else {
            self = .name(name)
        }
    }

    /// The host as sent: the name, the IPv4 address, or the IPv6 address in brackets.
    public var urlHost: String {
        switch self {
        case .name(let name): return name
        case .address(let address): return address.isV6 ? "[\(address)]" : address.description
        }
    }

    /// The name or the address, IPv6 without brackets.
    public var description: String {
        switch self {
        case .name(let name): return name
        case .address(let address): return address.description
        }
    }

    /// `url` with this host in place of the one it was written with, and no userinfo; nil if that is not a URL.
    public func replacingHost(of url: URL) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        components.percentEncodedUser = nil
        components.percentEncodedPassword = nil
        components.percentEncodedHost = urlHost
        components.scheme = components.scheme?.lowercased()
        return components.url
    }

    // MARK: - Steps

    /// Percent-decodes `raw`; nil when an escape is malformed or stands for an ASCII character.
    private static func decoded(_ raw: String) -> String? {
        guard raw.contains("%") else { return raw }
        let bytes = Array(raw.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]),
                      high << 4 | low >= 0x80 else { return nil }
                index += 3
            } else {
                index += 1
            }
        }
        return raw.removingPercentEncoding
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// One label in ASCII: checked as it is, or `xn--` + Punycode when it has non-ASCII characters.
    private static func asciiLabel(_ label: String) -> String? {
        let isASCII = label.unicodeScalars.allSatisfy(\.isASCII)
        if !isASCII {
            // Punycode writes at least one character per scalar, so a label of more than 59 cannot fit in 63
            // with `xn--`: refused before encoding, whose time grows with the square of the label.
            guard label.unicodeScalars.count <= 59,
                  label.unicodeScalars.allSatisfy({ !$0.isASCII || isLabelCharacter($0) }),
                  label.unicodeScalars.allSatisfy({ $0.isASCII || $0.properties.isAlphabetic || $0.properties.generalCategory.isMark
                      || $0.properties.numericType != nil }),
                  let encoded = Punycode.encode(label) else { return nil }
            return validLabel("xn--" + encoded)
        }
        return validLabel(label)
    }

    private static func validLabel(_ label: String) -> String? {
        guard (1...63).contains(label.utf8.count), label.unicodeScalars.allSatisfy(isLabelCharacter),
              label.first != "-", label.last != "-" else { return nil }
        return label
    }

    private static func isLabelCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "0"..."9", "-", "_": return true
        default: return false
        }
    }
}

extension Unicode.GeneralCategory {
    /// Whether the category is a combining mark.
    var isMark: Bool { self == .nonspacingMark || self == .spacingMark || self == .enclosingMark }
}
