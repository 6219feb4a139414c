import Crypto
import Foundation

/// Signs and verifies image URLs: HMAC-SHA256 over salt + path, URL-safe
/// base64 without padding (imgproxy's scheme), with several key/salt pairs so
/// keys can rotate. Verification accepts exactly one encoding (43 characters of
/// the URL-safe alphabet, the canonical encoding of the 32-byte MAC: no
/// padding, no other alphabet, no other unused low bits) and compares the
/// encoded strings in constant time.
public struct URLSigner: Sendable {
    /// A key and its salt, raw bytes.
    public struct KeyPair: Sendable, Hashable {
        /// The HMAC key.
        public var key: Data
        /// The salt put before the path.
        public var salt: Data
        /// The shortest key the server accepts at start-up, in bytes (the HMAC-SHA256 output size).
        public static let minimumKeyLength = 32

        /// Makes a pair from raw bytes.
        public init(key: Data, salt: Data) {
            self.key = key
            self.salt = salt
        }

        /// Makes a pair from hex strings; nil when either is not even-length hex or the key is empty.
        public init?(hexKey: String, hexSalt: String) {
            guard let key = Data(hex: hexKey), !key.isEmpty, let salt = Data(hex: hexSalt) else { return nil }
            self.init(key: key, salt: salt)
        }
    }

    /// The pairs; the first signs, any verifies.
    public let pairs: [KeyPair]

    /// Makes a signer.
    public init(pairs: [KeyPair]) { self.pairs = pairs }

    /// The signature of `path` (starting with "/", everything after the signature segment) with the first pair.
    public func sign(_ path: String) -> String? {
        pairs.first.map { Self.signature(path, pair: $0) }
    }

    /// The length of an encoded signature: unpadded base64 of 32 bytes.
    public static let signatureLength = 43

    /// Whether `signature` is valid for `path` under any pair: exactly the
    /// canonical unpadded URL-safe base64 of the MAC, nothing that merely decodes to it.
    public func verify(signature: String, path: String) -> Bool {
        let given = Array(signature.utf8)
        guard given.count == Self.signatureLength, given.allSatisfy(Self.isURLSafeBase64) else { return false }
        var valid = false
        for pair in pairs {
            // The expected string is canonical, so equal strings mean a canonical signature.
            // Every pair is checked, each in constant time, so timing says nothing about which matched.
            let expected = Array(Self.signature(path, pair: pair).utf8)
            if Self.constantTimeEqual(expected, given) { valid = true }
        }
        return valid
    }

    private static func isURLSafeBase64(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"): return true
        default: return false
        }
    }

    static func mac(_ path: String, pair: KeyPair) -> Data {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: pair.key))
        hmac.update(data: pair.salt)
        hmac.update(data: Data(path.utf8))
        return Data(hmac.finalize())
    }

    static func signature(_ path: String, pair: KeyPair) -> String { mac(path, pair: pair).base64URLEncoded() }

    /// Compares two byte arrays without an early exit.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        let count = max(a.count, b.count)
        for index in 0..<count {
            let left = index < a.count ? a[index] : 0
            let right = index < b.count ? b[index] : 0
            difference |= left ^ right
        }
        return difference == 0
    }
}

extension Data {
    /// Decodes hex text (either case); nil when odd length or not hex.
    init?(hex: String) {
        let chars = Array(hex.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let high = Self.nibble(chars[index]), let low = Self.nibble(chars[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.init(bytes)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 97...102: return c - 87
        case 65...70: return c - 55
        default: return nil
        }
    }

    /// Decodes URL-safe base64, with or without padding.
    init?(base64URL text: String) {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !standard.contains("=") || standard.hasSuffix("=") else { return nil }
        standard = standard.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        let remainder = standard.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { standard += String(repeating: "=", count: 4 - remainder) }
        self.init(base64Encoded: standard)
    }

    /// URL-safe base64 without padding.
    func base64URLEncoded() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .trimmingCharacters(in: CharacterSet(charactersIn: "="))
    }

    /// Lower-case hex.
    var hexString: String { map { String(format: "%02x", $0) }.joined() }
}
