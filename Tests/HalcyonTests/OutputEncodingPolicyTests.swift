import Foundation
import HalcyonServer
import Testing
@testable import Halcyon

/// Availability for tests that must not depend on this libvips: every format can be written.
private func everything(_ format: ImageFormat) -> Bool { true }

@Suite("OutputEncodingPolicy")
struct OutputEncodingPolicyTests {
    let policy = OutputEncodingPolicy.default

    // MARK: - Defaults

    @Test("one table of default qualities: JPEG 85, WebP 80, AVIF 60, none for the lossless formats")
    func defaultQualities() {
        #expect(policy.jpegQuality == 85 && policy.webpQuality == 80 && policy.avifQuality == 60)
        #expect(policy.defaultQuality(for: .jpeg) == 85)
        #expect(policy.defaultQuality(for: .webp) == 80)
        #expect(policy.defaultQuality(for: .avif) == 60)
        for format: ImageFormat in [.png, .gif, .tiff, .heic, .bmp, .unknown] {
            #expect(policy.defaultQuality(for: format) == nil, "\(format)")
        }
        #expect(OutputEncodingPolicy.pngFallback.jpegQuality == policy.jpegQuality)
        #expect(OutputEncodingPolicy.pngFallback.webpQuality == policy.webpQuality)
        #expect(OutputEncodingPolicy.pngFallback.avifQuality == policy.avifQuality)
    }

    @Test("ImageEncodingFormat's defaults are the policy's")
    func encodingFormatDefaults() {
        #expect(ImageEncodingFormat.jpeg() == .jpeg(quality: policy.jpegQuality))
        #expect(ImageEncodingFormat.webp() == .webp(quality: policy.webpQuality))
        #expect(ImageEncodingFormat.avif() == .avif(quality: policy.avifQuality))
        #expect(ImageEncodingFormat(.jpeg) == .jpeg(quality: policy.jpegQuality))
        #expect(ImageEncodingFormat(.webp) == .webp(quality: policy.webpQuality))
        #expect(ImageEncodingFormat(.avif) == .avif(quality: policy.avifQuality))
        #expect(ImageEncodingFormat(.jpeg, compressionQuality: 0.5) == .jpeg(quality: 50))
        #expect(ImageEncodingFormat(.png, compressionQuality: 0.5) == .png())
        #expect(ImageEncodingFormat(.heic) == nil && ImageEncodingFormat(.bmp) == nil && ImageEncodingFormat(.unknown) == nil)
    }

    @Test("encoding(for:) uses the default quality only when none is given")
    func encodingQuality() {
        #expect(policy.encoding(for: .jpeg, quality: nil, hasAlpha: false) == .jpeg(quality: policy.jpegQuality))
        #expect(policy.encoding(for: .webp, quality: nil, hasAlpha: true) == .webp(quality: policy.webpQuality))
        #expect(policy.encoding(for: .avif, quality: nil, hasAlpha: false) == .avif(quality: policy.avifQuality))
        #expect(policy.encoding(for: .jpeg, quality: 42, hasAlpha: false) == .jpeg(quality: 42))
        #expect(policy.encoding(for: .png, quality: 42, hasAlpha: true) == .png())
        #expect(policy.encoding(for: .gif, quality: nil, hasAlpha: true, isAnimated: true) == .gif)
        #expect(policy.encoding(for: .tiff, quality: nil, hasAlpha: false) == .tiff)
        let custom = OutputEncodingPolicy(jpegQuality: 70)
        #expect(custom.encoding(for: .jpeg, quality: nil, hasAlpha: false) == .jpeg(quality: 70))
    }

    // MARK: - Fallbacks

    @Test("formats Halcyon cannot write: PNG with alpha, else JPEG; always PNG under pngFallback; GIF for animations")
    func fallbacks() {
        for format: ImageFormat in [.heic, .bmp, .unknown] {
            #expect(!OutputEncodingPolicy.canEncode(format))
            #expect(policy.encoding(for: format, quality: nil, hasAlpha: true) == .png(), "\(format)")
            #expect(policy.encoding(for: format, quality: nil, hasAlpha: false) == .jpeg(quality: policy.jpegQuality), "\(format)")
            #expect(policy.encoding(for: format, quality: 30, hasAlpha: false) == .jpeg(quality: 30), "\(format)")
            #expect(policy.encoding(for: format, quality: nil, hasAlpha: false, isAnimated: true) == .gif, "\(format)")
            let lossless = OutputEncodingPolicy.pngFallback
            #expect(lossless.encoding(for: format, quality: nil, hasAlpha: false) == .png(), "\(format)")
            #expect(lossless.encoding(for: format, quality: nil, hasAlpha: true, isAnimated: true) == .gif, "\(format)")
        }
        for format: ImageFormat in [.jpeg, .png, .gif, .webp, .avif, .tiff] {
            #expect(OutputEncodingPolicy.canEncode(format))
            #expect(policy.writableFormat(for: format, hasAlpha: true, isAnimated: true) == format)
        }
    }

    @Test("encoding(for: image) reads the image's format, alpha and animation")
    func encodingForImage() throws {
        let opaque = try TestImages.solid(RGBA8(red: 10, green: 20, blue: 30))
        #expect(policy.encoding(for: opaque, as: .webp) == .webp(quality: policy.webpQuality))
        #expect(policy.encoding(for: opaque, as: .bmp, quality: 55) == (opaque.hasAlpha ? .png() : .jpeg(quality: 55)))
        #expect(try policy.encoding(for: TestImages.animation(frames: 3)) == .gif)
        let decoded = try ImageDecoder.decode(TestImages.encodedGradient(.jpeg(quality: 70), width: 16, height: 16))
        #expect(policy.encoding(for: decoded) == .jpeg(quality: policy.jpegQuality))
    }

    // MARK: - Extensions

    @Test("format(forExtension:) maps extensions and file names to writable formats only")
    func extensionMapping() {
        let expected: [(String, ImageFormat?)] = [
            ("jpg", .jpeg), ("JPEG", .jpeg), ("jpe", .jpeg), ("png", .png), ("gif", .gif), ("webp", .webp),
            ("avif", .avif), ("tif", .tiff), ("tiff", .tiff), (".png", .png), ("photo.WebP", .webp),
            ("/tmp/out.dir/result.avif", .avif), ("archive.tar.gif", .gif),
            ("bmp", nil), ("heic", nil), ("heif", nil), ("txt", nil), ("", nil), ("photo", nil), ("/tmp/a.png/", nil),
        ]
        for (text, format) in expected {
            #expect(policy.format(forExtension: text) == format, "\(text)")
        }
    }

    @Test("the server's extensions and f: values are the policy's, bare words only")
    func serverExtensions() {
        for word in ["jpg", "jpeg", "JPG", "png", "webp", "avif", "gif", "tif", "tiff", "bmp", "heic", "svg"] {
            #expect(ProcessingOptions.outputFormat(extension: word) == policy.format(forExtension: word), "\(word)")
        }
        #expect(ProcessingOptions.outputFormat(extension: "x.png") == nil)
        #expect(ProcessingOptions.outputFormat(extension: "a/png") == nil)
    }

    // MARK: - Accept negotiation

    @Test("Accept: AVIF before WebP, whatever the header's order; nothing for JPEG-only or wildcards")
    func negotiationOrder() {
        #expect(policy.negotiatedFormat(accepting: "image/avif,image/webp,*/*", isAvailable: everything) == .avif)
        #expect(policy.negotiatedFormat(accepting: "image/webp, image/avif", isAvailable: everything) == .avif)
        #expect(policy.negotiatedFormat(accepting: "image/webp,image/*;q=0.8", isAvailable: everything) == .webp)
        #expect(policy.negotiatedFormat(accepting: "IMAGE/WEBP", isAvailable: everything) == .webp)
        #expect(policy.negotiatedFormat(accepting: "image/jpeg", isAvailable: everything) == nil)
        #expect(policy.negotiatedFormat(accepting: "image/*,*/*;q=0.8", isAvailable: everything) == nil)
        #expect(policy.negotiatedFormat(accepting: "", isAvailable: everything) == nil)
        #expect(policy.negotiatedFormat(accepting: nil, isAvailable: everything) == nil)
    }

    @Test("Accept: q=0 refuses a type; formats this libvips cannot write are skipped")
    func negotiationRefusals() {
        #expect(policy.negotiatedFormat(accepting: "image/avif;q=0,image/webp", isAvailable: everything) == .webp)
        #expect(policy.negotiatedFormat(accepting: "image/avif; q=0.0, image/webp;q = 0", isAvailable: everything) == nil)
        #expect(policy.negotiatedFormat(accepting: "image/webp;q=0.5", isAvailable: everything) == .webp)
        #expect(policy.negotiatedFormat(accepting: "image/avif,image/webp", isAvailable: { $0 != .avif }) == .webp)
        #expect(policy.negotiatedFormat(accepting: "image/avif,image/webp", isAvailable: { _ in false }) == nil)
        let webpOnly = OutputEncodingPolicy(negotiableFormats: [.webp])
        #expect(webpOnly.negotiatedFormat(accepting: "image/avif,image/webp", isAvailable: everything) == .webp)
    }

    @Test("Accept with the real libvips: AVIF only when it can be written")
    func negotiationAvailability() {
        let expected: ImageFormat? = ImageEncodingFormat.avif().isAvailable ? .avif : nil
        #expect(policy.negotiatedFormat(accepting: "image/avif") == expected)
        #expect(OutputEncodingPolicy.isAvailable(.jpeg) && OutputEncodingPolicy.isAvailable(.png))
        #expect(!OutputEncodingPolicy.isAvailable(.bmp))
    }

    @Test("format(accepting:source:): negotiated, else the source's, else the fallback")
    func formatForRequest() {
        #expect(policy.format(accepting: "image/webp", source: .jpeg, hasAlpha: false, isAvailable: everything) == .webp)
        #expect(policy.format(accepting: "image/jpeg", source: .png, hasAlpha: true, isAvailable: everything) == .png)
        #expect(policy.format(accepting: nil, source: .heic, hasAlpha: false, isAvailable: everything) == .jpeg)
        #expect(policy.format(accepting: nil, source: .bmp, hasAlpha: true, isAvailable: everything) == .png)
        #expect(policy.format(accepting: nil, source: .unknown, hasAlpha: false, isAnimated: true, isAvailable: everything) == .gif)
    }
}

// MARK: - Users of the policy

@Suite("OutputEncodingPolicy users")
struct OutputEncodingPolicyUsersTests {
    @Test("DefaultCacheSerializer re-encodes through pngFallback at its compression quality")
    func serializer() throws {
        let original = try TestImages.encodedGradient(.jpeg(quality: 70), width: 40, height: 30)
        let processed = try BlurImageProcessor(blurRadius: 1).process(item: .data(original), options: defaultOptions)
        let stored = try DefaultCacheSerializer(compressionQuality: 0.6).data(with: processed, original: original)
        let expected = OutputEncodingPolicy.pngFallback.encoding(for: processed, quality: 60)
        #expect(expected == .jpeg(quality: 60))
        #expect(try stored == processed.encoded(as: expected))
        let still = try TestImages.solid(RGBA8(red: 200, green: 10, blue: 10))
        #expect(try ImageFormat(sniffing: DefaultCacheSerializer.default.data(with: still, original: nil)) == .png)
        let animation = try TestImages.animation(frames: 3)
        let storedAnimation = try DefaultCacheSerializer.default.data(with: animation, original: nil)
        #expect(ImageFormat(sniffing: storedAnimation) == .gif)
        #expect(try ImageDecoder.decode(storedAnimation, options: ImageDecodingOptions(preloadAllAnimationData: true)).frameCount == 3)
    }

    @Test("halcyon process without --quality writes what --quality <policy default> writes")
    func cliDefaultQuality() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(at: scratch.root, withIntermediateDirectories: true)
        let input = scratch.root.appendingPathComponent("in.png")
        try TestImages.encodedGradient(.png(), width: 60, height: 40).write(to: input)
        let policy = OutputEncodingPolicy.default
        for (ext, quality) in [("jpg", policy.jpegQuality), ("webp", policy.webpQuality)] {
            let implicit = scratch.root.appendingPathComponent("implicit.\(ext)")
            let explicit = scratch.root.appendingPathComponent("explicit.\(ext)")
            let first = try await CLIRun.run(["process", input.path, implicit.path], cacheHome: scratch.cache)
            let second = try await CLIRun.run(["process", input.path, explicit.path, "--quality", String(quality)], cacheHome: scratch.cache)
            #expect(first.exitCode == 0 && second.exitCode == 0, "\(first.stderr) \(second.stderr)")
            #expect(try Data(contentsOf: implicit) == Data(contentsOf: explicit), "\(ext)")
            let other = scratch.root.appendingPathComponent("other.\(ext)")
            _ = try await CLIRun.run(["process", input.path, other.path, "--quality", String(quality - 30)], cacheHome: scratch.cache)
            #expect(try Data(contentsOf: implicit) != Data(contentsOf: other), "\(ext)")
        }
    }

    @Test("halcyon serve without q: answers what q:<policy default> answers")
    func serverDefaultQuality() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let policy = OutputEncodingPolicy.default
        let source = fixture.source("/image/policy")
        for (ext, quality) in [("jpg", policy.jpegQuality), ("webp", policy.webpQuality)] {
            let implicit = try await fixture.get(fixture.signedPath("w:24", source: source, ext: ext))
            let explicit = try await fixture.get(fixture.signedPath("w:24/q:\(quality)", source: source, ext: ext))
            let other = try await fixture.get(fixture.signedPath("w:24/q:\(quality - 30)", source: source, ext: ext))
            #expect(implicit.status == 200 && explicit.status == 200 && other.status == 200)
            #expect(implicit.body == explicit.body, "\(ext)")
            #expect(implicit.body != other.body, "\(ext)")
        }
        await fixture.stop()
    }
}
