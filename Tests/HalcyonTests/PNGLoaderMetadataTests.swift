import CHalcyonVips
import Foundation
@testable import Halcyon
import Testing

/// Halcyon's shrinking PNG loader on PNGs that carry a colour profile, EXIF and text: it decodes their pixels, and
/// their metadata, resolution and orientation are libvips' own reading of the same file.
@Suite("Shrinking PNG loader: metadata")
struct PNGLoaderMetadataTests {
    /// A 132-byte ICC profile header with no tags that libpng takes: RGB or grey data, XYZ connection space, D50.
    static func iccProfile(grey: Bool) -> [UInt8] {
        var profile = [UInt8](repeating: 0, count: 132)
        func put(_ offset: Int, _ bytes: [UInt8]) { profile.replaceSubrange(offset..<offset + bytes.count, with: bytes) }
        put(0, PNGFile.be32(132))
        put(8, [0x02, 0x10, 0, 0])
        put(12, Array("mntr".utf8))
        put(16, Array((grey ? "GRAY" : "RGB ").utf8))
        put(20, Array("XYZ ".utf8))
        put(36, Array("acsp".utf8))
        put(68, PNGFile.be32(0xF6D6) + PNGFile.be32(0x1_0000) + PNGFile.be32(0xD32D))
        return profile
    }

    /// A big-endian TIFF block with IFD0's orientation, an X resolution of 300/1 and inches as the unit.
    static func exif(orientation: Int) -> [UInt8] {
        let header: [UInt8] = [0x4D, 0x4D, 0, 0x2A] + PNGFile.be32(8)
        let entries: [[UInt8]] = [
            [0x01, 0x12, 0, 3] + PNGFile.be32(1) + [0, UInt8(orientation), 0, 0],
            [0x01, 0x1A, 0, 5] + PNGFile.be32(1) + PNGFile.be32(50),
            [0x01, 0x28, 0, 3] + PNGFile.be32(1) + [0, 2, 0, 0],
        ]
        return header + [0, 3] + entries.flatMap { $0 } + PNGFile.be32(0) + PNGFile.be32(300) + PNGFile.be32(1)
    }

    /// The metadata chunks a camera or an editor writes: a profile, EXIF, and text in each of PNG's three chunks.
    static func metadataChunks(orientation: Int, grey: Bool = false) -> [(type: String, body: [UInt8])] {
        [
            ("iCCP", Array("profile\0\0".utf8) + PNGFile.zlibStored(iccProfile(grey: grey))),
            ("eXIf", exif(orientation: orientation)),
            ("pHYs", PNGFile.be32(3780) + PNGFile.be32(3780) + [1]),
            ("tEXt", Array("Title\0kite over the bay".utf8)),
            ("zTXt", Array("Comment\0\0".utf8) + PNGFile.zlibStored(Array("shot at dusk".utf8))),
            ("iTXt", Array("Author\0\0\0\0\0Ada".utf8)),
        ]
    }

    /// Every metadata field of `image` but the size, the file name and libvips' mark of a sequential read: strings as
    /// libvips writes them, blobs as bytes.
    static func fields(_ image: VipsImageRef) -> [String: String] {
        withExtendedLifetime(image) {
            var result: [String: String] = [:]
            guard let names = vips_image_get_fields(image.pointer) else { return result }
            defer { g_strfreev(names) }
            var index = 0
            while let name = names[index] {
                index += 1
                let key = String(cString: name)
                guard !["width", "height", "filename", "vips-sequential"].contains(key) else { continue }
                var data: UnsafeRawPointer?
                var length = 0
                if vips_image_get_typeof(image.pointer, name) == vips_blob_get_type(),
                   vips_image_get_blob(image.pointer, name, &data, &length) == 0, let data {
                    result[key] = Data(bytes: data, count: length).base64EncodedString()
                } else {
                    var text: UnsafeMutablePointer<CChar>?
                    if vips_image_get_as_string(image.pointer, name, &text) == 0, let text {
                        result[key] = String(cString: text)
                        g_free(text)
                    }
                }
            }
            return result
        }
    }

    @Test("a PNG with a colour profile, EXIF and text takes the loader, with libvips' metadata and resolution",
          arguments: [(bands: 3, shrink: 2), (bands: 1, shrink: 3), (bands: 3, shrink: 1)])
    func metadataIsLibvips(bands: Int, shrink: Int) throws {
        let (width, height) = (301, 205)
        let png = PNGFile.make(pixels: PNGShrinkLoaderTests.samples(width: width, height: height, bands: bands), width: width,
                               height: height, bands: bands, filters: [1, 4], extra: Self.metadataChunks(orientation: 1, grey: bands == 1))
        let side = shrink == 1 ? width / 2 : width / (2 * shrink)
        let (image, fast) = try PNGShrinkLoaderTests.decodeCounting(png, side: side)
        #expect(fast, "the shrinking loader took the file")
        let reference = try ImageDecoder.decode(png)
        let (mine, libvips) = (Self.fields(image.vips), Self.fields(reference.vips))
        #expect(libvips["icc-profile-data"] != nil && libvips["exif-data"] != nil && libvips["png-comment-1-Comment"] != nil,
                "libvips reads the profile, the EXIF and the text: \(libvips.keys.sorted())")
        #expect(mine == libvips, "fields only one side has: \(Set(mine.keys).symmetricDifference(libvips.keys).sorted())")
        let full = try reference.rgbaPixels()
        #expect(try image.rgbaPixels() == PNGShrinkLoaderTests.boxMeans(full, width: width, height: height, shrink: shrink))
    }

    @Test("an EXIF orientation is applied as libvips applies it", arguments: [3, 6, 8])
    func orientationIsApplied(orientation: Int) throws {
        let (width, height) = (240, 160)
        let png = PNGFile.make(pixels: PNGShrinkLoaderTests.samples(width: width, height: height, bands: 3), width: width,
                               height: height, bands: 3, extra: Self.metadataChunks(orientation: orientation))
        // Half the longer side: no shrink, so the result must be libvips' upright decode exactly.
        let (image, fast) = try PNGShrinkLoaderTests.decodeCounting(png, side: width / 2)
        #expect(fast, "the shrinking loader took the file")
        let reference = try ImageDecoder.decode(png)
        let sideways = orientation >= 5
        #expect(image.width == (sideways ? height : width) && image.height == (sideways ? width : height))
        #expect(try image.rgbaPixels() == reference.rgbaPixels())
        #expect(Self.fields(image.vips) == Self.fields(reference.vips))
    }

    @Test("exact downsampling of a turned PNG: either loader gives vips_thumbnail's size and a close picture")
    func exactDownsamplingTurned() throws {
        let (width, height) = (1200, 800)
        let png = PNGFile.make(pixels: PNGShrinkLoaderTests.samples(width: width, height: height, bands: 3), width: width,
                               height: height, bands: 3, extra: Self.metadataChunks(orientation: 6))
        let options = ImageDecodingOptions(downsampleSize: CGSize(width: 200, height: 200))
        let opened = try ImageDecoder.open(png, options: options)
        let before = ImageDecoder.shrinkingPNGLoads
        let mine = try ImageDecoder.decode(opened, options: options, engines: .preferred)
        #expect(ImageDecoder.shrinkingPNGLoads > before, "the shrinking loader ran")
        let libvips = try ImageDecoder.decode(opened, options: options, engines: .libvipsOnly)
        let reference = try ExactDownsamplingTests.thumbnail(png, pixels: 200)
        #expect(mine.width == reference.width && mine.height == reference.height && mine.height == 200,
                "\(mine.width)x\(mine.height), vips_thumbnail \(reference.width)x\(reference.height)")
        #expect(libvips.width == mine.width && libvips.height == mine.height)
        let quality = try FastReduceTests.psnr(mine.vips, libvips.vips, bands: 3)
        #expect(quality >= 30, "PSNR \(quality) dB against libvips' loader and resize")
    }

    @Test("metadata chunks libpng warns about decode as they do with libvips' loader, at both strictness levels", arguments: [
        "profile too short", "profile of the wrong colour space", "profile stream damaged", "text stream damaged", "EXIF not TIFF",
    ])
    func warningsDecideAlike(damage: String) throws {
        let (width, height) = (200, 120)
        var chunks = Self.metadataChunks(orientation: 1)
        switch damage {
        case "profile too short": chunks[0].body = Array("profile\0\0".utf8) + PNGFile.zlibStored([UInt8](repeating: 0, count: 40))
        case "profile of the wrong colour space": chunks[0].body = Array("profile\0\0".utf8) + PNGFile.zlibStored(Self.iccProfile(grey: true))
        case "profile stream damaged": chunks[0].body = Array("profile\0\0".utf8) + [0x78, 0x01, 0x07, 0xFF, 0x13]
        case "text stream damaged": chunks[4].body = Array("Comment\0\0".utf8) + [0x78, 0x01, 0x07, 0xFF, 0x13]
        default: chunks[1].body = Array("not a TIFF header".utf8)
        }
        let png = PNGFile.make(pixels: PNGShrinkLoaderTests.samples(width: width, height: height, bands: 3), width: width,
                               height: height, bands: 3, extra: chunks)
        for strictness in [DecodingStrictness.default, .warning] {
            let options = ImageDecodingOptions(downsampleSize: CGSize(width: 50, height: 50), downsamplingMode: .loaderOnly,
                                               strictness: strictness)
            func decode(_ engines: ImageEngines) -> Result<[String: String], HalcyonError> {
                Result { () throws(HalcyonError) in
                    Self.fields(try ImageDecoder.decode(ImageDecoder.open(png, options: options), options: options, engines: engines).vips)
                }
            }
            switch (decode(.preferred), decode(.libvipsOnly)) {
            case (.success(var mine), .success(var libvips)):
                // Loader-only sizes differ (boxes against vips_thumbnail's exact size), the metadata must not.
                for key in ["width", "height"] { mine[key] = nil; libvips[key] = nil }
                #expect(mine == libvips, "\(damage), \(strictness): \(Set(mine.keys).symmetricDifference(libvips.keys).sorted())")
            case (.failure(let a), .failure(let b)):
                #expect(PNGShrinkLoaderTests.kind(a) == PNGShrinkLoaderTests.kind(b), "\(damage), \(strictness): \(a) vs \(b)")
            case (let mine, let libvips):
                Issue.record("\(damage), \(strictness): Halcyon's loader gave \(mine), libvips' \(libvips)")
            }
        }
    }
}
