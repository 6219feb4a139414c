import CHalcyonVips
import Foundation
@testable import Halcyon
import Testing

/// Exact downsampling (``DownsamplingMode/exact``) of still JPEGs and plain PNGs: the loader's shrink, then
/// the fixed-point Lanczos-3 reduce, against `vips_thumbnail`'s answer for the same bytes and box.
@Suite("Exact downsampling")
struct ExactDownsamplingTests {
    /// `vips_thumbnail`'s answer for `data` in a `pixels` box, as 8-bit sRGB in memory.
    static func thumbnail(_ data: Data, pixels: Int) throws -> VipsImageRef {
        let bytes = [UInt8](data)
        return try bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(HalcyonError) -> VipsImageRef in
            try VipsImageRef.make("thumbnail") { output in
                hc_thumbnail_buffer(raw.baseAddress, raw.count, Int32(pixels), Int32(pixels), 0, 0, output)
            }.srgb8().materialized()
        }
    }

    /// A photograph-like still image encoded as `format` (`bands` 1 or 3).
    static func source(_ format: ImageEncodingFormat, width: Int, height: Int, bands: Int) throws -> Data {
        try PNGDeflateEncoderTests.image(FastReduceTests.photo(width: width, height: height, bands: bands, noise: 12)).encoded(as: format)
    }

    @Test("a still JPEG or plain PNG takes the loader's shrink and the fixed-point reduce: vips_thumbnail's size, its picture", arguments: [
        (name: "RGB JPEG", format: ImageEncodingFormat.jpeg(quality: 90), width: 1600, height: 1000, bands: 3, side: 300),
        (name: "grey JPEG", format: .jpeg(quality: 90), width: 700, height: 1100, bands: 1, side: 250),
        (name: "JPEG at 1/2", format: .jpeg(quality: 90), width: 1000, height: 640, bands: 3, side: 333),
        (name: "plain RGB PNG", format: .png(), width: 1200, height: 800, bands: 3, side: 200),
    ])
    func fastPath(name: String, format: ImageEncodingFormat, width: Int, height: Int, bands: Int, side: Int) throws {
        let data = try Self.source(format, width: width, height: height, bands: bands)
        let before = VipsImageRef.fastReduceCount
        let image = try ImageDecoder.decode(data, options: ImageDecodingOptions(downsampleSize: CGSize(width: side, height: side)))
        #expect(VipsImageRef.fastReduceCount > before, "\(name): the fixed-point reduce ran")
        #expect(max(image.width, image.height) == side, "\(name): \(image.width)x\(image.height)")
        let reference = try Self.thumbnail(data, pixels: side)
        #expect(image.width == reference.width && image.height == reference.height,
                "\(name): \(image.width)x\(image.height) against vips_thumbnail's \(reference.width)x\(reference.height)")
        // The picture: against the whole decode reduced to the same size by vips_resize's Lanczos-3.
        let whole = try ImageDecoder.decode(data).vips
        let ideal = try whole.resizedByLibvips(horizontal: Double(image.width) / Double(whole.width),
                                               vertical: Double(image.height) / Double(whole.height)).materialized()
        #expect(ideal.width == image.width && ideal.height == image.height)
        let quality = try FastReduceTests.psnr(image.vips, ideal, bands: image.vips.bands)
        #expect(quality >= 40, "\(name): PSNR against the whole decode reduced by libvips \(quality) dB")
    }

    @Test("CMYK JPEGs and images no loader shrinks still go through vips_thumbnail")
    func otherImages() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/Degenerate")
        let cmyk = try Data(contentsOf: fixtures.appendingPathComponent("jpeg-cmyk-1x300.jpg"))
        let webp = try Self.source(.webp(quality: 90), width: 600, height: 400, bands: 3)
        for (name, data, side) in [("CMYK JPEG", cmyk, 100), ("WebP", webp, 150)] {
            let before = VipsImageRef.fastReduceCount
            let image = try ImageDecoder.decode(data, options: ImageDecodingOptions(downsampleSize: CGSize(width: side, height: side)))
            #expect(VipsImageRef.fastReduceCount == before, "\(name): vips_thumbnail, not the fixed-point reduce")
            let reference = try Self.thumbnail(data, pixels: side)
            #expect(image.width == reference.width && image.height == reference.height, "\(name)")
        }
    }

    @Test("an image already inside the box is decoded as it is, with its fingerprint")
    func noEnlargement() throws {
        let data = try Self.source(.jpeg(quality: 90), width: 120, height: 80, bands: 3)
        let image = try ImageDecoder.decode(data, options: ImageDecodingOptions(downsampleSize: CGSize(width: 500, height: 500)))
        #expect(image.width == 120 && image.height == 80)
        #expect(image.sourceFingerprint != nil)
    }
}
