import CHalcyonVips
import Foundation
@testable import Halcyon
import Testing

/// The choice between Halcyon's own engines and libvips' (``ImageEngines``), made in Swift from the setting and each
/// engine's C capability check, and what each engine makes of the same real image.
@Suite("Image engine choice")
struct ImageEngineChoiceTests {
    static let reduceOnLibvips = ImageEngines(reduce: .libvips)
    static let pngSaveOnLibvips = ImageEngines(pngSave: .libvips)
    static let pngLoadOnLibvips = ImageEngines(pngLoad: .libvips)

    // MARK: - The setting

    @Test("the setting starts as Halcyon's engines everywhere; HALCYON_LIBVIPS_ONLY names the steps given to libvips")
    func settingFromEnvironment() {
        #expect(ImageEngines.fromEnvironment([:]) == .preferred)
        #expect(ImageEngines.preferred == ImageEngines(reduce: .halcyon, pngLoad: .halcyon, pngSave: .halcyon))
        if ProcessInfo.processInfo.environment[ImageEngines.environmentVariable] == nil {
            #expect(ImageEngines.current == .preferred, "this process's setting without the variable")
        }
        let cases: [(String, ImageEngines, [String])] = [
            ("reduce", Self.reduceOnLibvips, []),
            (" png-save , PNG-Load", ImageEngines(pngLoad: .libvips, pngSave: .libvips), []),
            ("all", .libvipsOnly, []),
            ("", .preferred, []),
            ("bogus,reduce", Self.reduceOnLibvips, ["bogus"]),
        ]
        for (value, engines, unknown) in cases {
            let parsed = ImageEngines.parse(libvipsOnly: value)
            #expect(parsed.engines == engines && parsed.unknown == unknown, "\"\(value)\": \(parsed)")
            #expect(ImageEngines.fromEnvironment([ImageEngines.environmentVariable: value]) == engines, "\"\(value)\"")
        }
    }

    // MARK: - Reduce

    @Test("reduce: Halcyon's for 8-bit images in memory reduced by less than 4x, libvips for the rest or when told")
    func reduceChoice() throws {
        let source = try FastReduceTests.photo(width: 400, height: 300, bands: 3)
        let lazy = try source.extracted(left: 10, top: 10, width: 380, height: 280)
        let cases: [(String, VipsImageRef, Double, ImageEngines, ImageEngine)] = [
            ("in memory, 0.5", source, 0.5, .preferred, .halcyon),
            ("in memory, 0.26", source, 0.26, .preferred, .halcyon),
            ("in memory, 0.5, setting libvips", source, 0.5, Self.reduceOnLibvips, .libvips),
            ("upscale", source, 1.5, .preferred, .libvips),
            ("by 10x", source, 0.1, .preferred, .libvips),
            ("exactly 1/4", source, 0.25, .preferred, .libvips),
            ("lazy image", lazy, 0.5, .preferred, .libvips),
        ]
        for (name, image, scale, engines, expected) in cases {
            #expect(engines.reduceEngine(for: image, horizontal: scale, vertical: scale) == expected, "\(name)")
            let before = VipsImageRef.fastReduceCount
            let resized = try image.resized(horizontal: scale, vertical: scale, engines: engines)
            #expect((VipsImageRef.fastReduceCount > before) == (expected == .halcyon), "\(name): the engine that ran")
            #expect(resized.width == Int((Double(image.width) * scale).rounded()), "\(name): \(resized.width) wide")
        }
    }

    @Test("reduce: both engines give the same size and close pixels, each byte for byte its own entry point's", arguments: [
        (bands: 3, scale: 0.627), (bands: 4, scale: 0.4), (bands: 1, scale: 0.3),
    ])
    func reduceEngines(bands: Int, scale: Double) throws {
        let source = try FastReduceTests.photo(width: 816, height: 612, bands: bands)
        let ours = try source.resized(horizontal: scale, vertical: scale, engines: .preferred)
        let theirs = try source.resized(horizontal: scale, vertical: scale, engines: Self.reduceOnLibvips)
        #expect(ours.width == theirs.width && ours.height == theirs.height, "\(ours.width)x\(ours.height) vs \(theirs.width)x\(theirs.height)")
        let quality = try FastReduceTests.psnr(ours, theirs, bands: bands)
        #expect(quality >= 42, "PSNR \(quality) dB between the engines")
        #expect(try ours.pixelBytes() == source.reducedByHalcyon(horizontal: scale, vertical: scale).pixelBytes())
        #expect(try theirs.pixelBytes() == source.resizedByLibvips(horizontal: scale, vertical: scale).pixelBytes())
    }

    // MARK: - PNG encoding

    @Test("PNG encoding: libdeflate for plain 8-bit images, libpng for interlaced output, metadata, big images or when told")
    func pngSaveChoice() throws {
        let plain = try FastReduceTests.photo(width: 120, height: 90, bands: 3)
        let pixels = PNGShrinkLoaderTests.samples(width: 120, height: 90, bands: 3)
        let commented = try ImageDecoder.decode(PNGFile.make(pixels: pixels, width: 120, height: 90, bands: 3,
                                                             extra: [("tEXt", Array("Comment\0kept".utf8))])).vips
        let big = try Image(rgbaPixels: [UInt8](repeating: 90, count: 2050 * 2050 * 4), width: 2050, height: 2050).vips
        let level = ImageEncoder.pngLevel
        let cases: [(String, VipsImageRef, Int, Bool, ImageEngines, ImageEngine)] = [
            ("plain RGB", plain, level, false, .preferred, .halcyon),
            ("plain RGB, setting libvips", plain, level, false, Self.pngSaveOnLibvips, .libvips),
            ("interlaced", plain, level, true, .preferred, .libvips),
            ("a comment", commented, level, false, .preferred, .libvips),
            ("over 16 MiB of pixels", big, level, false, .preferred, .libvips),
            ("level 10", plain, 10, false, .preferred, .libvips),
        ]
        for (name, image, level, interlaced, engines, expected) in cases {
            #expect(engines.pngSaveEngine(for: image, level: level, interlaced: interlaced) == expected, "\(name)")
        }
        for (name, image, interlaced, engines, expected) in [("plain RGB", plain, false, ImageEngines.preferred, true),
                                                             ("setting libvips", plain, false, Self.pngSaveOnLibvips, false),
                                                             ("interlaced", plain, true, .preferred, false),
                                                             ("a comment", commented, false, .preferred, false)] {
            let before = ImageEncoder.libdeflatePNGCount
            _ = try ImageEncoder.png(image, interlaced: interlaced, engines: engines)
            #expect((ImageEncoder.libdeflatePNGCount > before) == expected, "\(name): the encoder that ran")
        }
    }

    @Test("PNG encoding: both encoders write a PNG of the same pixels; libvips' is its saver's file byte for byte", arguments: [1, 3, 4])
    func pngSaveEngines(bands: Int) throws {
        let source = try FastReduceTests.photo(width: 517, height: 301, bands: bands)
        let ours = try ImageEncoder.png(source, interlaced: false, engines: .preferred)
        let theirs = try ImageEncoder.png(source, interlaced: false, engines: Self.pngSaveOnLibvips)
        #expect(ours != theirs, "two encoders, two files")
        let libpng = try source.saved(as: .png) { hc_pngsave_libpng($0, Int32(ImageEncoder.pngLevel), 0, $1, $2) }
        #expect(theirs == libpng)
        let image = PNGDeflateEncoderTests.image(source)
        #expect(try ImageEncoder.encode(image, as: .png()) == ours, "the default is Halcyon's encoder")
        let (a, b) = (try ImageDecoder.decode(ours), try ImageDecoder.decode(theirs))
        #expect(a.width == 517 && a.height == 301 && b.width == 517 && b.height == 301)
        #expect(try a.rgbaPixels() == b.rgbaPixels())
    }

    // MARK: - PNG loading

    @Test("PNG loading: Halcyon's loader for plain PNGs it takes by their header, libvips for the rest or when told")
    func pngLoadChoice() throws {
        let (width, height) = (240, 160)
        let rgb = PNGShrinkLoaderTests.samples(width: width, height: height, bands: 3)
        let plain = PNGFile.make(pixels: rgb, width: width, height: height, bands: 3)
        let rgba = PNGFile.make(pixels: PNGShrinkLoaderTests.samples(width: width, height: height, bands: 4),
                                width: width, height: height, bands: 4)
        let transparent = PNGFile.make(pixels: rgb, width: width, height: height, bands: 3, extra: [("tRNS", [0, 1, 0, 2, 0, 3])])
        let damaged = PNGFile.changing(plain, chunk: "IDAT", keepingCRC: true) { $0[40] ^= 0x55 }
        let cases: [(String, Data, Int, ImageEngines, ImageEngine, Bool)] = [
            ("plain RGB", plain, 2, .preferred, .halcyon, true),
            ("plain RGB, no shrink", plain, 1, .preferred, .halcyon, true),
            ("plain RGB, setting libvips", plain, 2, Self.pngLoadOnLibvips, .libvips, false),
            ("shrink 0", plain, 0, .preferred, .libvips, false),
            ("shrink 1025", plain, 1025, .preferred, .libvips, false),
            ("RGBA", rgba, 2, .preferred, .libvips, false),
            ("tRNS", transparent, 2, .preferred, .libvips, false),
            // The header is fine; the damage is the loader's to find, and it hands the file back.
            ("bad IDAT CRC", damaged, 2, .preferred, .halcyon, false),
        ]
        for (name, data, shrink, engines, expected, loaded) in cases {
            let opened = try ImageDecoder.open(data)
            #expect(engines.pngLoadEngine(for: opened.buffer, shrink: shrink) == expected, "\(name)")
            let before = ImageDecoder.shrinkingPNGLoads
            let image = try ImageDecoder.loadPNG(opened.buffer, header: opened.header, shrink: shrink, engines: engines)
            #expect((image != nil) == loaded && (ImageDecoder.shrinkingPNGLoads > before) == loaded, "\(name): the loader ran")
            if let image {
                #expect(image.width == (width + shrink - 1) / shrink && image.height == (height + shrink - 1) / shrink, "\(name)")
            }
        }
    }

    @Test("exact downsampling of a plain PNG: either loader (and either reduce) gives vips_thumbnail's size and a close picture")
    func pngLoadEngines() throws {
        let data = try ExactDownsamplingTests.source(.png(), width: 1200, height: 800, bands: 3)
        let options = ImageDecodingOptions(downsampleSize: CGSize(width: 200, height: 200))
        let opened = try ImageDecoder.open(data, options: options)
        var images: [Image] = []
        for (engines, loader) in [(ImageEngines.preferred, true), (Self.pngLoadOnLibvips, false), (.libvipsOnly, false),
                                  (Self.reduceOnLibvips, true)] {
            let before = ImageDecoder.shrinkingPNGLoads
            images.append(try ImageDecoder.decode(opened, options: options, engines: engines))
            #expect((ImageDecoder.shrinkingPNGLoads > before) == loader, "\(engines): the shrinking loader ran")
        }
        let reference = try ExactDownsamplingTests.thumbnail(data, pixels: 200)
        #expect(try ImageDecoder.decode(data, options: options).vips.pixelBytes() == images[0].vips.pixelBytes(), "the default")
        for image in images.dropFirst() {
            #expect(image.width == reference.width && image.height == reference.height, "\(image.width)x\(image.height)")
            let quality = try FastReduceTests.psnr(images[0].vips, image.vips, bands: 3)
            #expect(quality >= 38, "PSNR \(quality) dB against Halcyon's loader and reduce")
        }
    }

    // MARK: - The variable, end to end

    @Test("halcyon process reads HALCYON_LIBVIPS_ONLY once at start: png-save gives libpng's file, unknown names change nothing")
    func environmentVariableInTheTool() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-engines-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("in.png")
        try PNGFile.make(pixels: PNGShrinkLoaderTests.samples(width: 300, height: 200, bands: 3), width: 300, height: 200, bands: 3)
            .write(to: input)
        var outputs: [String: Data] = [:]
        for value in ["", "png-save", "bogus"] {
            let output = folder.appendingPathComponent("out-\(value).png")
            let status = try await Self.runTool(["process", input.path, output.path, "--format", "png"], folder: folder,
                                                libvipsOnly: value.isEmpty ? nil : value)
            #expect(status == 0, "HALCYON_LIBVIPS_ONLY=\(value)")
            outputs[value] = try Data(contentsOf: output)
        }
        let decoded = try ImageDecoder.decode(Data(contentsOf: input))
        #expect(outputs[""] == (try ImageEncoder.png(decoded.vips, interlaced: false, engines: .preferred)), "no variable: libdeflate")
        #expect(outputs["png-save"] == (try ImageEncoder.png(decoded.vips, interlaced: false, engines: Self.pngSaveOnLibvips)),
                "png-save: libpng")
        #expect(outputs["bogus"] == outputs[""], "an unknown name changes nothing")
    }

    /// Runs the built `halcyon` with `HALCYON_LIBVIPS_ONLY` set to `libvipsOnly` (left out when nil); its exit status.
    static func runTool(_ arguments: [String], folder: URL, libvipsOnly: String?) async throws -> Int32 {
        let binary = try #require(builtExecutableURL(named: "halcyon"), "the halcyon executable is not built")
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CACHE_HOME"] = folder.appendingPathComponent("cache").path
        environment[ImageEngines.environmentVariable] = libvipsOnly
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return await Task.detached {
            process.waitUntilExit()
            return process.terminationStatus
        }.value
    }
}
