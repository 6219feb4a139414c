import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

@Suite("Server fallback image")
struct ServerFallbackTests {
    static func fallbackFile() throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-fallback-\(UUID().uuidString).png")
        try TestImages.encodedGradient(.png(), width: 200, height: 100).write(to: file)
        return file
    }

    @Test("A failed source gets the fallback, processed with the request's options, with the failure's status")
    func servedOnSourceFailure() async throws {
        let file = try Self.fallbackFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let fixture = try await ServerFixture.start(files: ["junk": Data("not an image".utf8)]) { $0.fallbackImage = file.path }
        defer { Task { await fixture.stop() } }
        for (target, status) in [("/status/404", 404), ("/status/500", 502), ("/files/junk", 422)] {
            let reply = try await fixture.get(fixture.signedPath("w:50", source: fixture.source(target), ext: "png"))
            #expect(reply.status == status, "\(target)")
            #expect(reply.header("content-type") == "image/png", "\(target)")
            let image = try ImageDecoder.decode(reply.body)
            #expect(image.width == 50 && image.height == 25, "the fallback is resized like the request asked")
        }
        let missing = try await fixture.get(fixture.signedPath("w:50", source: fixture.source("/status/404"), ext: "png"))
        #expect(missing.header("cache-control") == "public, max-age=\(fixture.configuration.negativeCacheTTL)")
        // Errors about the request itself stay JSON errors.
        let badOption = try await fixture.get(fixture.signedPath("w:50/frob:1", source: fixture.source("/status/404")))
        #expect(badOption.status == 400 && badOption.errorCode == "invalid_option")
        let forged = try await fixture.get("/AAAA/w:50/aGVsbG8")
        #expect(forged.status == 403 && forged.errorCode == "invalid_signature")
        let metrics = String(decoding: try await fixture.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"halcyon_errors_total{code="source_not_found"}"#), "the failure is still counted")
        await fixture.stop()
    }

    @Test("A fallback file that is missing or not an image is refused at start")
    func invalidFallback() throws {
        var configuration = ServerConfiguration()
        configuration.insecure = true
        configuration.fallbackImage = "/nonexistent/fallback.png"
        #expect(throws: (any Error).self) { try ImageServer(configuration: configuration, logger: .init(label: "t")) }
    }
}
