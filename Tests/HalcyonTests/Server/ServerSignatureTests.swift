import Foundation
import Halcyon
import HalcyonServer
import Testing

@Suite("Server signature encoding and keys")
struct ServerSignatureTests {
    let pair = URLSigner.KeyPair(hexKey: ServerFixture.keyHex, hexSalt: ServerFixture.saltHex)!
    let path = "/rs:fit:10:10/aHR0cDovL2E"
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    @Test("Only the unpadded URL-safe base64 of the MAC verifies: no padding, no standard alphabet")
    func oneEncoding() throws {
        let signer = URLSigner(pairs: [pair])
        let signature = try #require(signer.sign(path))
        #expect(signature.count == 43)
        #expect(signer.verify(signature: signature, path: path))
        for variant in [signature + "=", signature + "==", signature + "===", " " + signature, signature + "\n",
                        signature.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/"),
                        String(signature.dropLast()), signature + "A"] where variant != signature {
            #expect(!signer.verify(signature: variant, path: path), "\(variant.debugDescription) must not verify")
        }
    }

    @Test("Last-character variants that decode to the same bytes (other unused low bits) are refused")
    func nonCanonicalLastCharacter() throws {
        let signer = URLSigner(pairs: [pair])
        let signature = try #require(signer.sign(path))
        var accepted: [String] = []
        for character in Self.alphabet where character != signature.last {
            let variant = String(signature.dropLast()) + String(character)
            if signer.verify(signature: variant, path: path) { accepted.append(variant) }
        }
        #expect(accepted.isEmpty, "non-canonical variants verified: \(accepted)")
    }

    @Test("Keys shorter than 32 bytes are refused at start-up with a clear message")
    func shortKeysRefused() throws {
        var configuration = ServerConfiguration()
        configuration.keys = [String(repeating: "ab", count: 31)]
        configuration.salts = ["00"]
        do {
            try configuration.validate()
            Issue.record("a 31-byte key must be refused")
        } catch {
            #expect(error.message.contains("32 bytes"), "\(error.message)")
        }
        configuration.keys = [String(repeating: "ab", count: 32)]
        try configuration.validate()
        configuration.keys.append("00ff")
        configuration.salts.append("11")
        #expect(throws: ServerConfiguration.ConfigurationError.self) { try configuration.validate() }
    }
}
