import CHalcyonVips
import Foundation
@testable import Halcyon
import Testing

/// The WebP and AVIF encoders on the calling thread (`halcyon_webpsave.c`; `halcyon_avifsave.c`, libaom on one thread)
/// against libvips' savers (libaom on four): the same file byte for byte, metadata included, and the choice between them.
@Suite("WebP and AVIF encoding on the calling thread")
struct WebPAVIFInlineEncoderTests {
    /// One of the two formats: its encoder, its count of inline encodes and the setting that turns it off.
    enum Format: String, CaseIterable, Sendable {
        case webp, avif

        /// The formats this machine can encode (libheif may lack an AV1 encoder).
        static var available: [Format] { allCases.filter { $0 == .webp || ImageEncoder.canEncodeAVIF } }

        var libvipsOnly: ImageEngines { self == .webp ? ImageEngines(webpSave: .libvips) : ImageEngines(avifSave: .libvips) }
        var settingName: String { "\(rawValue)-save" }
        var inlineCount: Int { self == .webp ? ImageEncoder.inlineWebPCount : ImageEncoder.inlineAVIFCount }

        func engine(for image: VipsImageRef, _ engines: ImageEngines) -> ImageEngine {
            self == .webp ? engines.webpSaveEngine(for: image) : engines.avifSaveEngine(for: image)
        }

        func encode(_ image: VipsImageRef, quality: Int32, lossless: Bool = false, _ engines: ImageEngines) throws -> Data {
            self == .webp
                ? try ImageEncoder.webp(image, quality: quality, lossless: lossless, engines: engines)
                : try ImageEncoder.avif(image, quality: quality, lossless: lossless, engines: engines)
        }

        /// Both encoders' files for `image`; the inline one must have run, and only it.
        func bothFiles(_ image: VipsImageRef, quality: Int32, lossless: Bool = false) throws -> (inline: Data, libvips: Data) {
            let before = inlineCount
            let inline = try encode(image, quality: quality, lossless: lossless, .preferred)
            #expect(inlineCount == before + 1, "\(self): encoded on the calling thread")
            let libvips = try encode(image, quality: quality, lossless: lossless, libvipsOnly)
            #expect(inlineCount == before + 1, "\(self): libvips' saver ran when told")
            return (inline, libvips)
        }
    }

    @Test("RGB and RGBA, lossy (4:2:0 and, for AVIF, 4:4:4 from quality 90) and lossless: libvips' saver's file byte for byte",
          arguments: Format.available, [(3, Int32(70), false), (3, 95, false), (4, 70, false), (4, 80, true)])
    func sameFileAsLibvips(format: Format, setting: (bands: Int, quality: Int32, lossless: Bool)) throws {
        // 203×131: odd sides, not a multiple of the strip height.
        let photo = try FastReduceTests.photo(width: 203, height: 131, bands: setting.bands, noise: 12)
        let (inline, libvips) = try format.bothFiles(photo, quality: setting.quality, lossless: setting.lossless)
        #expect(inline == libvips, "\(format): \(inline.count) bytes against libvips' \(libvips.count)")
        let decoded = try ImageDecoder.decode(inline)
        #expect(decoded.width == 203 && decoded.height == 131)
    }

    @Test("EXIF rebuilt from the kept fields, XMP and the ICC profile: the same file", arguments: Format.available)
    func sameMetadataAsLibvips(format: Format) throws {
        let source = JPEGInlineEncoderTests.jpegWithAllMetadata(try ImgproxyOutputTests.jpegWithCopyright())
        let image = try ImageDecoder.decode(source).vips
        let (inline, libvips) = try format.bothFiles(image, quality: 70)
        #expect(inline == libvips, "\(format): \(inline.count) bytes against libvips' \(libvips.count)")
        let written = try ImageInfo.inspect(inline)
        #expect(written.hasICCProfile && written.exif["Copyright"]?.contains("Halcyon Test") == true, "\(written.exif)")
    }

    @Test("inline for still 8-bit sRGB with or without alpha, libvips for grey or when told", arguments: Format.available)
    func choice(format: Format) throws {
        let rgb = try FastReduceTests.photo(width: 64, height: 48, bands: 3)
        let cases: [(String, VipsImageRef, ImageEngines, ImageEngine)] = [
            ("RGB", rgb, .preferred, .halcyon),
            ("RGBA", try FastReduceTests.photo(width: 64, height: 48, bands: 4), .preferred, .halcyon),
            ("RGB, setting libvips", rgb, format.libvipsOnly, .libvips),
            ("grey", try FastReduceTests.photo(width: 64, height: 48, bands: 1), .preferred, .libvips),
        ]
        for (name, image, engines, expected) in cases {
            #expect(format.engine(for: image, engines) == expected, "\(format), \(name)")
            let before = format.inlineCount
            let file = try format.encode(image, quality: 70, engines)
            #expect((format.inlineCount > before) == (expected == .halcyon), "\(format), \(name): the encoder that ran")
            #expect(try ImageDecoder.decode(file).width == 64)
        }
        let before = format.inlineCount
        let encoding: ImageEncodingFormat = format == .webp ? .webp(quality: 70) : .avif(quality: 70)
        _ = try ImageEncoder.encode(PNGDeflateEncoderTests.image(rgb), as: encoding)
        #expect(format.inlineCount == before + 1, "\(format): the encoder's default")
        #expect(ImageEngines.parse(libvipsOnly: format.settingName).engines == format.libvipsOnly)
    }
}
