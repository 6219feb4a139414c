import Foundation
import Halcyon
import HalcyonServer
import Testing

/// GIF and WebP compress a whole frame without looking at cancellation, so the server bounds their frames before
/// the encode starts (``ImageEncoder/uncancellableFrameLimit(for:)``).
@Suite("Server bounds for encoders that cannot be stopped", .serialized)
struct ServerEncodeBoundTests {
    /// A flat 2200×2000 image (4.4 megapixels, over GIF's 4), quick to make and to encode.
    private static func flat(_ encoding: ImageEncodingFormat) throws -> Data {
        try TestImages.solid(RGBA8(red: 40, green: 120, blue: 200, alpha: 255), width: 2200, height: 2000).encoded(as: encoding)
    }

    @Test("GIF asked for over its frame bound is 422 before any encode; under it, a GIF")
    func explicitGIFOverBound() async throws {
        let fixture = try await ServerFixture.start(image: try Self.flat(.png()))
        let source = fixture.source("/image/flat")
        let started = ContinuousClock.now
        let over = try await fixture.get(fixture.signedPath("", source: source, ext: "gif"))
        #expect(over.status == 422, "a 4.4 MP GIF was encoded (\(over.status))")
        #expect(over.errorCode == "result_too_large_for_format")
        #expect(over.errorMessage?.contains("4 megapixels") == true, "\(over.errorMessage ?? "-")")
        #expect(ContinuousClock.now - started < .seconds(5))
        let under = try await fixture.get(fixture.signedPath("rs:fit:300:300", source: source, ext: "gif"))
        #expect(under.status == 200)
        #expect(under.header("content-type") == "image/gif")
        await fixture.stop()
    }

    @Test("A GIF source over the bound with no format asked for is answered in PNG (it decodes with alpha), not GIF")
    func impliedGIFFallsBack() async throws {
        let fixture = try await ServerFixture.start(image: try Self.flat(.gif))
        let reply = try await fixture.get(fixture.signedPath("", source: fixture.source("/image/flat-gif")))
        #expect(reply.status == 200)
        #expect(reply.header("content-type") == "image/png", "\(reply.header("content-type") ?? "-")")
        await fixture.stop()
    }

    @Test("The bounds: GIF 4 MP, lossy WebP 16 MP, lossless WebP 2.5 MP a frame; no bound for the others")
    func bounds() {
        #expect(ImageEncoder.uncancellableFrameLimit(for: .gif) == 4_000_000)
        #expect(ImageEncoder.uncancellableFrameLimit(for: .webp(quality: 80)) == 16_000_000)
        #expect(ImageEncoder.uncancellableFrameLimit(for: .webp(quality: 80, lossless: true)) == 2_500_000)
        #expect(ImageEncoder.uncancellableFrameLimit(for: .jpeg(quality: 80)) == nil)
        #expect(ImageEncoder.uncancellableFrameLimit(for: .png()) == nil)
    }
}
