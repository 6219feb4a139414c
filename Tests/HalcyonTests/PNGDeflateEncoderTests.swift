import CHalcyonVips
import Foundation
@testable import Halcyon
import Testing

/// libdeflate's PNG encoding (`halcyon_pngsave.c`) behind `ImageEncoder`'s PNG, against libvips' decode of its output.
@Suite("PNG encoding with libdeflate")
struct PNGDeflateEncoderTests {
    /// A still image around a libvips image.
    static func image(_ vips: VipsImageRef) -> Image {
        Image(vips: vips, frameHeight: vips.height, frameCount: 1, scale: 1, originalFormat: .unknown,
              frameDelays: [], loopCount: 0, sourceFingerprint: nil)
    }

    @Test("grey, grey and alpha, RGB and RGBA come back pixel for pixel, in IHDR, pHYs, IDAT and IEND",
          arguments: [(1, UInt8(0)), (2, 4), (3, 2), (4, 6)])
    func losslessRoundTrip(bands: Int, colourType: UInt8) throws {
        let source = bands == 2
            ? try FastReduceTests.photo(width: 517, height: 301, bands: 4).bands(from: 2, count: 2).materialized()
            : try FastReduceTests.photo(width: 517, height: 301, bands: bands)
        let before = ImageEncoder.libdeflatePNGCount
        let png = try ImageEncoder.encode(Self.image(source), as: .png())
        #expect(ImageEncoder.libdeflatePNGCount == before + 1, "libdeflate encoded the image")
        let chunks = PNGFile.chunks(of: png)
        #expect(chunks.map(\.type).filter { $0 != "IDAT" } == ["IHDR", "pHYs", "IEND"])
        #expect(chunks.first?.body[8] == 8 && chunks.first?.body[9] == colourType, "bit depth 8, colour type \(colourType)")
        let decoded = try ImageDecoder.decode(png)
        #expect(decoded.width == 517 && decoded.height == 301)
        // Each source sample against the decoded pixel's: grey is the red of the grey replicated, alpha is alpha.
        let channels = [1: [0], 2: [0, 3], 3: [0, 1, 2], 4: [0, 1, 2, 3]][bands] ?? []
        let rgba = try decoded.rgbaPixels()
        let samples = (0..<517 * 301).flatMap { pixel in channels.map { rgba[pixel * 4 + $0] } }
        #expect(try samples == source.rgbaBytes(bands: bands))
    }

    @Test("no larger than libpng's file at the same zlib level")
    func noLargerThanLibpng() throws {
        let source = Self.image(try FastReduceTests.photo(width: 512, height: 384, bands: 3, noise: 12))
        let fast = try ImageEncoder.encode(source, as: .png())
        let libpng = try source.vips.saved(as: .png) { hc_pngsave_libpng($0, 4, 0, $1, $2) }
        #expect(fast.count <= libpng.count, "libdeflate \(fast.count) bytes, libpng \(libpng.count)")
        let (ours, theirs) = (PNGFile.chunks(of: fast), PNGFile.chunks(of: libpng))
        for type in ["IHDR", "pHYs"] {
            #expect(ours.first { $0.type == type }?.body == theirs.first { $0.type == type }?.body, "\(type) as libpng writes it")
        }
    }

    @Test("interlaced output and images with comments are left to libpng")
    func othersGoToLibpng() throws {
        let (width, height) = (120, 90)
        let pixels = PNGShrinkLoaderTests.samples(width: width, height: height, bands: 3)
        let commented = try ImageDecoder.decode(PNGFile.make(pixels: pixels, width: width, height: height, bands: 3,
                                                             extra: [("tEXt", Array("Comment\0kept".utf8))]))
        let plain = try ImageDecoder.decode(PNGFile.make(pixels: pixels, width: width, height: height, bands: 3))
        for (name, image, encoding, text) in [("comment", commented, ImageEncodingFormat.png(), true),
                                              ("interlaced", plain, .png(interlaced: true), false)] {
            let before = ImageEncoder.libdeflatePNGCount
            let png = try ImageEncoder.encode(image, as: encoding)
            #expect(ImageEncoder.libdeflatePNGCount == before, "\(name): libdeflate took it")
            // libvips writes the comment back compressed (zTXt).
            #expect(PNGFile.chunks(of: png).contains { ["tEXt", "zTXt", "iTXt"].contains($0.type) } == text, "\(name): text chunks")
            #expect(PNGFile.chunks(of: png).first?.body[12] == (encoding == .png(interlaced: true) ? 1 : 0), "\(name): interlace flag")
            #expect(try ImageDecoder.decode(png).rgbaPixels() == plain.rgbaPixels(), "\(name)")
        }
    }
}
