import Foundation
import Testing
@testable import Halcyon

@Suite("DefaultCacheSerializer")
struct DefaultCacheSerializerTests {
    @Test("keeps the original bytes when the image is what they decode to")
    func keepsOriginal() throws {
        let original = try TestImages.encodedGradient(.jpeg(quality: 70), width: 40, height: 30)
        let image = try ImageDecoder.decode(original)
        #expect(try DefaultCacheSerializer.default.data(with: image, original: original) == original)
    }

    @Test("re-encodes a processed image in its original format")
    func reencodesProcessed() throws {
        let original = try TestImages.encodedGradient(.webp(), width: 40, height: 30)
        let processed = try BlurImageProcessor(blurRadius: 1).process(item: .data(original), options: defaultOptions)
        let stored = try DefaultCacheSerializer.default.data(with: processed, original: original)
        #expect(stored != original)
        #expect(ImageFormat(sniffing: stored) == .webp)
        let back = try DefaultCacheSerializer.default.image(with: stored, options: defaultOptions)
        #expect(back.width == 40 && back.height == 30)
    }

    @Test("bytes of another image are never stored in its place")
    func refusesForeignOriginal() throws {
        let first = try TestImages.encodedGradient(.png(), width: 10, height: 10)
        let other = try TestImages.solid(RGBA8(red: 1, green: 2, blue: 3), width: 10, height: 10).encoded(as: .png())
        let image = try ImageDecoder.decode(first)
        let stored = try DefaultCacheSerializer.default.data(with: image, original: other)
        #expect(stored != other)
        #expect(try ImageDecoder.decode(stored).rgbaPixels() == image.rgbaPixels())
    }

    @Test("preferCacheOriginalData stores the original even for a processed image")
    func prefersOriginal() throws {
        let original = try TestImages.encodedGradient(.png(), width: 20, height: 20)
        let processed = try BlackWhiteProcessor().process(item: .data(original), options: defaultOptions)
        let serializer = DefaultCacheSerializer(preferCacheOriginalData: true)
        #expect(serializer.originalDataUsed)
        #expect(try serializer.data(with: processed, original: original) == original)
    }

    @Test("an image made in memory falls back to PNG")
    func pngFallback() throws {
        let stored = try DefaultCacheSerializer.default.data(with: TestImages.gradient(), original: nil)
        #expect(ImageFormat(sniffing: stored) == .png)
    }
}

@Suite("FormatIndicatedCacheSerializer")
struct FormatIndicatedCacheSerializerTests {
    @Test("always stores the indicated format", arguments: [
        (FormatIndicatedCacheSerializer.png, ImageFormat.png), (.jpeg, .jpeg), (.gif, .gif), (.webp, .webp),
        (.jpeg(compressionQuality: 0.5), .jpeg),
    ])
    func storesFormat(serializer: FormatIndicatedCacheSerializer, format: ImageFormat) throws {
        let original = try TestImages.encodedGradient(.jpeg(), width: 16, height: 16)
        let image = try ImageDecoder.decode(original)
        let stored = try serializer.data(with: image, original: original)
        #expect(ImageFormat(sniffing: stored) == format)
        #expect(try serializer.image(with: stored, options: defaultOptions).width == 16)
    }

    @Test("GIF and WebP keep animations")
    func keepsAnimation() throws {
        let animation = try TestImages.animation(frames: 3)
        for serializer in [FormatIndicatedCacheSerializer.gif, .webp] {
            let back = try serializer.image(with: serializer.data(with: animation, original: nil), options: defaultOptions)
            #expect(back.frameCount == 3)
        }
    }
}
