import Foundation
@testable import Halcyon
@testable import HalcyonServer
import Testing

/// Peaks measured by scripts/measure-memory.py, in MiB (rounded up): one request on a fresh debug `halcyon serve`
/// (libvips 8.14 and its codecs are release builds), the rise of VmHWM over VmRSS before it, 7000x7000 sources.
enum MeasuredPeak {
    /// `rs:fit:300:300` to JPEG, by loader class.
    static let thumbnail: [(name: String, source: MemoryEstimate.SourceClass, mebibytes: Int)] = [
        ("progressive JPEG 4:4:4", .jpeg(progressive: true, coefficientBytes: coefficients([(1, 1), (1, 1), (1, 1)])), 287),
        ("progressive JPEG 4:2:0", .jpeg(progressive: true, coefficientBytes: coefficients([(2, 2), (1, 1), (1, 1)])), 146),
        ("progressive JPEG CMYK", .jpeg(progressive: true, coefficientBytes: coefficients([(1, 1), (1, 1), (1, 1), (1, 1)])), 393),
        ("baseline JPEG", .jpeg(progressive: false, coefficientBytes: 0), 5),
        ("baseline JPEG CMYK", .jpeg(progressive: false, coefficientBytes: 0), 16),
        ("interlaced 16-bit RGBA PNG", .png(interlaced: true, bytesPerPixel: 8), 474),
        ("interlaced 8-bit RGBA PNG", .png(interlaced: true, bytesPerPixel: 4), 286),
        ("16-bit RGBA PNG", .png(interlaced: false, bytesPerPixel: 8), 127),
        ("8-bit RGBA PNG", .png(interlaced: false, bytesPerPixel: 4), 113),
        ("palette PNG", .png(interlaced: false, bytesPerPixel: 4), 30),
        ("lossy WebP", .webp, 2),
        ("lossless WebP", .webp, 25),
        ("GIF", .gif, 299),
        ("AVIF", .heif, 322),
        ("TIFF", .other, 113),
    ]
    /// No geometry, to JPEG: the whole source decoded.
    static let whole: [(name: String, source: MemoryEstimate.SourceClass, mebibytes: Int)] = [
        ("progressive JPEG 4:4:4", .jpeg(progressive: true, coefficientBytes: coefficients([(1, 1), (1, 1), (1, 1)])), 434),
        ("progressive JPEG CMYK", .jpeg(progressive: true, coefficientBytes: coefficients([(1, 1), (1, 1), (1, 1), (1, 1)])), 552),
        ("baseline JPEG CMYK", .jpeg(progressive: false, coefficientBytes: 0), 176),
        ("interlaced 16-bit RGBA PNG", .png(interlaced: true, bytesPerPixel: 8), 564),
        ("interlaced 8-bit RGBA PNG", .png(interlaced: true, bytesPerPixel: 4), 375),
        ("16-bit RGBA PNG", .png(interlaced: false, bytesPerPixel: 8), 221),
        ("8-bit RGBA PNG", .png(interlaced: false, bytesPerPixel: 4), 203),
        ("palette PNG", .png(interlaced: false, bytesPerPixel: 4), 152),
        ("WebP", .webp, 375),
        ("GIF", .gif, 389),
        ("AVIF", .heif, 319),
        ("TIFF", .other, 203),
    ]
    /// `/info`: the header and a 64-pixel decode.
    static let info: [(name: String, source: MemoryEstimate.SourceClass, mebibytes: Int)] = [
        ("progressive JPEG 4:4:4", .jpeg(progressive: true, coefficientBytes: coefficients([(1, 1), (1, 1), (1, 1)])), 285),
        ("interlaced 16-bit RGBA PNG", .png(interlaced: true, bytesPerPixel: 8), 404),
        ("interlaced 8-bit RGBA PNG", .png(interlaced: true, bytesPerPixel: 4), 217),
    ]
    /// A whole 7000x7000 result by output format: from a 7000x7000 baseline 4:4:4 JPEG, and a 1000x1000 one enlarged.
    static let encode: [(format: ImageFormat, whole: Int, enlarged: Int)] = [
        (.jpeg, 158, 149), (.png, 153, 149), (.webp, 368, 369), (.avif, 797, 797), (.gif, 626, 615), (.tiff, 154, 154),
    ]

    static func coefficients(_ sampling: [(h: Int, v: Int)]) -> Int {
        MemoryEstimate.coefficientBytes(width: 7000, height: 7000, sampling: sampling)
    }
}

/// Worst-case sources that are small in bytes: real files whose headers claim 7000x7000 (their data stops early).
enum ClaimedSize {
    static let side = 7000

    /// A progressive (SOF2) JPEG claiming `side` × `side`, every component at full resolution (4:4:4).
    static func progressiveJPEG() throws -> Data {
        try jpeg(progressive: true)
    }

    /// A baseline (SOF0) JPEG claiming `side` × `side`, 4:4:4.
    static func baselineJPEG() throws -> Data {
        try jpeg(progressive: false)
    }

    private static func jpeg(progressive: Bool) throws -> Data {
        var bytes = [UInt8](try TestImages.encodedGradient(.jpeg(quality: 90, progressive: progressive), width: 16, height: 16))
        let marker: UInt8 = progressive ? 0xC2 : 0xC0
        let start = try #require((2..<bytes.count - 1).first { bytes[$0] == 0xFF && bytes[$0 + 1] == marker })
        // FF Cn, length (2), precision (1), height (2), width (2), components (1), then 3 bytes a component.
        for (offset, value) in [(5, side), (7, side)] {
            bytes[start + offset] = UInt8(value >> 8)
            bytes[start + offset + 1] = UInt8(value & 0xFF)
        }
        for component in 0..<Int(bytes[start + 9]) { bytes[start + 11 + 3 * component] = 0x11 }
        return Data(bytes)
    }

    /// An interlaced (Adam7) 16-bit RGBA PNG claiming `side` × `side`.
    static func interlacedPNG16() -> Data {
        let small = PNGFile.make(pixels: [UInt8](repeating: 90, count: 16 * 16 * 8), width: 16, height: 16, bands: 4, depth: 16)
        return PNGFile.changing(small, chunk: "IHDR") { body in
            body[0..<8] = [0, 0, UInt8(side >> 8), UInt8(side & 0xFF), 0, 0, UInt8(side >> 8), UInt8(side & 0xFF)]
            body[12] = 1
        }
    }
}

@Suite("Memory estimate per loader and encoder class")
struct MemoryEstimateTests {
    static let mebibyte = 1 << 20

    /// What the admission reserves for `data` under `options`, encoded as `output` (nil: the source's format).
    static func estimate(_ data: Data, options: String, output: ImageFormat?) throws -> Int {
        var limits = ImageDecodingOptions()
        limits.maxPixelCount = 50_000_000
        let header = try ImageDecoder.open(data, options: limits)
        let parsed = try ProcessingOptions.parse(options.isEmpty ? [] : options.split(separator: "/").map(String.init), maxDimension: 16_384)
        return MemoryEstimate.imageBytes(header, source: data, options: parsed, output: output)
    }

    @Test("every loader class's estimate is over its measured peak: shrunk to 300x300, decoded whole, and for /info")
    func loaderClasses() throws {
        let side = ClaimedSize.side, pixels = side * side
        let shrink = 300.0 / Double(side)
        for (name, source, measured) in MeasuredPeak.thumbnail {
            var format = ImageFormat.png
            if case .jpeg = source { format = .jpeg }
            let decoded = MemoryEstimate.decodePixels(width: side, height: side, shrink: shrink, format: format)
            let bytes = MemoryEstimate.bytes(source: source, sourcePixels: pixels, decodePixels: decoded, resultPixels: 300 * 300,
                                             frames: 1, output: .jpeg)
            #expect(bytes >= measured * Self.mebibyte, "thumbnail of \(name): \(bytes / Self.mebibyte) MiB, measured \(measured)")
        }
        for (name, source, measured) in MeasuredPeak.whole {
            let bytes = MemoryEstimate.bytes(source: source, sourcePixels: pixels, decodePixels: pixels, resultPixels: pixels,
                                             frames: 1, output: .jpeg, resultBuffers: 0)
            #expect(bytes >= measured * Self.mebibyte, "whole \(name): \(bytes / Self.mebibyte) MiB, measured \(measured)")
        }
    }

    @Test("a progressive JPEG's estimate counts libjpeg's coefficients of the whole image, even shrunk on load")
    func progressiveJPEG() throws {
        let progressive = try ClaimedSize.progressiveJPEG()
        let thumbnail = try Self.estimate(progressive, options: "rs:fit:300:300", output: .jpeg)
        #expect(thumbnail >= 287 * Self.mebibyte, "\(thumbnail / Self.mebibyte) MiB")
        let info = try MemoryEstimate.infoBytes(ImageDecoder.open(progressive), source: progressive)
        #expect(info >= 285 * Self.mebibyte, "\(info / Self.mebibyte) MiB")
        // A baseline JPEG streams: its thumbnail needs only the 1/8 decode.
        let baseline = try Self.estimate(ClaimedSize.baselineJPEG(), options: "rs:fit:300:300", output: .jpeg)
        #expect(baseline >= 5 * Self.mebibyte)
        #expect(baseline < thumbnail / 8, "baseline \(baseline / Self.mebibyte) MiB, progressive \(thumbnail / Self.mebibyte) MiB")
        // /info of the other measured classes.
        let side = ClaimedSize.side
        for (name, source, measured) in MeasuredPeak.info {
            let bytes = MemoryEstimate.bytes(source: source, sourcePixels: side * side, decodePixels: 64 * 64, resultPixels: 64 * 64,
                                             frames: 1, output: nil)
            #expect(bytes >= measured * Self.mebibyte, "/info of \(name): \(bytes / Self.mebibyte) MiB, measured \(measured)")
        }
    }

    @Test("libjpeg's coefficient buffer is counted per component at its sampling, in whole MCUs, from the frame header")
    func coefficientBytes() throws {
        // 4:2:0 at 7000x7000: luma 875x875 blocks (876 in whole 2x2 MCUs), each chroma 438x438 (rounded up from 437.5).
        let yuv420 = MemoryEstimate.coefficientBytes(width: 7000, height: 7000, sampling: [(2, 2), (1, 1), (1, 1)])
        #expect(yuv420 == (876 * 876 + 2 * 438 * 438) * 128)
        let yuv444 = MemoryEstimate.coefficientBytes(width: 7000, height: 7000, sampling: [(1, 1), (1, 1), (1, 1)])
        #expect(yuv444 == 3 * 875 * 875 * 128)
        let frame = try #require(MemoryEstimate.jpegFrame(ClaimedSize.progressiveJPEG()))
        #expect(frame.progressive && frame.sampling.count == 3 && frame.sampling.allSatisfy { $0 == (1, 1) })
        #expect(MemoryEstimate.jpegFrame(try ClaimedSize.baselineJPEG())?.progressive == false)
        #expect(MemoryEstimate.jpegFrame(Data([0xFF, 0xD8, 0xFF, 0xDA, 0, 2])) == nil)
        let source = MemoryEstimate.sourceClass(of: try ClaimedSize.progressiveJPEG(), format: .jpeg, width: 7000, height: 7000)
        #expect(source == .jpeg(progressive: true, coefficientBytes: yuv444))
    }

    @Test("an interlaced 16-bit PNG's estimate counts its whole 16-bit buffer, for images and /info")
    func interlacedPNG() throws {
        let png = ClaimedSize.interlacedPNG16()
        #expect(MemoryEstimate.pngClass(png) == .png(interlaced: true, bytesPerPixel: 8))
        let thumbnail = try Self.estimate(png, options: "rs:fit:300:300", output: .jpeg)
        #expect(thumbnail >= 474 * Self.mebibyte, "\(thumbnail / Self.mebibyte) MiB")
        // It fits a 512 MiB budget alone: its measured peak does.
        #expect(thumbnail <= 512 * Self.mebibyte, "\(thumbnail / Self.mebibyte) MiB")
        let info = try MemoryEstimate.infoBytes(ImageDecoder.open(png), source: png)
        #expect(info >= 404 * Self.mebibyte, "\(info / Self.mebibyte) MiB")
        let plain = PNGFile.make(pixels: [UInt8](repeating: 9, count: 16 * 16 * 3), width: 16, height: 16, bands: 3)
        #expect(MemoryEstimate.pngClass(plain) == .png(interlaced: false, bytesPerPixel: 4))
    }

    @Test("WebP, GIF, AVIF and TIFF sources are told apart from their bytes")
    func otherLoaders() throws {
        let cases: [(ImageEncodingFormat, MemoryEstimate.SourceClass)] = [(.webp(quality: 80), .webp), (.gif, .gif), (.tiff, .other)]
            + (ImageEncoder.canEncodeAVIF ? [(.avif(quality: 50), .heif)] : [])
        for (encoding, expected) in cases {
            let small = try TestImages.encodedGradient(encoding, width: 32, height: 32)
            #expect(MemoryEstimate.sourceClass(of: small, format: ImageFormat(sniffing: small), width: 32, height: 32) == expected)
        }
    }

    @Test("each encoder's estimate for a whole 7000x7000 result is over its measured peak, decoded whole or enlarged")
    func encoders() throws {
        let whole = try ClaimedSize.baselineJPEG()
        for (format, measuredWhole, measuredEnlarged) in MeasuredPeak.encode {
            let bytes = try Self.estimate(whole, options: "", output: format)
            #expect(bytes >= measuredWhole * Self.mebibyte, "\(format): \(bytes / Self.mebibyte) MiB, measured \(measuredWhole)")
            // Only the encoder and the one result buffer the pipeline was measured to hold (3 bytes a pixel, RGB).
            let pixels = 7000 * 7000
            let enlarged = MemoryEstimate.bytes(source: .jpeg(progressive: false, coefficientBytes: 0), sourcePixels: 1_000_000,
                                                decodePixels: 1_000_000, resultPixels: pixels, frames: 1, output: format, resultBuffers: 1)
            #expect(enlarged >= measuredEnlarged * Self.mebibyte, "\(format) enlarged: \(enlarged / Self.mebibyte) MiB, measured \(measuredEnlarged)")
        }
    }
}
@Suite("Memory admission of image and /info requests")
struct ServerMemoryAdmissionTests {
    /// A server with a `budget` MiB memory budget and `files` on its upstream.
    static func start(budget: Int, files: [String: Data]) async throws -> ServerFixture {
        try await ServerFixture.start(files: files) { config in
            config.memoryBudgetMegabytes = budget
            config.queueTimeout = 0.3
            config.maxSourceMegapixels = 50
        }
    }

    @Test("a 7000x7000 progressive JPEG or interlaced 16-bit PNG over the whole budget is refused (413) before decoding, for images and /info")
    func overBudget() async throws {
        let files = ["progressive.jpg": try ClaimedSize.progressiveJPEG(), "interlaced.png": ClaimedSize.interlacedPNG16()]
        let fixture = try await Self.start(budget: 256, files: files)
        defer { Task { await fixture.stop() } }
        for name in files.keys.sorted() {
            let source = fixture.source("/files/\(name)")
            let image = try await fixture.get(fixture.signedPath("rs:fit:300:300", source: source, ext: "jpg"))
            #expect(image.status == 413 && image.errorCode == "over_memory_budget", "\(name): \(image.status) \(image.errorMessage ?? "")")
            let info = try await fixture.get("/info" + fixture.signedPath("", source: source))
            #expect(info.status == 413 && info.errorCode == "over_memory_budget", "\(name) /info: \(info.status) \(info.errorMessage ?? "")")
        }
        #expect(fixture.server.service.admission.memory.usedBytes == 0)
        await fixture.stop()
    }

    @Test("/info waits for image memory like an image request: 429 when it does not come free in time, 200 once it does")
    func infoWaitsForMemory() async throws {
        let png = try TestImages.encodedGradient(.png(), width: 320, height: 200)
        let fixture = try await Self.start(budget: 64, files: ["small.png": png])
        defer { Task { await fixture.stop() } }
        let path = "/info" + fixture.signedPath("", source: fixture.source("/files/small.png"))
        let budget = fixture.server.service.admission.memory
        let held = try await budget.reserve(60 << 20, waitingAtMost: .zero)
        let busy = try await fixture.get(path)
        #expect(busy.status == 429 && busy.errorCode == "memory_busy", "\(busy.status) \(busy.errorMessage ?? "")")
        held.release()
        let free = try await fixture.get(path)
        #expect(free.status == 200, "\(free.status) \(free.errorMessage ?? "")")
        #expect(budget.usedBytes == 0)
        await fixture.stop()
    }
}
