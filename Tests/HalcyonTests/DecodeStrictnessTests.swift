import Foundation
import HalcyonServer
import Testing
@testable import Halcyon

/// JPEGs encoded by libvips through Halcyon, then damaged; shared with ``CLIExitCodeTests``.
///
/// What libjpeg (libjpeg-turbo 2.1, through libvips 8.14) does with each,
/// checked with `vips jpegload --fail-on LEVEL --access sequential`:
/// - ``damaged()``: junk bytes and a stray RST0 marker in the entropy-coded
///   data give warnings only ("Corrupt JPEG data: bad Huffman code",
///   "premature end of data segment"); the rest is filled with grey. Refused
///   by `fail_on=warning` alone. (Junk bytes alone are not enough: libjpeg's
///   fast Huffman path decodes a bad code silently.)
/// - ``truncated()``: the data ends half way; libvips turns libjpeg's
///   end-of-data warning into an error from `fail_on=truncated` up.
/// - ``junkAfterStart()``: three bytes between SOI and the first marker, so the
///   third byte is not FF; libjpeg skips them with a warning ("3 extraneous bytes").
enum DamagedJPEG {
    static let side = 256

    /// A gradient with deterministic noise, so the entropy-coded data is long (about 35 KB at quality 85).
    static func pixels() -> [UInt8] {
        var state: UInt32 = 12345
        var pixels: [UInt8] = []
        pixels.reserveCapacity(side * side * 4)
        for y in 0..<side {
            for x in 0..<side {
                state = (state &* 1_103_515_245 &+ 12345) & 0x7FFF_FFFF
                let noise = Int(state >> 16) & 0x3F
                pixels += [UInt8((x * 255 / (side - 1) + noise) & 0xFF), UInt8((y * 255 / (side - 1) + noise) & 0xFF),
                           UInt8(100 + noise), 255]
            }
        }
        return pixels
    }

    /// The undamaged JPEG (quality 85, baseline).
    static func clean() throws -> [UInt8] {
        [UInt8](try Image(rgbaPixels: pixels(), width: side, height: side).encoded(as: .jpeg()))
    }

    /// The entropy-coded data of the one scan: from after the SOS header to the EOI marker.
    static func scan(of bytes: [UInt8]) throws -> Range<Int> {
        var index = 2
        while index + 3 < bytes.count, bytes[index] == 0xFF {
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            if bytes[index + 1] == 0xDA {
                let end = bytes.count - 2
                try #require(bytes[end] == 0xFF && bytes[end + 1] == 0xD9, "no EOI at the end")
                return (index + 2 + length)..<end
            }
            index += 2 + length
        }
        Issue.record("no SOS marker found")
        throw HalcyonError.processorError(reason: .emptyData)
    }

    /// 32 junk bytes a quarter of the way into the entropy-coded data, then RST0 (FF D0) where no restart interval exists.
    static func damaged() throws -> Data {
        var bytes = try clean()
        let scan = try scan(of: bytes)
        var start = scan.lowerBound + scan.count / 4
        while bytes[start - 1] == 0xFF { start += 1 }  // never split a stuffed FF 00 pair
        for offset in 0..<32 { bytes[start + offset] = offset % 2 == 0 ? 0x7F : 0xFE }
        bytes[start + 32] = 0xFF
        bytes[start + 33] = 0xD0
        return Data(bytes)
    }

    /// The headers and the first half of the entropy-coded data, no EOI.
    static func truncated() throws -> Data {
        let bytes = try clean()
        let scan = try scan(of: bytes)
        return Data(bytes[..<(scan.lowerBound + scan.count / 2)])
    }

    /// `FF D8 00 01 02` and then the clean file's first marker onwards.
    static func junkAfterStart() throws -> Data {
        let bytes = try clean()
        return Data(Array(bytes[..<2]) + [0x00, 0x01, 0x02] + Array(bytes[2...]))
    }
}

@Suite("DecodeStrictnessTests")
struct DecodeStrictnessTests {
    /// The three ways a JPEG is decoded: whole, libvips thumbnail, libjpeg's own shrink.
    static func paths(_ strictness: DecodingStrictness) -> [(String, ImageDecodingOptions, Int)] {
        let box = CGSize(width: 64, height: 64)
        return [
            ("full", ImageDecodingOptions(strictness: strictness), DamagedJPEG.side),
            ("thumbnail", ImageDecodingOptions(downsampleSize: box, strictness: strictness), 64),
            ("jpeg shrink", ImageDecodingOptions(downsampleSize: box, downsamplingMode: .loaderOnly, strictness: strictness), 64),
        ]
    }

    /// Decodes `data` and checks that it is refused as corrupt JPEG data, or decoded to `side` pixels.
    static func check(_ data: Data, _ name: String, refused: Bool, options: ImageDecodingOptions, side: Int, path: String) {
        let label = "\(name), \(options.strictness), \(path)"
        do {
            let image = try ImageDecoder.decode(data, options: options)
            #expect(!refused, "\(label): decoded \(image.width)x\(image.height)")
            #expect(image.width == side && image.height == side, "\(label)")
        } catch {
            #expect(refused, "\(label): \(error)")
            guard case .corruptData(let format, let message) = processorReason(error) else {
                Issue.record("\(label): not corruptData: \(error)")
                return
            }
            #expect(format == .jpeg && !message.isEmpty, "\(label)")
        }
    }

    @Test("each level on a damaged and a truncated JPEG: none takes both, truncated and error refuse the truncated one, warning both",
          arguments: DecodingStrictness.allCases)
    func levels(strictness: DecodingStrictness) throws {
        let damaged = try DamagedJPEG.damaged()
        let truncated = try DamagedJPEG.truncated()
        for (path, options, side) in Self.paths(strictness) {
            Self.check(damaged, "damaged", refused: strictness == .warning, options: options, side: side, path: path)
            Self.check(truncated, "truncated", refused: strictness != .none, options: options, side: side, path: path)
        }
        let clean = Data(try DamagedJPEG.clean())
        for (path, options, side) in Self.paths(strictness) {
            Self.check(clean, "clean", refused: false, options: options, side: side, path: path)
        }
    }

    @Test("the default is truncated; the options item reaches the processors")
    func optionsItem() throws {
        #expect(DecodingStrictness.default == .truncated)
        #expect(ImageDecodingOptions().strictness == .truncated)
        #expect(HalcyonParsedOptionsInfo(nil).decodingOptions.strictness == .truncated)
        let strict = HalcyonParsedOptionsInfo([.decodingStrictness(.warning)])
        #expect(strict.decodingOptions.strictness == .warning)
        let damaged = try DamagedJPEG.damaged()
        let processors: [any ImageProcessor] = [DefaultImageProcessor.default, DownsamplingImageProcessor(size: CGSize(width: 50, height: 50))]
        for processor in processors {
            #expect(try processor.process(item: .data(damaged), options: HalcyonParsedOptionsInfo(nil)).width > 0)
            do {
                _ = try processor.process(item: .data(damaged), options: strict)
                Issue.record("\(processor.identifier): decoded the damaged JPEG with .warning")
            } catch {
                guard case .corruptData(.jpeg, _) = processorReason(error) else { Issue.record("got \(error)"); continue }
            }
        }
    }

    @Test("FF D8 and a third byte that is not FF is a JPEG: decoded when libjpeg can, corrupt when not")
    func jpegSniffing() throws {
        let junk = try DamagedJPEG.junkAfterStart()
        #expect(ImageFormat(sniffing: junk) == .jpeg)
        let image = try ImageDecoder.decode(junk)
        #expect(image.width == DamagedJPEG.side && image.originalFormat == .jpeg)
        Self.check(junk, "junk after SOI", refused: true, options: ImageDecodingOptions(strictness: .warning), side: 0, path: "full")
        let notJPEG = Data([0xFF, 0xD8, 0x00] + Array("this is not JPEG data, only its first two bytes".utf8))
        #expect(ImageFormat(sniffing: notJPEG) == .jpeg)
        Self.check(notJPEG, "FF D8 and text", refused: true, options: ImageDecodingOptions(), side: 0, path: "full")
        #expect(ImageFormat(sniffing: Data([0xFF, 0xD8])) == .unknown)
    }

    @Test("a TIFF whose first directory cannot be read is corrupt, not unsupported")
    func corruptTIFF() throws {
        let tiff = [UInt8](try TestImages.encodedGradient(.tiff, width: 64, height: 48))
        var badOffset = tiff
        badOffset.replaceSubrange(4..<8, with: [0x00, 0xFF, 0xFF, 0x7F])  // first IFD far past the end, in either byte order
        for (name, data) in [("IFD offset past the end", Data(badOffset)), ("first 64 bytes", Data(tiff.prefix(64)))] {
            #expect(ImageFormat(sniffing: data) == .tiff)
            do {
                _ = try ImageDecoder.decode(data)
                Issue.record("\(name): decoded")
            } catch {
                guard case .corruptData(.tiff, _) = processorReason(error) else { Issue.record("\(name): got \(error)"); continue }
            }
        }
    }

    @Test("libvips giving no reason becomes a sentence that names the format")
    func noReason() {
        for message in [nil, VipsRuntime.noReason, ""] as [String?] {
            guard case .corruptData(.png, let text) = processorReason(ImageDecoder.decodeError(format: .png, message: message)) else {
                Issue.record("not corruptData for \(String(describing: message))")
                continue
            }
            #expect(text.contains("PNG") && !text.contains("libvips reported no reason"), "\(text)")
        }
    }

    @Test("HALCYON_FAIL_ON and the config file set the server's strictness; other values are refused")
    func serverSetting() throws {
        #expect(ServerConfiguration().decodeStrictness == .truncated)
        let fromEnvironment = try ServerConfiguration.load(file: nil, environment: ["HALCYON_FAIL_ON": "warning"])
        #expect(fromEnvironment.decodeStrictness == .warning)
        #expect(fromEnvironment.printable().contains("\"decodeStrictness\" : \"warning\""))
        #expect(throws: ServerConfiguration.ConfigurationError.self) {
            try ServerConfiguration.load(file: nil, environment: ["HALCYON_FAIL_ON": "pedantic"])
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-fail-on-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"decodeStrictness": "none"}"#.utf8).write(to: file)
        #expect(try ServerConfiguration.load(file: file.path, environment: [:]).decodeStrictness == DecodingStrictness.none)
    }

    @Test("the server serves the damaged JPEG by default and refuses it (422 corrupt_image) with fail_on=warning")
    func serverRefusesWithWarning() async throws {
        let damaged = try DamagedJPEG.damaged()
        for (strictness, status) in [(DecodingStrictness.truncated, 200), (.warning, 422)] {
            let fixture = try await ServerFixture.start(image: damaged) { $0.decodeStrictness = strictness }
            for options in ["rs:fit:64:64", "bl:1"] {
                let path = fixture.signedPath(options, source: fixture.source("/image/\(strictness)-\(options)"))
                let reply = try await fixture.get(path)
                #expect(reply.status == status, "\(strictness) \(options): \(reply.errorCode ?? "")")
                if status == 422 { #expect(reply.errorCode == "corrupt_image") }
            }
            await fixture.stop()
        }
    }
}
