import CHalcyonVips
import Foundation
@testable import Halcyon
import Testing

/// The WebP encoder on the calling thread (`halcyon_webpsave.c`) against libvips' saver: the same file byte for byte,
/// metadata included, and the choice between them.
@Suite("WebP encoding on the calling thread")
struct WebPInlineEncoderTests {
    static let webpSaveOnLibvips = ImageEngines(webpSave: .libvips)

    /// Both encoders' files for `image`; the inline one must have run.
    static func bothFiles(_ image: VipsImageRef, quality: Int32, lossless: Bool = false) throws -> (inline: Data, libvips: Data) {
        let before = ImageEncoder.inlineWebPCount
        let inline = try ImageEncoder.webp(image, quality: quality, lossless: lossless, engines: .preferred)
        #expect(ImageEncoder.inlineWebPCount == before + 1, "libwebp encoded on the calling thread")
        let libvips = try ImageEncoder.webp(image, quality: quality, lossless: lossless, engines: Self.webpSaveOnLibvips)
        #expect(ImageEncoder.inlineWebPCount == before + 1, "libvips' saver ran when told")
        return (inline, libvips)
    }

    @Test("RGB and RGBA, lossy and lossless: libvips' saver's file byte for byte",
          arguments: [(3, Int32(75), false), (3, 95, false), (4, 75, false), (4, 80, true)])
    func sameFileAsLibvips(bands: Int, quality: Int32, lossless: Bool) throws {
        // 203×131: odd sides, not a multiple of the strip height.
        let photo = try FastReduceTests.photo(width: 203, height: 131, bands: bands, noise: 12)
        let (inline, libvips) = try Self.bothFiles(photo, quality: quality, lossless: lossless)
        #expect(inline == libvips, "\(inline.count) bytes against libvips' \(libvips.count)")
        let decoded = try ImageDecoder.decode(inline)
        #expect(decoded.width == 203 && decoded.height == 131)
    }

    @Test("EXIF rebuilt from the kept fields, XMP and the ICC profile: the same file")
    func sameMetadataAsLibvips() throws {
        let source = JPEGInlineEncoderTests.jpegWithAllMetadata(try ImgproxyOutputTests.jpegWithCopyright())
        let image = try ImageDecoder.decode(source).vips
        let (inline, libvips) = try Self.bothFiles(image, quality: 75)
        #expect(inline == libvips, "\(inline.count) bytes against libvips' \(libvips.count)")
        let written = try ImageInfo.inspect(inline)
        #expect(written.hasICCProfile && written.exif["Copyright"]?.contains("Halcyon Test") == true, "\(written.exif)")
    }

    @Test("libwebp inline for still 8-bit sRGB with or without alpha, libvips for grey, other formats, or when told")
    func choice() throws {
        let rgb = try FastReduceTests.photo(width: 64, height: 48, bands: 3)
        let rgba = try FastReduceTests.photo(width: 64, height: 48, bands: 4)
        let grey = try FastReduceTests.photo(width: 64, height: 48, bands: 1)
        let cases: [(String, VipsImageRef, ImageEngines, ImageEngine)] = [
            ("RGB", rgb, .preferred, .halcyon),
            ("RGBA", rgba, .preferred, .halcyon),
            ("RGB, setting libvips", rgb, Self.webpSaveOnLibvips, .libvips),
            ("grey", grey, .preferred, .libvips),
        ]
        for (name, image, engines, expected) in cases {
            #expect(engines.webpSaveEngine(for: image) == expected, "\(name)")
            let before = ImageEncoder.inlineWebPCount
            let file = try ImageEncoder.webp(image, quality: 75, lossless: false, engines: engines)
            #expect((ImageEncoder.inlineWebPCount > before) == (expected == .halcyon), "\(name): the encoder that ran")
            #expect(try ImageDecoder.decode(file).width == 64)
        }
        let before = ImageEncoder.inlineWebPCount
        _ = try ImageEncoder.encode(PNGDeflateEncoderTests.image(rgb), as: .webp(quality: 75))
        #expect(ImageEncoder.inlineWebPCount == before + 1, "the encoder's default")
        #expect(ImageEngines.parse(libvipsOnly: "webp-save").engines == Self.webpSaveOnLibvips)
    }
}
