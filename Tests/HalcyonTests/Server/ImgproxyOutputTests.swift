import Foundation
@testable import Halcyon
@testable import HalcyonServer
import Testing

/// imgproxy's output options (fq, mb, sm/kcr, skp, raw), presets, the watermark and animation frames,
/// each checked on the bytes or pixels served.
@Suite("imgproxy output")
struct ImgproxyOutputTests {
    /// 300×200 of deterministic noise: large as JPEG, so quality shows in the size.
    static func noise() throws -> Image {
        var state: UInt32 = 12345
        let pixels = (0..<(300 * 200 * 4)).map { index -> UInt8 in
            if index % 4 == 3 { return 255 }
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        return try Image(rgbaPixels: pixels, width: 300, height: 200)
    }

    static func body(_ fixture: ServerFixture, _ options: String, ext: String = "jpg", path: String? = nil) async throws -> Data {
        let reply = try await fixture.get(fixture.signedPath(options, source: fixture.source(path ?? "/image/\(UUID().uuidString)"), ext: ext))
        #expect(reply.status == 200, "\(options): \(reply.status) \(reply.errorMessage ?? "")")
        return reply.body
    }

    @Test("fq sets the quality of one format, over q; mb re-encodes lower until the result fits")
    func qualityAndMaxBytes() async throws {
        let fixture = try await ServerFixture.start(image: Self.noise().encoded(as: .png()))
        defer { Task { await fixture.stop() } }
        let high = try await Self.body(fixture, "q:90")
        let low = try await Self.body(fixture, "fq:jpg:20/q:90")
        #expect(low.count < high.count / 2, "\(low.count) vs \(high.count)")
        #expect(try await Self.body(fixture, "format_quality:webp:20/q:90") == high, "another format's quality changes nothing")
        let floor = try Self.noise().encoded(as: .jpeg(quality: 10)).count
        let limit = (floor + high.count) / 2
        let capped = try await Self.body(fixture, "q:90/mb:\(limit)")
        #expect(capped.count <= limit && capped.count > floor / 2, "\(capped.count) under \(limit)")
        #expect(try ImageDecoder.decode(capped).width == 300)
        await fixture.stop()
    }

    /// A JPEG with an EXIF block holding Make and Copyright, and `thumbnail` (a JPEG) in IFD1 when given.
    static func jpegWithCopyright(thumbnail: Data? = nil) throws -> Data {
        var tiff: [UInt8] = Array("MM".utf8) + [0, 42, 0, 0, 0, 8, 0, 2]
        let make = Array("TestCamera\0".utf8), copyright = Array("Halcyon Test\0".utf8)
        let dataStart = 8 + 2 + 2 * 12 + 4
        func bigEndian(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).reversed().map { UInt8((value >> ($0 * 8)) & 0xFF) } }
        func entry(_ tag: UInt16, type: UInt16, count: Int, _ value: Int) -> [UInt8] {
            bigEndian(Int(tag), 2) + bigEndian(Int(type), 2) + bigEndian(count, 4) + bigEndian(value, 4)
        }
        let ifd1 = thumbnail == nil ? 0 : dataStart + make.count + copyright.count
        tiff += entry(0x010F, type: 2, count: make.count, dataStart) + entry(0x8298, type: 2, count: copyright.count, dataStart + make.count)
        tiff += bigEndian(ifd1, 4) + make + copyright
        if let thumbnail {
            // IFD1: JPEGInterchangeFormat and its length, then the thumbnail's bytes.
            tiff += [0, 2] + entry(0x0201, type: 4, count: 1, ifd1 + 2 + 2 * 12 + 4) + entry(0x0202, type: 4, count: 1, thumbnail.count)
            tiff += [0, 0, 0, 0] + Array(thumbnail)
        }
        let payload = Array("Exif\0\0".utf8) + tiff
        let length = payload.count + 2
        let jpeg = try TestImages.encodedGradient(.jpeg(quality: 90), width: 120, height: 80)
        return Data(jpeg.prefix(2)) + Data([0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload) + Data(jpeg.dropFirst(2))
    }

    /// `jpeg` with an APP2 ICC profile segment: a 132-byte profile header with no tags (libvips carries it as is).
    static func withICCProfile(_ jpeg: Data) -> Data {
        var profile = [UInt8](repeating: 0, count: 132)
        profile[3] = 132
        for (offset, text) in [(12, "mntr"), (16, "RGB "), (20, "XYZ "), (36, "acsp")] {
            for (index, byte) in text.utf8.enumerated() { profile[offset + index] = byte }
        }
        let payload = Array("ICC_PROFILE\0".utf8) + [1, 1] + profile
        let length = payload.count + 2
        return Data(jpeg.prefix(2)) + Data([0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)] + payload) + Data(jpeg.dropFirst(2))
    }

    @Test("The ICC profile is dropped by default; scp:0 or sm:0 keeps it")
    func colorProfile() async throws {
        let source = Self.withICCProfile(try Self.jpegWithCopyright())
        try #require(try ImageInfo.inspect(source).hasICCProfile)
        let fixture = try await ServerFixture.start(image: source)
        defer { Task { await fixture.stop() } }
        #expect(try !ImageInfo.inspect(try await Self.body(fixture, "w:60")).hasICCProfile)
        let kept = try ImageInfo.inspect(try await Self.body(fixture, "w:60/scp:0"))
        #expect(kept.hasICCProfile && kept.exif["Make"] == nil, "scp:0 keeps the profile and still strips the rest")
        #expect(try ImageInfo.inspect(try await Self.body(fixture, "w:60/strip_metadata:0")).hasICCProfile)
        await fixture.stop()
    }

    @Test("Metadata is stripped by default keeping the copyright; kcr:0 drops it too; sm:0 keeps everything")
    func metadata() async throws {
        let source = try Self.jpegWithCopyright()
        let exif = try ImageInfo.inspect(source).exif
        try #require(exif["Make"] != nil && exif["Copyright"] != nil, "the source carries both fields: \(exif)")
        let fixture = try await ServerFixture.start(image: source)
        defer { Task { await fixture.stop() } }
        let stripped = try ImageInfo.inspect(try await Self.body(fixture, "w:60")).exif
        #expect(stripped["Make"] == nil && stripped["Copyright"]?.contains("Halcyon Test") == true, "\(stripped)")
        let bare = try ImageInfo.inspect(try await Self.body(fixture, "w:60/kcr:0"))
        #expect(bare.exif["Copyright"] == nil && bare.exif["Make"] == nil && !bare.hasXMP, "\(bare.exif)")
        let kept = try ImageInfo.inspect(try await Self.body(fixture, "w:60/sm:0")).exif
        #expect(kept["Make"] != nil && kept["Copyright"] != nil, "\(kept)")
        await fixture.stop()
    }

    @Test("Stripping drops the source's EXIF thumbnail, also when the copyright is kept")
    func exifThumbnail() async throws {
        let thumbnail = try TestImages.encodedGradient(.jpeg(quality: 95), width: 160, height: 120)
        let source = try Self.jpegWithCopyright(thumbnail: thumbnail)
        let marker = Data(thumbnail.suffix(64))
        let sourceExif = try ImageInfo.inspect(source).exif
        try #require(source.range(of: marker) != nil && sourceExif["Copyright"] != nil)
        let fixture = try await ServerFixture.start(image: source)
        defer { Task { await fixture.stop() } }
        for options in ["w:60", "w:60/kcr:0"] {
            let output = try await Self.body(fixture, options)
            #expect(output.range(of: marker) == nil, "\(options): the \(thumbnail.count)-byte thumbnail is in the \(output.count)-byte output")
        }
        let stripped = try await Self.body(fixture, "w:60")
        #expect(try ImageInfo.inspect(stripped).exif["Copyright"]?.contains("Halcyon Test") == true)
        #expect(try await Self.body(fixture, "w:60/sm:0").range(of: marker) != nil, "sm:0 keeps all the metadata")
        await fixture.stop()
    }

    @Test("skp sends a listed format as it is and processes others; raw sends any image as it is")
    func passThrough() async throws {
        let png = try TestImages.encodedGradient(.png(), width: 120, height: 80)
        let jpeg = try TestImages.encodedGradient(.jpeg(quality: 80), width: 120, height: 80)
        let fixture = try await ServerFixture.start(image: png, files: ["photo.jpg": jpeg, "junk": Data("not an image".utf8)])
        defer { Task { await fixture.stop() } }
        #expect(try await Self.body(fixture, "skp:png:gif/w:20", ext: "png") == png)
        let converted = try await Self.body(fixture, "skp:png/w:20", ext: "webp")
        #expect(try ImageDecoder.decode(converted).width == 20, "skp applies only when the output format is the source's")
        let processed = try await Self.body(fixture, "skp:png/w:20", path: "/files/photo.jpg")
        #expect(try ImageDecoder.decode(processed).width == 20, "a JPEG is not skipped by skp:png")
        #expect(try await Self.body(fixture, "raw/w:20", path: "/files/photo.jpg") == jpeg)
        let junk = try await fixture.get(fixture.signedPath("raw", source: fixture.source("/files/junk")))
        #expect(junk.status == 422, "raw still needs an image")
        await fixture.stop()
    }

    @Test("Presets expand in place, default applies first; only-presets accepts nothing else; bad presets stop the start")
    func presets() async throws {
        let png = try TestImages.encodedGradient(.png(), width: 300, height: 200)
        let fixture = try await ServerFixture.start(image: png) { $0.presets = ["default=rs:fit:100:100", "small=w:20/q:50", "both=pr:small/h:5"] }
        defer { Task { await fixture.stop() } }
        let size = { (options: String) async throws -> Int in try ImageDecoder.decode(try await Self.body(fixture, options)).width }
        #expect(try await size("q:80") == 100, "the default preset")
        #expect(try await size("pr:small") == 20)
        #expect(try await size("preset:both") == 8, "a preset naming a preset: 20 wide, then 5 high")
        let unknown = try await fixture.get(fixture.signedPath("pr:huge", source: fixture.source("/image/p")))
        #expect(unknown.status == 400 && unknown.errorMessage?.contains("huge") == true)
        await fixture.stop()

        let only = try await ServerFixture.start(image: png) { $0.presets = ["small=w:20"]; $0.onlyPresets = true }
        defer { Task { await only.stop() } }
        #expect(try ImageDecoder.decode(try await Self.body(only, "small")).width == 20)
        #expect(try await only.get(only.signedPath("w:20", source: only.source("/image/o"))).status == 400)
        await only.stop()

        var looping = ServerConfiguration()
        looping.presets = ["a=pr:b", "b=pr:a"]
        #expect(throws: ServerConfiguration.ConfigurationError.self) { try looping.presetTable() }
    }

    @Test("wm draws the server's watermark at a position, with opacity, offsets, scale or tiled")
    func watermark() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let mark = directory.appendingPathComponent("mark.png")
        try TestImages.solid(RGBA8(red: 255, green: 0, blue: 0, alpha: 255), width: 10, height: 10).encoded(as: .png()).write(to: mark)
        let png = try TestImages.encodedGradient(.png(), width: 300, height: 200)
        let fixture = try await ServerFixture.start(image: png) { $0.watermarkPath = mark.path }
        defer { Task { await fixture.stop() } }
        let pixel = { (options: String, x: Int, y: Int) async throws -> RGBA8 in
            try ImageDecoder.decode(try await Self.body(fixture, options, ext: "png")).pixel(x: x, y: y)
        }
        let isRed = { (p: RGBA8) in p.red == 255 && p.green == 0 && p.blue == 0 }
        let checks: [(String, Int, Int, Bool)] = [
            ("wm:1:nowe", 5, 5, true), ("wm:1:nowe", 15, 5, false),
            ("wm:1:soea:10:10", 284, 184, true), ("wm:1:soea:10:10", 295, 195, false),
            ("wm:1:re", 150, 100, true), ("wm:1:re", 295, 195, true),
            ("wm:1:ce:0:0:0.5", 80, 100, true), ("wm:1:ce:0:0:0.5", 60, 100, false),
        ]
        for (options, x, y, red) in checks {
            let got = try await pixel(options, x, y)
            #expect(isRed(got) == red, "\(options) at (\(x), \(y)): \(got)")
        }
        let half = try await pixel("wm:0.5:nowe", 5, 5)
        #expect(half.red > 120 && half.red < 140 && half.blue > 40 && half.blue < 60, "half of red over the gradient: \(half)")
        await fixture.stop()

        let bare = try await ServerFixture.start(image: png)
        defer { Task { await bare.stop() } }
        let refused = try await bare.get(bare.signedPath("wm:1", source: bare.source("/image/w")))
        #expect(refused.status == 400 && refused.errorMessage?.contains("watermark") == true)
        await bare.stop()
    }

    @Test("Animated sources give their first frame unless max-animation-frames allows more")
    func animationFrames() async throws {
        let gif = try TestImages.animation(frames: 4).encoded(as: .gif)
        let first = try await ServerFixture.start(image: gif)
        defer { Task { await first.stop() } }
        #expect(try ImageDecoder.decode(try await Self.body(first, "w:10", ext: "gif")).frameCount == 1)
        await first.stop()
        let all = try await ServerFixture.start(image: gif) { $0.maxAnimationFrames = 10 }
        defer { Task { await all.stop() } }
        #expect(try ImageDecoder.decode(try await Self.body(all, "w:10", ext: "gif")).frameCount == 4)
        await all.stop()
        let few = try await ServerFixture.start(image: gif) { $0.maxAnimationFrames = 3 }
        defer { Task { await few.stop() } }
        let refused = try await few.get(few.signedPath("w:10", source: few.source("/image/a"), ext: "gif"))
        #expect(refused.status == 422, "more frames than allowed are refused before decoding")
        await few.stop()
    }
}
