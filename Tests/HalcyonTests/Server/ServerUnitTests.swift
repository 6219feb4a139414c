import Foundation
import Halcyon
import HalcyonServer
import Testing

@Suite("Server address policy")
struct ServerAddressPolicyTests {
    private func refused(_ text: String, policy: AddressPolicy = AddressPolicy()) -> Bool {
        guard let address = IPAddress(text) else { return false }
        return policy.refusal(of: address) != nil
    }

    @Test("Every non-public class is refused by default", arguments: [
        "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
        "100.64.0.1", "100.127.255.255", "0.0.0.0", "224.0.0.1", "255.255.255.255", "240.0.0.1",
        "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
        "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1", "2002:7f00:1::", "2002:0808:0808::1",
        "64:ff9b::7f00:1", "64:ff9b::808:808", "2001:0:4136:e378:8000:63bf:80ff:fffe", "[::ffff:127.0.0.1]",
    ])
    func refusedByDefault(_ address: String) {
        #expect(refused(address), "\(address) must be refused")
    }

    @Test("Public addresses pass", arguments: ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001::1"])
    func publicPasses(_ address: String) {
        #expect(!refused(address))
    }

    @Test("allowLoopback opens loopback only; allowPrivate opens private, link-local and CGNAT")
    func allowances() {
        let loopback = AddressPolicy(allowLoopback: true)
        #expect(!refused("127.0.0.1", policy: loopback))
        #expect(!refused("::1", policy: loopback))
        #expect(refused("10.0.0.1", policy: loopback))
        let privateNets = AddressPolicy(allowPrivate: true)
        #expect(!refused("10.0.0.1", policy: privateNets))
        #expect(!refused("169.254.1.1", policy: privateNets))
        #expect(!refused("100.64.0.1", policy: privateNets))
        #expect(refused("127.0.0.1", policy: privateNets))
        #expect(refused("::ffff:10.0.0.1", policy: privateNets), "IPv4 hidden in IPv6 stays refused")
    }

    @Test("Teredo and 6to4 forms of 127.0.0.1 read as loopback")
    func embeddedLoopback() throws {
        let teredo = try #require(IPAddress("2001:0:4136:e378:8000:63bf:80ff:fffe"))
        #expect(AddressPolicy.classify(teredo) == .loopback)
        let sixToFour = try #require(IPAddress("2002:7f00:1::"))
        #expect(AddressPolicy.classify(sixToFour) == .loopback)
    }

    @Test("The gate refuses a host name when any of its addresses is refused, before connecting")
    func gateChecksEveryResolvedAddress() async throws {
        let gate = AddressGate(policy: AddressPolicy(), resolver: { host in
            host == "rebind.test" ? [IPAddress("93.184.216.34"), IPAddress("127.0.0.1")].compactMap { $0 } : []
        })
        await #expect(throws: HalcyonError.self) {
            _ = try await gate.client(for: URL(string: "http://rebind.test/a.png")!)
        }
        await #expect(throws: HalcyonError.self) {
            _ = try await gate.client(for: URL(string: "http://unresolvable.test/a.png")!)
        }
        await gate.shutdown()
    }

    @Test("The gate pins a vetted host name to its address and passes vetted literals to the default client")
    func gatePinsVettedAddress() async throws {
        let gate = AddressGate(policy: AddressPolicy(), resolver: { _ in [IPAddress("93.184.216.34")].compactMap { $0 } })
        let pinned = try await gate.client(for: URL(string: "https://images.example/a.png")!)
        #expect(pinned != nil)
        let again = try await gate.client(for: URL(string: "https://images.example/b.png")!)
        #expect(pinned === again, "one client per vetted host and address")
        let literal = try await gate.client(for: URL(string: "http://93.184.216.34/a.png")!)
        #expect(literal == nil)
        await gate.shutdown()
    }
}

@Suite("Server URL signing and parsing")
struct ServerURLTests {
    let pair = URLSigner.KeyPair(hexKey: ServerFixture.keyHex, hexSalt: ServerFixture.saltHex)!

    @Test("imgproxy's reference signature")
    func referenceSignature() throws {
        // imgproxy's documented example: key "secret", salt "hello".
        let pair = try #require(URLSigner.KeyPair(hexKey: Data("secret".utf8).map { String(format: "%02x", $0) }.joined(),
                                                 hexSalt: Data("hello".utf8).map { String(format: "%02x", $0) }.joined()))
        let path = "/rs:fill:300:400:0/g:sm/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png"
        #expect(URLSigner(pairs: [pair]).sign(path) == "oKfUtW34Dvo2BGQehJFR4Nr0_rIjOtdtzJ3QFsUcXH8")
    }

    @Test("Verification accepts every configured pair and refuses changed paths and signatures")
    func verify() throws {
        let other = try #require(URLSigner.KeyPair(hexKey: "00ff", hexSalt: "11"))
        let signer = URLSigner(pairs: [pair, other])
        let path = "/rs:fit:10:10/aHR0cDovL2E"
        let signature = try #require(URLSigner(pairs: [other]).sign(path))
        #expect(signer.verify(signature: signature, path: path))
        #expect(!signer.verify(signature: signature, path: path + "x"))
        #expect(!signer.verify(signature: String(signature.dropLast()) + "A", path: path))
        #expect(!signer.verify(signature: "not base64!", path: path))
        #expect(URLSigner.KeyPair(hexKey: "zz", hexSalt: "00") == nil)
    }

    @Test("Base64 and plain paths with extensions")
    func parsePaths() throws {
        let base64 = try ImageURLParser.parse("/sig/rs:fit:10:10/q:50/aHR0cDovL2EvYi5qcGc.webp")
        #expect(base64.signature == "sig")
        #expect(base64.options == ["rs:fit:10:10", "q:50"])
        #expect(base64.source == "http://a/b.jpg")
        #expect(base64.outputExtension == .webp)
        #expect(base64.signedPath == "/rs:fit:10:10/q:50/aHR0cDovL2EvYi5qcGc.webp")
        let plain = try ImageURLParser.parse("/sig/w:5/plain/http%3A%2F%2Fa%2Fb%20c.jpg@png")
        #expect(plain.source == "http://a/b c.jpg")
        #expect(plain.outputExtension == .png)
        #expect(plain.options == ["w:5"])
        #expect(throws: ImageURLParser.ParseError.self) { try ImageURLParser.parse("/sig/aHR0cDovL2E.exe") }
        #expect(throws: ImageURLParser.ParseError.self) { try ImageURLParser.parse("/onlyone") }
        #expect(throws: ImageURLParser.ParseError.self) { try ImageURLParser.parse("/sig/!!!") }
    }

    @Test("Every option parses; unknown and bad options name themselves")
    func parseOptions() throws {
        let options = try ProcessingOptions.parse(
            ["rs:fill:300:200", "g:no", "q:70", "f:webp", "bl:2.5", "rd:12", "bw", "tint:ff000080"], maxDimension: 1000)
        #expect(options.resizeMode == .fill && options.width == 300 && options.height == 200)
        #expect(options.gravity.type == .no && options.quality == 70 && options.format == .webp)
        #expect(options.blur == 2.5 && options.round == 12 && options.blackWhite)
        #expect(options.tint == Color(hex: "ff000080"))
        let sizes = try ProcessingOptions.parse(["w:40", "h:30"], maxDimension: 1000)
        #expect(sizes.width == 40 && sizes.height == 30 && sizes.resizeMode == .fit)
        for bad in ["zz:2", "z:0", "rt:squash", "exp:soon", "rs:squash:1:1", "w:-1", "w:1001", "q:-1", "q:101", "g:up", "tint:xyz", "f:bmp", "bl:abc", "bw:2"] {
            do {
                _ = try ProcessingOptions.parse([bad], maxDimension: 1000)
                Issue.record("\(bad) must be refused")
            } catch {
                #expect(error.option == bad)
            }
        }
        #expect(ProcessingOptions().processor(limits: ImageDecodingOptions()) == nil)
        let chain = try #require(options.processor(limits: ImageDecodingOptions()))
        #expect(chain.identifier == options.processor(limits: ImageDecodingOptions())?.identifier)
        var other = options
        other.gravity.type = .so
        #expect(chain.identifier != other.processor(limits: ImageDecodingOptions())?.identifier)
    }

    @Test("Configuration: env over file, validation, printed values hide keys")
    func configuration() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-config-\(UUID().uuidString).json")
        try Data(#"{"port": 9000, "maxInFlight": 3, "allowedSources": ["https://a.example/"]}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let loaded = try ServerConfiguration.load(file: file.path, environment: [
            "HALCYON_PORT": "9100", "HALCYON_KEY": ServerFixture.keyHex, "HALCYON_SALT": ServerFixture.saltHex,
        ])
        #expect(loaded.port == 9100)
        #expect(loaded.maxInFlight == 3)
        #expect(loaded.allowedSources == ["https://a.example/"])
        try loaded.validate()
        #expect(!loaded.printable().contains(ServerFixture.keyHex))
        #expect(loaded.printable().contains("\"maxInFlight\" : 3"))

        var unsigned = ServerConfiguration()
        #expect(throws: ServerConfiguration.ConfigurationError.self) { try unsigned.validate() }
        unsigned.insecure = true
        try unsigned.validate()
        var both = loaded
        both.insecure = true
        #expect(throws: ServerConfiguration.ConfigurationError.self) { try both.validate() }
        // A timeout too large for a nanosecond count is refused, not a trap at start.
        for huge in [Double.infinity, 1e10, 86_401] {
            var timed = unsigned
            timed.writeTimeout = huge
            #expect(throws: ServerConfiguration.ConfigurationError.self) { try timed.validate() }
            timed.writeTimeout = 10
            timed.headerTimeout = huge
            #expect(throws: ServerConfiguration.ConfigurationError.self) { try timed.validate() }
        }
        #expect(throws: ServerConfiguration.ConfigurationError.self) {
            _ = try ServerConfiguration.load(file: nil, environment: ["HALCYON_PORT": "eighty"])
        }
    }

    @Test("A connection cap at or below the requests in flight plus queued is a startup warning; the defaults give none")
    func connectionCapWarning() {
        var settings = ServerConfiguration()
        #expect(settings.warnings.isEmpty, "\(settings.warnings)")
        settings.maxInFlight = 4
        settings.maxQueue = 16
        settings.maxConnections = 21
        #expect(settings.warnings.isEmpty, "\(settings.warnings)")
        settings.maxConnections = 20
        #expect(settings.warnings.count == 1 && settings.warnings[0].contains("max-connections 20"), "\(settings.warnings)")
        settings.maxQueue = .max
        #expect(settings.warnings.count == 1, "a queue limit that overflows the sum is no trap, and warns")
    }
}

@Suite("Server host canonicalisation")
struct CanonicalHostTests {
    @Test("IDNA labels become punycode; labels and names too long for DNS are refused, however long")
    func lengths() {
        #expect(CanonicalHost("B%C3%9Ccher.test") == .name("xn--bcher-kva.test"))
        #expect(CanonicalHost(String(repeating: "a", count: 63) + ".test") != nil)
        #expect(CanonicalHost(String(repeating: "a", count: 64) + ".test") == nil)
        let han = "%E6%BC%A2"  // one Han character, percent-encoded as a URL carries it
        #expect(CanonicalHost(String(repeating: han, count: 5) + ".test") != nil)
        for count in [60, 5_000] {
            #expect(CanonicalHost(String(repeating: han, count: count) + ".test") == nil, "\(count) Han characters in one label")
        }
        let manyLabels = Array(repeating: String(repeating: han, count: 3), count: 400).joined(separator: ".")
        #expect(CanonicalHost(manyLabels) == nil, "1,200 characters in 400 labels")
    }
}
