import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

/// imgproxy's turn, mirror, sharpen, pixelate, padding and background options, checked on the output's pixels.
@Suite("imgproxy effect options")
struct ImgproxyEffectTests {
    /// A 60×40 gradient (red across, green down, blue 100) as PNG, and one with alpha 0 everywhere.
    static func start(_ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) async throws -> ServerFixture {
        let clear = try ImageEncoder.encode(
            try Image(rgbaPixels: TestImages.gradientPixels(width: 60, height: 40, alpha: 0), width: 60, height: 40), as: .png())
        return try await ServerFixture.start(image: TestImages.encodedGradient(.png(), width: 60, height: 40), files: ["clear": clear],
                                             configure)
    }

    static func image(_ fixture: ServerFixture, _ options: String, target: String = "/image/fx") async throws -> Image {
        let reply = try await fixture.get(fixture.signedPath(options, source: fixture.source(target), ext: "png"))
        guard reply.status == 200 else { throw Failure(status: reply.status, code: reply.errorCode ?? "") }
        return try ImageDecoder.decode(reply.body)
    }

    struct Failure: Error, Equatable {
        let status: Int
        let code: String
    }

    static func rgb(_ image: Image, _ x: Int, _ y: Int) throws -> [Int] {
        let pixel = try image.pixel(x: x, y: y)
        return [Int(pixel.red), Int(pixel.green), Int(pixel.blue)]
    }

    @Test("rot turns clockwise (sides swap, corners move); anything but a multiple of 90 is a 400")
    func rotate() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let quarter = try await Self.image(fixture, "rot:90")
        #expect(quarter.width == 40 && quarter.height == 60)
        #expect(try Self.rgb(quarter, 0, 0) == [0, 255, 100], "the source's bottom-left comes to the top-left")
        let half = try await Self.image(fixture, "rotate:180")
        #expect(half.width == 60)
        #expect(try Self.rgb(half, 0, 0) == [255, 255, 100])
        let bad = try await fixture.get(fixture.signedPath("rot:45", source: fixture.source("/image/fx")))
        #expect(bad.status == 400)
        await fixture.stop()
    }

    @Test("fl mirrors left-right and top-bottom")
    func flip() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        #expect(try Self.rgb(try await Self.image(fixture, "fl:1"), 0, 0) == [255, 0, 100])
        #expect(try Self.rgb(try await Self.image(fixture, "flip:0:1"), 0, 0) == [0, 255, 100])
        #expect(try Self.rgb(try await Self.image(fixture, "fl:t:t"), 0, 0) == [255, 255, 100])
        await fixture.stop()
    }

    @Test("pix makes blocks of one colour; sh changes the pixels but not the size")
    func pixelateAndSharpen() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let blocks = try await Self.image(fixture, "pix:10")
        #expect(blocks.width == 60 && blocks.height == 40)
        let corner = try Self.rgb(blocks, 0, 0)
        #expect(try Self.rgb(blocks, 9, 9) == corner)
        #expect(try Self.rgb(blocks, 10, 0) != corner)
        let plain = try await fixture.get(fixture.signedPath("w:60", source: fixture.source("/image/fx"), ext: "png"))
        let sharp = try await fixture.get(fixture.signedPath("sh:3", source: fixture.source("/image/fx"), ext: "png"))
        #expect(sharp.status == 200 && sharp.body != plain.body)
        #expect(try ImageDecoder.decode(sharp.body).width == 60)
        await fixture.stop()
    }

    @Test("pd adds space (CSS order) filled with bg, or transparent without it; bg flattens transparency")
    func paddingAndBackground() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let padded = try await Self.image(fixture, "pd:5:10/bg:ff0000")
        #expect(padded.width == 80 && padded.height == 50)
        #expect(try Self.rgb(padded, 0, 0) == [255, 0, 0])
        #expect(try Self.rgb(padded, 10, 5) == [0, 0, 100], "the source's top-left sits inside the padding")
        let clearPad = try await Self.image(fixture, "pd:4")
        #expect(clearPad.width == 68 && clearPad.height == 48)
        #expect(try clearPad.pixel(x: 0, y: 0).alpha == 0)
        let flattened = try await Self.image(fixture, "bg:0:0:255", target: "/files/clear")
        #expect(!flattened.hasAlpha)
        #expect(try Self.rgb(flattened, 30, 20) == [0, 0, 255])
        let scaled = try await Self.image(fixture, "pd:2/dpr:2/w:60")
        #expect(scaled.width == 60 + 8, "padding is scaled by dpr too")
        await fixture.stop()
    }

    @Test("Padding that would pass the size limit is refused before any pixel is made")
    func paddingLimit() async throws {
        let fixture = try await Self.start { $0.maxResultDimension = 1000 }
        defer { Task { await fixture.stop() } }
        let reply = try await fixture.get(fixture.signedPath("pd:600", source: fixture.source("/image/fx")))
        #expect(reply.status == 422, "\(reply.errorCode ?? "")")
        await fixture.stop()
    }
}
