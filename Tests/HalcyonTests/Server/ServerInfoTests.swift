import Foundation
@testable import Halcyon
@testable import HalcyonServer
import Testing

@Suite("Server /info")
struct ServerInfoTests {
    @Test("/info answers the source's size, format, alpha, colour space, dominant colour and a BlurHash that decodes close to it")
    func info() async throws {
        let fixture = try await ServerFixture.start(image: TestImages.encodedGradient(.png(), width: 320, height: 200))
        defer { Task { await fixture.stop() } }
        let signed = fixture.signedPath("bh:5:4", source: fixture.source("/image/info"))
        let reply = try await fixture.get("/info" + signed)
        #expect(reply.status == 200, "\(reply.errorCode ?? "") \(reply.errorMessage ?? "")")
        #expect(reply.header("content-type") == "application/json")
        let json = try #require(try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])
        #expect(json["width"] as? Int == 320 && json["height"] as? Int == 200)
        #expect(json["format"] as? String == "png")
        #expect(json["frames"] as? Int == 1)
        #expect(json["colorSpace"] as? String == "srgb")
        #expect(json["bytes"] as? Int == fixture.upstream.image.count)
        #expect((json["dominantColor"] as? String)?.hasPrefix("#") == true)
        let hash = try #require(json["blurHash"] as? String)
        #expect(try BlurHashDecoder.components(hash) == (5, 4))

        // The hash decodes close to the source's own small copy.
        let source = try ImageDecoder.decode(fixture.upstream.image)
        let small = try source.vips.thumbnailed(fitting: 32)
        let decoded = try BlurHashDecoder.decode(hash, width: small.width, height: small.height)
        let error = BlurHashTests.meanError(decoded, try small.withAlpha().pixelBytes())
        #expect(error < 8, "mean error \(error)")
        // The ThumbHash carries the 320:200 aspect ratio and the average colour.
        let thumbText = try #require(json["thumbHash"] as? String)
        let thumb = try #require(Data(base64Encoded: thumbText))
        let preview = try #require(ThumbHashDecoder.decode(Array(thumb), width: 32, height: 20))
        #expect(abs(preview.aspectRatio - 1.6) < 0.3 && abs(preview.average.r * 255 - 127.5) < 8, "\(preview.aspectRatio) \(preview.average)")
        await fixture.stop()
    }

    @Test("/info is signed like images, refuses unknown options and bad sources with the image errors")
    func refusals() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let signed = fixture.signedPath("", source: fixture.source("/image/x"))
        let forged = "/info/" + String(repeating: "A", count: 43) + "/" + signed.split(separator: "/", maxSplits: 1)[1]
        #expect(try await fixture.get(forged).status == 403)
        let badOption = try await fixture.get("/info" + fixture.signedPath("rs:fit:10:10", source: fixture.source("/image/x")))
        #expect(badOption.status == 400 && badOption.errorCode == "invalid_option")
        let badComponents = try await fixture.get("/info" + fixture.signedPath("bh:0:3", source: fixture.source("/image/x")))
        #expect(badComponents.status == 400)
        let missing = try await fixture.get("/info" + fixture.signedPath("", source: fixture.source("/status/404")))
        #expect(missing.status == 404)
        #expect(fixture.upstream.hits("/image/x") == 0, "refused requests never reached the origin")
        await fixture.stop()
    }

    @Test("ImageInfo reads EXIF orientation and presence from the header")
    func exifOrientation() throws {
        let jpeg = try TestImages.encodedGradient(.jpeg(), width: 64, height: 32)
        let info = try ImageInfo.inspect(jpeg)
        #expect(info.width == 64 && info.height == 32 && info.format == "jpeg" && info.orientation == 1)
        #expect(!info.hasAlpha && info.blurHash == nil)
        #expect(throws: HalcyonError.self) { try ImageInfo.inspect(Data("not an image".utf8)) }
        let rotated = try Data(contentsOf: ConformanceTests.directory.appendingPathComponent("edge/orientation-6.jpg"))
        let turned = try ImageInfo.inspect(rotated)
        #expect(turned.orientation == 6 && turned.hasEXIF, "\(turned)")
        #expect(turned.width == 48 && turned.height == 32, "sizes are as stored, before the orientation")
    }
}
