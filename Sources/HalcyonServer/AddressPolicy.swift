import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Classifies IP addresses for the SSRF guard: which ones a source may be fetched from.
///
/// The default denies every address that is not public unicast: loopback,
/// private (RFC 1918, IPv6 ULA), link-local, CGNAT (100.64/10), unspecified,
/// multicast, broadcast, reserved and documentation ranges, and IPv4 hidden in
/// IPv6 (mapped `::ffff:0:0/96`, compatible `::/96`, 6to4 `2002::/16`, NAT64
/// `64:ff9b::/96`, Teredo `2001::/32`; for these the embedded IPv4 is
/// classified too, and the form itself is refused). `allowLoopback` and
/// `allowPrivate` open the matching classes, for local development and tests.
public struct AddressPolicy: Sendable, Hashable {
    /// Why an address is not public.
    public enum Class: String, Sendable, Hashable {
        /// 127/8, ::1, and their IPv6 embeddings.
        case loopback
        /// RFC 1918, IPv6 unique-local and site-local.
        case `private`
        /// 169.254/16, fe80::/10.
        case linkLocal = "link-local"
        /// Carrier-grade NAT, 100.64/10.
        case cgnat = "cgnat"
        /// 0/8, ::.
        case unspecified
        /// 224/4, ff00::/8.
        case multicast
        /// 255.255.255.255.
        case broadcast
        /// Reserved, benchmarking, documentation, or outside IPv6 global unicast.
        case reserved
        /// An IPv4 address carried in IPv6 (mapped, compatible, 6to4, NAT64, Teredo).
        case ipv4InIPv6 = "ipv4-in-ipv6"
        /// Public unicast: the only class allowed by default.
        case `public`
    }

    /// Let loopback addresses (127/8, ::1) through.
    public var allowLoopback: Bool
    /// Let private, link-local and CGNAT addresses through.
    public var allowPrivate: Bool

    /// Makes a policy; the default denies every non-public address.
    public init(allowLoopback: Bool = false, allowPrivate: Bool = false) {
        self.allowLoopback = allowLoopback
        self.allowPrivate = allowPrivate
    }

    /// The reason `address` is refused, or nil when it may be connected to.
    public func refusal(of address: IPAddress) -> String? {
        let kind = Self.classify(address)
        switch kind {
        case .public: return nil
        case .loopback where allowLoopback: return nil
        case .private where allowPrivate, .linkLocal where allowPrivate, .cgnat where allowPrivate: return nil
        default: return "\(address) is \(kind.rawValue)"
        }
    }

    /// The class of `address`.
    public static func classify(_ address: IPAddress) -> Class {
        switch address {
        case .v4(let b): return classifyV4(b.0, b.1, b.2, b.3)
        case .v6(let bytes): return classifyV6(bytes)
        }
    }

    private static func classifyV4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Class {
        switch (a, b) {
        case (0, _): return .unspecified
        case (127, _): return .loopback
        case (10, _), (172, 16...31), (192, 168): return .private
        case (169, 254): return .linkLocal
        case (100, 64...127): return .cgnat
        case (224...239, _): return .multicast
        case (255, _) where b == 255 && c == 255 && d == 255: return .broadcast
        case (240...255, _): return .reserved
        case (192, 0) where c == 0 || c == 2: return .reserved
        case (198, 18...19): return .reserved
        case (198, 51) where c == 100: return .reserved
        case (203, 0) where c == 113: return .reserved
        default: return .public
        }
    }

    private static func classifyV6(_ x: [UInt8]) -> Class {
        guard x.count == 16 else { return .reserved }
        let first10Zero = x[0..<10].allSatisfy { $0 == 0 }
        if x.allSatisfy({ $0 == 0 }) { return .unspecified }
        if x[0..<15].allSatisfy({ $0 == 0 }) && x[15] == 1 { return .loopback }
        // IPv4 hidden in IPv6: the form is refused whatever the embedded address.
        if first10Zero && x[10] == 0xFF && x[11] == 0xFF { return embedded(x[12], x[13], x[14], x[15]) }   // mapped
        if x[0..<12].allSatisfy({ $0 == 0 }) { return embedded(x[12], x[13], x[14], x[15]) }               // compatible
        if x[0] == 0x20 && x[1] == 0x02 { return embedded(x[2], x[3], x[4], x[5]) }                       // 6to4
        if x[0] == 0x00 && x[1] == 0x64 && x[2] == 0xFF && x[3] == 0x9B && x[4..<12].allSatisfy({ $0 == 0 }) {
            return embedded(x[12], x[13], x[14], x[15])                                                      // NAT64
        }
        if x[0] == 0x20 && x[1] == 0x01 && x[2] == 0 && x[3] == 0 {                                         // Teredo
            return embedded(~x[12], ~x[13], ~x[14], ~x[15])
        }
        if x[0] == 0xFF { return .multicast }
        if x[0] == 0xFE && (x[1] & 0xC0) == 0x80 { return .linkLocal }
        if (x[0] & 0xFE) == 0xFC { return .private }
        if x[0] == 0xFE && (x[1] & 0xC0) == 0xC0 { return .private }   // deprecated site-local
        if x[0] == 0x20 && x[1] == 0x01 && x[2] == 0x0D && x[3] == 0xB8 { return .reserved }   // documentation
        if x[0] & 0xE0 != 0x20 { return .reserved }   // outside global unicast 2000::/3
        return .public
    }

    /// An IPv4 address inside IPv6: loopback stays loopback (so it reads clearly), anything else is the IPv6 form.
    private static func embedded(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Class {
        let inner = classifyV4(a, b, c, d)
        return inner == .loopback ? .loopback : .ipv4InIPv6
    }
}

/// An IPv4 or IPv6 address in network byte order.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// An IPv4 address.
    case v4((UInt8, UInt8, UInt8, UInt8))
    /// An IPv6 address, 16 bytes.
    case v6([UInt8])

    /// Parses a numeric address (IPv6 may be in brackets); nil for host names.
    public init?(_ text: String) {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = Self.from(v4)
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self = .v6(withUnsafeBytes(of: &v6) { Array($0) })
            return
        }
        return nil
    }

    static func from(_ address: in_addr) -> IPAddress {
        var copy = address
        let bytes = withUnsafeBytes(of: &copy) { Array($0) }
        return .v4((bytes[0], bytes[1], bytes[2], bytes[3]))
    }

    /// Textual form; IPv6 without brackets.
    public var description: String {
        switch self {
        case .v4(let b): return "\(b.0).\(b.1).\(b.2).\(b.3)"
        case .v6(let bytes):
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "::?" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Whether the address is IPv6.
    public var isV6: Bool { if case .v6 = self { return true } else { return false } }

    /// Hashable by bytes.
    public static func == (lhs: IPAddress, rhs: IPAddress) -> Bool { lhs.description == rhs.description }
    /// Hashes the textual form.
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }

    /// Resolves `host` with getaddrinfo (blocking; call off the event loops); numeric hosts parse directly.
    public static func resolve(_ host: String) -> [IPAddress] {
        if let literal = IPAddress(host) { return [literal] }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let sockaddr = entry.pointee.ai_addr {
                switch entry.pointee.ai_family {
                case AF_INET:
                    let address = sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                    addresses.append(from(address))
                case AF_INET6:
                    var address = sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                    addresses.append(.v6(withUnsafeBytes(of: &address) { Array($0) }))
                default: break
                }
            }
            cursor = entry.pointee.ai_next
        }
        var seen = Set<IPAddress>()
        return addresses.filter { seen.insert($0).inserted }
    }
}
