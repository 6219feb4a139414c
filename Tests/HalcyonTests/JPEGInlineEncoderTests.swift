import CHalcyonVips
import Foundation
@testable import Halcyon
import Testing

/// The JPEG encoder on the calling thread (`halcyon_jpegsave.c`) against libvips' saver: the same file byte for byte,
/// metadata included, and the choice between them.
@Suite("JPEG encoding on the calling thread")
struct JPEGInlineEncoderTests {
    static let jpegSaveOnLibvips = ImageEngines(jpegSave: .libvips)

    /// Both encoders' files for `image`; the inline one must have run.
    static func bothFiles(_ image: VipsImageRef, quality: Int32, progressive: Bool) throws -> (inline: Data, libvips: Data) {
        let before = ImageEncoder.inlineJPEGCount
        let inline = try ImageEncoder.jpeg(image, quality: quality, progressive: progressive, engines: .preferred)
        #expect(ImageEncoder.inlineJPEGCount == before + 1, "libjpeg encoded on the calling thread")
        let libvips = try ImageEncoder.jpeg(image, quality: quality, progressive: progressive, engines: Self.jpegSaveOnLibvips)
        #expect(ImageEncoder.inlineJPEGCount == before + 1, "libvips' saver ran when told")
        return (inline, libvips)
    }

    @Test("RGB and grey, baseline and progressive, subsampled and not: libvips' saver's file byte for byte",
          arguments: [(3, Int32(80), false), (3, 80, true), (3, 90, false), (3, 95, true), (1, 80, false), (1, 100, true)])
    func sameFileAsLibvips(bands: Int, quality: Int32, progressive: Bool) throws {
        // 517×301: neither the strip height nor the MCU divides it.
        let photo = try FastReduceTests.photo(width: 517, height: 301, bands: bands == 1 ? 1 : 3, noise: 12)
        let (inline, libvips) = try Self.bothFiles(photo, quality: quality, progressive: progressive)
        #expect(inline == libvips, "\(inline.count) bytes against libvips' \(libvips.count)")
        let decoded = try ImageDecoder.decode(inline)
        #expect(decoded.width == 517 && decoded.height == 301)
    }

    @Test("a lazy pipeline (resize, crop) renders strip by strip to the same file")
    func lazyPipeline() throws {
        let photo = try FastReduceTests.photo(width: 900, height: 700, bands: 3, noise: 12)
        let lazy = try photo.resizedByLibvips(horizontal: 0.61, vertical: 0.61).extracted(left: 3, top: 5, width: 500, height: 411)
        let (inline, libvips) = try Self.bothFiles(lazy, quality: 75, progressive: false)
        #expect(inline == libvips, "\(inline.count) bytes against libvips' \(libvips.count)")
    }

    /// `jpeg` (which carries EXIF) with an ICC profile and an XMP packet added.
    static func jpegWithAllMetadata(_ jpeg: Data) -> Data {
        let xmp = Array("<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF/></x:xmpmeta>".utf8)
        let payload = Array("http://ns.adobe.com/xap/1.0/\0".utf8) + xmp
        let withICC = ImgproxyOutputTests.withICCProfile(jpeg)
        let length = payload.count + 2
        return Data(withICC.prefix(2)) + Data([0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload) + Data(withICC.dropFirst(2))
    }

    @Test("EXIF rebuilt from the kept fields, XMP and the ICC profile: the same markers in the same order")
    func sameMetadataAsLibvips() throws {
        let source = Self.jpegWithAllMetadata(try ImgproxyOutputTests.jpegWithCopyright())
        let image = try ImageDecoder.decode(source).vips
        let info = try ImageInfo.inspect(source)
        try #require(info.hasICCProfile && info.hasXMP && info.exif["Copyright"] != nil, "the source's metadata")
        let (inline, libvips) = try Self.bothFiles(image, quality: 80, progressive: false)
        #expect(inline == libvips, "\(inline.count) bytes against libvips' \(libvips.count)")
        let written = try ImageInfo.inspect(inline)
        #expect(written.hasICCProfile && written.hasXMP && written.exif["Copyright"]?.contains("Halcyon Test") == true)
        #expect(try ImageInfo.inspect(source).exif == info.exif, "the caller's image is left as it was")
    }

    @Test("libjpeg inline for 8-bit sRGB and grey, libvips for alpha, other formats, or when told")
    func choice() throws {
        let rgb = try FastReduceTests.photo(width: 64, height: 48, bands: 3)
        let rgba = try FastReduceTests.photo(width: 64, height: 48, bands: 4)
        let grey = try FastReduceTests.photo(width: 64, height: 48, bands: 1)
        // A float image (libvips' saver casts it back to 8 bits first).
        let float = try rgb.apply("linear") { input, output in
            [1.0, 1.0, 1.0].withUnsafeBufferPointer { a in [0.0, 0.0, 0.0].withUnsafeBufferPointer { b in
                hc_linear(input, a.baseAddress, b.baseAddress, 3, 0, output)
            } }
        }
        let cases: [(String, VipsImageRef, ImageEngines, ImageEngine)] = [
            ("RGB", rgb, .preferred, .halcyon),
            ("grey", grey, .preferred, .halcyon),
            ("RGB, setting libvips", rgb, Self.jpegSaveOnLibvips, .libvips),
            ("RGBA", rgba, .preferred, .libvips),
            ("float", float, .preferred, .libvips),
        ]
        for (name, image, engines, expected) in cases {
            #expect(engines.jpegSaveEngine(for: image) == expected, "\(name)")
            let before = ImageEncoder.inlineJPEGCount
            let file = try ImageEncoder.jpeg(image, quality: 80, progressive: false, engines: engines)
            #expect((ImageEncoder.inlineJPEGCount > before) == (expected == .halcyon), "\(name): the encoder that ran")
            #expect(try ImageDecoder.decode(file).width == 64)
        }
        let before = ImageEncoder.inlineJPEGCount
        _ = try ImageEncoder.encode(PNGDeflateEncoderTests.image(rgba), as: .jpeg(quality: 80))
        #expect(ImageEncoder.inlineJPEGCount == before + 1, "RGBA is flattened to RGB first, then encoded inline")
        #expect(ImageEngines.parse(libvipsOnly: "jpeg-save").engines == Self.jpegSaveOnLibvips)
    }
}
