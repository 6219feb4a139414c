import CHalcyonVips
import Foundation
@testable import Halcyon
import Testing

/// Halcyon's shrinking PNG loader (`halcyon_png.c`), reached through loader-only downsampling, against
/// libvips' own PNG decode of the same bytes.
@Suite("Shrinking PNG loader")
struct PNGShrinkLoaderTests {
    /// Noisy 8-bit samples with gradients and bars, `bands` per pixel.
    static func samples(width: Int, height: Int, bands: Int, seed start: UInt32 = 7) -> [UInt8] {
        var seed = start
        var pixels = [UInt8](repeating: 0, count: width * height * bands)
        for y in 0..<height {
            for x in 0..<width {
                for band in 0..<bands {
                    seed = seed &* 1_103_515_245 &+ 12345
                    let noise = Int(seed >> 24) % 41 - 20
                    let base = [x * 255 / width, y * 255 / height, (x / 29) % 2 == 0 ? 200 : 40, 128 + x % 100][band]
                    pixels[(y * width + x) * bands + band] = UInt8(clamping: base + noise)
                }
            }
        }
        return pixels
    }

    static func loaderOnly(_ side: Int) -> ImageDecodingOptions {
        ImageDecodingOptions(downsampleSize: CGSize(width: side, height: side), downsamplingMode: .loaderOnly)
    }

    /// `data` through loader-only downsampling to `side`, with whether the shrinking loader took it.
    static func decodeCounting(_ data: Data, side: Int) throws -> (image: Image, fast: Bool) {
        let before = ImageDecoder.shrinkingPNGLoads
        let image = try ImageDecoder.decode(data, options: loaderOnly(side))
        return (image, ImageDecoder.shrinkingPNGLoads > before)
    }

    /// The rounded mean of every `shrink` × `shrink` box of an RGBA image (smaller boxes on the right and bottom).
    static func boxMeans(_ rgba: [UInt8], width: Int, height: Int, shrink: Int) -> [UInt8] {
        let (outWidth, outHeight) = ((width + shrink - 1) / shrink, (height + shrink - 1) / shrink)
        var out = [UInt8](repeating: 0, count: outWidth * outHeight * 4)
        for oy in 0..<outHeight {
            for ox in 0..<outWidth {
                let (xs, ys) = (ox * shrink..<min(width, ox * shrink + shrink), oy * shrink..<min(height, oy * shrink + shrink))
                let count = xs.count * ys.count
                for band in 0..<4 {
                    let sum = ys.reduce(0) { total, y in xs.reduce(total) { $0 + Int(rgba[(y * width + $1) * 4 + band]) } }
                    out[(oy * outWidth + ox) * 4 + band] = UInt8((sum + count / 2) / count)
                }
            }
        }
        return out
    }

    @Test("every row filter decodes to libvips' pixels, grey and RGB, in IDAT chunks of any size", arguments: [
        (bands: 3, filters: [UInt8]([0, 1, 2, 3, 4]), idat: 1 << 20), (bands: 1, filters: [4, 3, 2, 1, 0], idat: 4099),
        (bands: 3, filters: [4], idat: 1), (bands: 3, filters: [3, 2], idat: 65_536),
    ])
    func filtersMatchLibvips(bands: Int, filters: [UInt8], idat: Int) throws {
        let (width, height) = (173, 91)
        let png = PNGFile.make(pixels: Self.samples(width: width, height: height, bands: bands), width: width, height: height,
                               bands: bands, filters: filters, idatSize: idat)
        // A target of at least half the longer side: no shrink, so the loader's rows are the image.
        let (image, fast) = try Self.decodeCounting(png, side: 100)
        #expect(fast, "the shrinking loader took the file")
        let reference = try ImageDecoder.decode(png)
        #expect(image.width == width && image.height == height)
        #expect(try image.rgbaPixels() == reference.rgbaPixels())
    }

    @Test("a shrink averages boxes of whole pixels; the edge boxes are smaller", arguments: [(1, 3), (3, 2), (3, 3), (3, 5), (1, 37), (3, 150)])
    func boxShrink(bands: Int, shrink: Int) throws {
        let (width, height) = (301, 205)
        let png = PNGFile.make(pixels: Self.samples(width: width, height: height, bands: bands), width: width, height: height,
                               bands: bands, filters: [1, 4, 2])
        // 301 / (2 × 50) = 3 and so on: the largest shrink that leaves twice the target.
        let side = width / (2 * shrink)
        #expect(ImageDecoder.pngShrink(longerSide: width, atLeast: side) == shrink)
        let (image, fast) = try Self.decodeCounting(png, side: side)
        #expect(fast, "the shrinking loader took the file")
        #expect(image.width == (width + shrink - 1) / shrink && image.height == (height + shrink - 1) / shrink,
                "got \(image.width)x\(image.height)")
        let full = try ImageDecoder.decode(png).rgbaPixels()
        #expect(try image.rgbaPixels() == Self.boxMeans(full, width: width, height: height, shrink: shrink))
    }

    @Test("a zlib-compressed PNG from libvips, whole and in 997-byte IDAT chunks, decodes to libvips' pixels")
    func compressedStream() throws {
        let source = PNGDeflateEncoderTests.image(try FastReduceTests.photo(width: 640, height: 480, bands: 3))
        for png in [try source.encoded(as: .png()), PNGFile.rechunked(try source.encoded(as: .png()), idatSize: 997)] {
            let (image, fast) = try Self.decodeCounting(png, side: 160)
            #expect(fast, "the shrinking loader took the file")
            #expect(image.width == 320 && image.height == 240)
            let full = try ImageDecoder.decode(png).rgbaPixels()
            #expect(try image.rgbaPixels() == Self.boxMeans(full, width: 640, height: 480, shrink: 2))
        }
    }

    @Test("PNGs in real zlib streams take the loader: libpng's in 8 KiB IDATs, libdeflate's whole and re-chunked",
          arguments: [(64, 48), (300, 200), (1000, 700)])
    func realStreams(width: Int, height: Int) throws {
        let photo = try FastReduceTests.photo(width: width, height: height, bands: 3)
        let image = PNGDeflateEncoderTests.image(photo)
        let libpng = try photo.saved(as: .png) { hc_pngsave_libpng($0, 6, 0, $1, $2) }
        let libdeflate = try image.encoded(as: .png())
        for (name, png) in [("libpng", libpng), ("libdeflate", libdeflate), ("8 KiB IDATs", PNGFile.rechunked(libdeflate, idatSize: 8192))] {
            // Half the longer side: no shrink, so the loader's rows are the image.
            let (decoded, fast) = try Self.decodeCounting(png, side: width / 2)
            #expect(fast, "\(name): the shrinking loader took the file")
            #expect(try decoded.rgbaPixels() == ImageDecoder.decode(png).rgbaPixels(), "\(name)")
        }
    }

    @Test("the resolution is libvips': 72 dpi without pHYs, else the first valid pHYs, in pixels per metre or its own unit")
    func resolution() throws {
        let (width, height) = (40, 30)
        let pixels = Self.samples(width: width, height: height, bands: 3)
        func pHYs(_ x: Int, _ y: Int, unit: UInt8) -> (type: String, body: [UInt8]) {
            ("pHYs", PNGFile.be32(x) + PNGFile.be32(y) + [unit])
        }
        let cases = [[], [pHYs(3780, 3780, unit: 1)], [pHYs(2, 3, unit: 0)], [pHYs(5000, 6000, unit: 1), pHYs(1000, 1000, unit: 1)],
                     [("pHYs", [UInt8](repeating: 1, count: 8)), pHYs(3780, 3780, unit: 1)]]
        for extra in cases {
            let png = PNGFile.make(pixels: pixels, width: width, height: height, bands: 3, extra: extra)
            let (image, fast) = try Self.decodeCounting(png, side: width / 2)
            #expect(fast, "\(extra.count) pHYs chunks: the shrinking loader took the file")
            let (got, libvips) = (image.vips.resolution, try ImageDecoder.decode(png).vips.resolution)
            #expect(abs(got.x - libvips.x) < 1e-9 && abs(got.y - libvips.y) < 1e-9, "\(extra.count) pHYs: \(got) vs libvips' \(libvips)")
        }
    }

    @Test("PNGs outside the loader's set are left to libvips and resized exactly")
    func othersGoToLibvips() throws {
        let (width, height) = (240, 160)
        let rgb = Self.samples(width: width, height: height, bands: 3)
        func plain(_ extra: [(type: String, body: [UInt8])]) -> Data {
            PNGFile.make(pixels: rgb, width: width, height: height, bands: 3, filters: [1], extra: extra)
        }
        let cases: [(String, Data)] = [
            ("RGBA", PNGFile.make(pixels: Self.samples(width: width, height: height, bands: 4), width: width, height: height, bands: 4)),
            ("grey and alpha", PNGFile.make(pixels: Self.samples(width: width, height: height, bands: 2), width: width, height: height, bands: 2)),
            ("16-bit", PNGFile.make(pixels: Self.samples(width: width * 2, height: height, bands: 3), width: width, height: height,
                                    bands: 3, depth: 16)),
            ("interlaced", try TestImages.encodedGradient(.png(interlaced: true), width: width, height: height)),
            ("palette", PNGFile.changing(PNGFile.make(pixels: [UInt8](repeating: 0, count: width * height), width: width, height: height,
                                                      bands: 1, extra: [("PLTE", [10, 20, 30])]), chunk: "IHDR") { $0[9] = 3 }),
            ("tRNS", plain([("tRNS", [0, 1, 0, 2, 0, 3])])),
            ("bKGD", plain([("bKGD", [0, 1, 0, 2, 0, 3])])),
            ("unknown chunk", plain([("prVt", [1, 2, 3])])),
        ]
        for (name, png) in cases {
            let (image, fast) = try Self.decodeCounting(png, side: 60)
            #expect(!fast, "\(name): the shrinking loader took the file")
            #expect(max(image.width, image.height) == 60, "\(name): got \(image.width)x\(image.height), not libvips' exact resize")
        }
        // Chunks that change nothing in the pixels libvips gives for such a file are read past (metadata chunks too:
        // PNGLoaderMetadataTests).
        let harmless = plain([("gAMA", [0, 0, 0xB1, 0x8F]), ("sRGB", [0]), ("pHYs", [0, 0, 0x0B, 0x13, 0, 0, 0x0B, 0x13, 1]),
                              ("PLTE", [1, 2, 3]), ("tIME", [7, 0xEA, 11, 25, 12, 0, 0])])
        #expect(try Self.decodeCounting(harmless, side: 60).fast, "gAMA, sRGB, pHYs, a suggested palette and tIME are read past")
    }

    @Test("damaged PNGs are left to libvips, which decides as it does without the loader", arguments: [
        "bad IDAT CRC", "bad deflate data", "short stream", "stream past the rows", "unknown filter", "truncated file", "bad Adler-32",
        "zlib window over 32 KiB",
    ])
    func damageGoesToLibvips(damage: String) throws {
        let (width, height) = (120, 80)
        let pixels = Self.samples(width: width, height: height, bands: 3)
        let good = PNGFile.make(pixels: pixels, width: width, height: height, bands: 3, filters: [2, 4], idatSize: 5000)
        let data: Data
        switch damage {
        case "bad IDAT CRC": data = PNGFile.changing(good, chunk: "IDAT", keepingCRC: true) { $0[40] ^= 0x55 }
        case "bad deflate data": data = PNGFile.changing(good, chunk: "IDAT") { $0[0] = 0x78; $0[1] = 0x01; $0[2] = 0x07 }
        case "short stream": data = PNGFile.make(pixels: pixels, width: width, height: height, bands: 3, streamRows: height - 3)
        case "stream past the rows": data = PNGFile.make(pixels: pixels + pixels, width: width, height: height, bands: 3,
                                                         streamRows: 2 * height)
        case "unknown filter": data = PNGFile.make(pixels: pixels, width: width, height: height, bands: 3, filters: [0, 0, 7])
        case "truncated file": data = good.prefix(good.count / 2)
        case "zlib window over 32 KiB": data = PNGFile.changing(good, chunk: "IDAT") { $0[0] = 0x88; $0[1] = 0x1C }
        default: data = PNGFile.changing(good, chunk: "IDAT", last: true) { $0[$0.count - 1] ^= 0x01 }
        }
        Self.expectLeftToLibvips(data, side: 30, "the shrinking loader took a damaged file")
    }

    @Test("a raised RenderCancellation stops the loader, with no fallback to libvips")
    func cancelStops() throws {
        let (width, height) = (900, 700)
        let png = PNGFile.make(pixels: Self.samples(width: width, height: height, bands: 3), width: width, height: height, bands: 3)
        Self.expectCancelStops(png, loads: { ImageDecoder.shrinkingPNGLoads })
    }

    /// Expects loader-only downsampling of `data` to 100 pixels, under a RenderCancellation raised before it starts, to
    /// fail with "cancelled" from the decode itself, with no load counted by `loads` (a loader's count on this thread).
    static func expectCancelStops(_ data: Data, loads: () -> Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let cancellation = RenderCancellation()
        let before = loads()
        let failure = Locked<HalcyonError?>(nil)
        #expect(throws: HalcyonError.self, sourceLocation: sourceLocation) {
            try cancellation.run { () throws(HalcyonError) -> Int in
                cancellation.cancel()
                do throws(HalcyonError) {
                    return try ImageDecoder.decode(data, options: loaderOnly(100)).width
                } catch {
                    failure.withLock { $0 = error }
                    throw error
                }
            }
        }
        let reason = failure.withLock { $0 }.map { "\($0)" } ?? "nothing"
        #expect(reason.contains("cancelled"), "the decode itself stopped: \(reason)", sourceLocation: sourceLocation)
        #expect(loads() == before, sourceLocation: sourceLocation)
    }

    /// The error's case and, for a processor error, its reason's case. Not the message: libvips keeps one error
    /// buffer for the process, so a message can go to another thread's failure when tests run side by side.
    /// Expects the shrinking loader to leave `data` to libvips (failing with `message` if it took it), and loader-only
    /// downsampling to `side` to end as exact downsampling does: the same width, or an error of the same kind.
    static func expectLeftToLibvips(_ data: Data, side: Int, _ message: Comment, sourceLocation: SourceLocation = #_sourceLocation) {
        let before = ImageDecoder.shrinkingPNGLoads
        let fast = Result { () throws(HalcyonError) in try ImageDecoder.decode(data, options: loaderOnly(side)).width }
        #expect(ImageDecoder.shrinkingPNGLoads == before, message, sourceLocation: sourceLocation)
        let exact = Result { () throws(HalcyonError) in
            try ImageDecoder.decode(data, options: ImageDecodingOptions(downsampleSize: CGSize(width: side, height: side))).width
        }
        switch (fast, exact) {
        case (.success(let a), .success(let b)): #expect(a == b, sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)): #expect(kind(a) == kind(b), "\(a) vs \(b)", sourceLocation: sourceLocation)
        default: Issue.record("loader-only gave \(fast), exact downsampling \(exact)", sourceLocation: sourceLocation)
        }
    }

    static func kind(_ error: HalcyonError) -> String {
        guard let reason = processorReason(error) else { return "\(error)" }
        return Mirror(reflecting: reason).children.first?.label ?? "\(reason)"
    }

    @Test("the shrink leaves twice the target or the full size")
    func shrinkChoice() {
        #expect(ImageDecoder.pngShrink(longerSide: 3600, atLeast: 512) == 3)
        #expect(ImageDecoder.pngShrink(longerSide: 4096, atLeast: 512) == 4)
        #expect(ImageDecoder.pngShrink(longerSide: 4095, atLeast: 512) == 3)
        #expect(ImageDecoder.pngShrink(longerSide: 1023, atLeast: 512) == 1)
        #expect(ImageDecoder.pngShrink(longerSide: 100, atLeast: 512) == 1)
        #expect(ImageDecoder.pngShrink(longerSide: 1_000_000, atLeast: 1) == 1024)
    }
}
