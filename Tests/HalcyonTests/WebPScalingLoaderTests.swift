import CHalcyonVips
import Foundation
@testable import Halcyon
import Testing

/// Halcyon's scaling WebP loader (`halcyon_webpload.c`): libwebp decodes a still WebP on the calling thread, scaled by
/// its own rescaler; what it makes agrees with libvips' thumbnail of the same file, and what it does not take goes to
/// libvips.
@Suite("Scaling WebP loader")
struct WebPScalingLoaderTests {
    static let webpLoadOnLibvips = ImageEngines(webpLoad: .libvips)

    /// A photograph-like image of `bands` (3 or 4) encoded as WebP by libvips' saver, with `orientation` and `icc`
    /// (a colour profile) set on it when given.
    static func webp(width: Int, height: Int, bands: Int, lossless: Bool = false, orientation: Int? = nil,
                     icc: [UInt8]? = nil) throws -> Data {
        let pixels = try FastReduceTests.photo(width: width, height: height, bands: bands, noise: 12).pixelBytes()
        let image = try #require(pixels.withUnsafeBytes {
            vips_image_new_from_memory_copy($0.baseAddress, $0.count, Int32(width), Int32(height), Int32(bands), VIPS_FORMAT_UCHAR)
        })
        defer { g_object_unref(image) }
        if let orientation { vips_image_set_int(image, "orientation", Int32(orientation)) }
        if let icc { icc.withUnsafeBytes { vips_image_set_blob_copy(image, "icc-profile-data", $0.baseAddress, $0.count) } }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        try #require(hc_webpsave(image, 90, lossless ? 1 : 0, &buffer, &length) == 0)
        defer { hc_free(buffer) }
        return Data(bytes: try #require(buffer), count: length)
    }

    /// `data` decoded to fit `side` with `engines`, and whether the scaling loader ran.
    static func decode(_ data: Data, side: Int, mode: DownsamplingMode = .exact, engines: ImageEngines) throws -> (Image, Bool) {
        let options = ImageDecodingOptions(downsampleSize: CGSize(width: side, height: side), downsamplingMode: mode)
        let opened = try ImageDecoder.open(data, options: options)
        let before = ImageDecoder.scalingWebPLoads
        let image = try ImageDecoder.decode(opened, options: options, engines: engines)
        return (image, ImageDecoder.scalingWebPLoads > before)
    }

    /// libwebp scales to the fitted size in one step as libvips' loader has it do, so the pixels are the same, byte for
    /// byte; but where libvips' loader rounds a side to 0 (7 pixels by 1/18), vips_thumbnail loads at another scale and
    /// resizes after, and only the picture is close.
    @Test("a still WebP takes the loader in either mode: vips_thumbnail's size and its pixels", arguments: [
        (width: 1600, height: 1000, bands: 3, lossless: false, side: 300, same: true),
        (width: 1001, height: 1999, bands: 4, lossless: false, side: 250, same: true),
        (width: 640, height: 480, bands: 3, lossless: true, side: 100, same: true),
        (width: 643, height: 401, bands: 4, lossless: true, side: 97, same: true),
        (width: 7, height: 900, bands: 3, lossless: false, side: 50, same: false),
        (width: 300, height: 200, bands: 3, lossless: false, side: 500, same: true),
    ])
    func agreesWithLibvips(width: Int, height: Int, bands: Int, lossless: Bool, side: Int, same: Bool) throws {
        let data = try Self.webp(width: width, height: height, bands: bands, lossless: lossless)
        let reference = try ExactDownsamplingTests.thumbnail(data, pixels: side)
        for mode in [DownsamplingMode.exact, .loaderOnly] {
            let (mine, loaded) = try Self.decode(data, side: side, mode: mode, engines: .preferred)
            let (libvips, libvipsLoaded) = try Self.decode(data, side: side, mode: mode, engines: Self.webpLoadOnLibvips)
            #expect(loaded && !libvipsLoaded, "\(mode): the loader ran only when the setting allows it")
            #expect(mine.width == reference.width && mine.height == reference.height && libvips.width == mine.width &&
                    libvips.height == mine.height,
                    "\(mode): \(mine.width)x\(mine.height), libvips \(libvips.width)x\(libvips.height), vips_thumbnail \(reference.width)x\(reference.height)")
            #expect(mine.vips.bands == bands && libvips.vips.bands == bands, "\(mode): \(mine.vips.bands) bands")
            if same {
                #expect(try mine.vips.pixelBytes() == libvips.vips.pixelBytes(), "\(mode): libvips' loader's pixels")
            } else {
                let quality = try FastReduceTests.psnr(mine.vips, libvips.vips, bands: bands)
                #expect(quality >= 45, "\(mode): PSNR \(quality) dB against libvips' loader")
            }
        }
    }

    @Test("an EXIF orientation and a colour profile come out as libvips' loader gives them", arguments: [3, 6, 8])
    func orientationAndProfile(orientation: Int) throws {
        let profile = PNGLoaderMetadataTests.iccProfile(grey: false)
        let data = try Self.webp(width: 600, height: 400, bands: 3, orientation: orientation, icc: profile)
        let (mine, loaded) = try Self.decode(data, side: 150, engines: .preferred)
        let (libvips, _) = try Self.decode(data, side: 150, engines: Self.webpLoadOnLibvips)
        #expect(loaded, "the loader took the file")
        let sideways = orientation >= 5
        #expect(mine.width == (sideways ? 100 : 150) && mine.height == (sideways ? 150 : 100), "\(mine.width)x\(mine.height)")
        #expect(libvips.width == mine.width && libvips.height == mine.height)
        #expect(try mine.vips.pixelBytes() == libvips.vips.pixelBytes(), "libvips' loader's pixels")
        let (fields, libvipsFields) = (PNGLoaderMetadataTests.fields(mine.vips), PNGLoaderMetadataTests.fields(libvips.vips))
        #expect(fields["icc-profile-data"] == Data(profile).base64EncodedString(), "the profile: \(fields.keys.sorted())")
        #expect(fields["icc-profile-data"] == libvipsFields["icc-profile-data"])
    }

    @Test("the loader takes still WebPs by their header; animations, damage and the libvips setting go to libvips")
    func choice() throws {
        let still = try Self.webp(width: 120, height: 80, bands: 3)
        let animated = try ConformanceTests.bytes("edge/animated.webp")
        // A lossless stream whose header is whole (libvips opens it) and whose entropy codes are damaged.
        var damaged = try Self.webp(width: 120, height: 80, bands: 3, lossless: true)
        let chunk = try #require(damaged.range(of: Data("VP8L".utf8)), "a lossless chunk").lowerBound
        #expect(damaged.count > chunk + 200, "\(damaged.count) bytes")
        // Past the chunk header (8 bytes) and the stream's own (5): its transforms and codes.
        damaged.replaceSubrange(chunk + 18..<chunk + 78, with: [UInt8](repeating: 0xFF, count: 60))
        let cases: [(String, Data, ImageEngines, ImageEngine, Bool)] = [
            ("still", still, .preferred, .halcyon, true),
            ("still, setting libvips", still, Self.webpLoadOnLibvips, .libvips, false),
            ("animated", animated, .preferred, .libvips, false),
            // The header is whole; the loader finds the damage and hands the file back.
            ("damaged", damaged, .preferred, .halcyon, false),
        ]
        for (name, data, engines, expected, loaded) in cases {
            let opened = try ImageDecoder.open(data, options: ImageDecodingOptions(onlyFirstFrame: true))
            #expect(engines.webpLoadEngine(for: opened.buffer) == expected, "\(name)")
            let before = ImageDecoder.scalingWebPLoads
            let size = ImageDecoder.fittedSize((opened.width, opened.height), longerSide: 40)
            let image = try ImageDecoder.loadWebP(opened.buffer, header: opened.header, size: size, engines: engines)
            #expect((image != nil) == loaded && (ImageDecoder.scalingWebPLoads > before) == loaded, "\(name): the loader ran")
            if let image { #expect(image.width == size.width && image.height == size.height, "\(name)") }
        }
        // libvips' loader, which the file then goes to, says what is wrong with it.
        do {
            let (image, _) = try Self.decode(damaged, side: 40, engines: .preferred)
            Issue.record("a damaged WebP decoded: \(image.width)x\(image.height)")
        } catch {
            let corrupt = if case HalcyonError.processorError(.corruptData(.webp, _)) = error { true } else { false }
            #expect(corrupt, "a damaged WebP: \(error)")
        }
    }

    @Test("a raised RenderCancellation stops the loader, with no fallback to libvips")
    func cancelStops() throws {
        let data = try Self.webp(width: 1500, height: 1200, bands: 3)
        #expect(data.count > 128 << 10, "a stream of more than two steps: \(data.count) bytes")
        PNGShrinkLoaderTests.expectCancelStops(data, loads: { ImageDecoder.scalingWebPLoads })
    }
}
