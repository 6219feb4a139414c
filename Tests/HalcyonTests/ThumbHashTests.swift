import Foundation
@testable import Halcyon
import Testing

/// ThumbHash, checked by decoding with the tests' own decoder (``ThumbHashDecoder``).
@Suite("ThumbHash")
struct ThumbHashTests {
    /// Mean absolute difference per channel (0...255) between a decoded hash and `image`'s pixels.
    static func error(_ decoded: ThumbHashDecoder.Decoded, against image: Image) throws -> Double {
        let pixels = try image.rgbaPixels()
        var total = 0.0
        for (index, pixel) in decoded.pixels.enumerated() {
            total += abs(pixel.r * 255 - Double(pixels[index * 4])) + abs(pixel.g * 255 - Double(pixels[index * 4 + 1]))
                + abs(pixel.b * 255 - Double(pixels[index * 4 + 2]))
        }
        return total / Double(decoded.pixels.count * 3)
    }

    @Test("A smooth image's hash decodes close to it, with its aspect ratio and average colour; a mirrored one does not")
    func decodesClose() throws {
        let image = try TestImages.gradient(width: 64, height: 40)
        let hash = try image.thumbHash()
        #expect(hash.count <= 25 && hash.count >= 5)
        let decoded = try #require(ThumbHashDecoder.decode(hash, width: 64, height: 40))
        let close = try Self.error(decoded, against: image)
        #expect(close < 12, "mean error \(close)")
        #expect(abs(decoded.aspectRatio - 64.0 / 40) < 0.3, "aspect \(decoded.aspectRatio)")
        #expect(abs(decoded.average.r * 255 - 127.5) < 6 && abs(decoded.average.b * 255 - 100) < 6, "\(decoded.average)")
        let mirrored = try FlipImageProcessor(horizontal: true, vertical: true).process(item: .image(image), options: HalcyonParsedOptionsInfo([]))
        let far = try Self.error(try #require(ThumbHashDecoder.decode(try mirrored.thumbHash(), width: 64, height: 40)), against: image)
        #expect(far > close * 4, "a mirrored image's hash is far off: \(far) vs \(close)")
    }

    @Test("Alpha is carried: a half-transparent image decodes with its alpha; portrait sources keep their aspect")
    func alphaAndPortrait() throws {
        let image = try TestImages.gradient(width: 30, height: 60, alpha: 128)
        let hash = try ThumbHash.encode(rgba: try image.rgbaPixels(), width: 30, height: 60)
        let decoded = try #require(ThumbHashDecoder.decode(hash, width: 30, height: 60))
        #expect(decoded.pixels.allSatisfy { abs($0.a - 128.0 / 255) < 0.05 })
        #expect(abs(decoded.aspectRatio - 0.5) < 0.15, "aspect \(decoded.aspectRatio)")
        #expect(throws: HalcyonError.self) { try ThumbHash.encode(rgba: [], width: 101, height: 1) }
    }

    @Test("ImageInfo carries the ThumbHash as base64")
    func inInfo() throws {
        let data = try TestImages.encodedGradient(.png(), width: 200, height: 100)
        let info = try ImageInfo.inspect(data)
        let bytes = try #require(Data(base64Encoded: info.thumbHash))
        let decoded = try #require(ThumbHashDecoder.decode(Array(bytes), width: 64, height: 32))
        #expect(abs(decoded.aspectRatio - 2) < 0.4)
    }
}
