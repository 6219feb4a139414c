import Foundation
import Testing
@testable import Halcyon

@Suite("ImageDecoder")
struct ImageDecoderTests {
    @Test("still formats round-trip with their size", arguments: [
        ImageEncodingFormat.jpeg(quality: 95), .png(), .png(interlaced: true), .webp(quality: 90), .webp(lossless: true), .tiff, .gif,
        .jpeg(quality: 80, progressive: true),
    ])
    func stillRoundTrip(encoding: ImageEncodingFormat) throws {
        let source = try TestImages.gradient(width: 57, height: 31)
        let data = try source.encoded(as: encoding)
        let decoded = try ImageDecoder.decode(data)
        #expect(decoded.width == 57)
        #expect(decoded.height == 31)
        #expect(decoded.frameCount == 1)
        #expect(decoded.originalFormat == encoding.format)
        let original = try source.pixel(x: 40, y: 20)
        let roundTripped = try decoded.pixel(x: 40, y: 20)
        let tolerance = encoding.format == .gif ? 40 : 12
        #expect(abs(Int(original.red) - Int(roundTripped.red)) <= tolerance)
        #expect(abs(Int(original.green) - Int(roundTripped.green)) <= tolerance)
    }

    @Test("lossless formats keep every pixel exactly", arguments: [ImageEncodingFormat.png(), .webp(lossless: true), .tiff])
    func losslessIsExact(encoding: ImageEncodingFormat) throws {
        let source = try TestImages.gradient(width: 23, height: 17)
        let decoded = try ImageDecoder.decode(source.encoded(as: encoding))
        #expect(try decoded.rgbaPixels() == source.rgbaPixels())
    }

    @Test("AVIF round-trips where this libvips has an AV1 encoder")
    func avifRoundTrip() throws {
        try #require(ImageEncodingFormat.avif().isAvailable, "no AV1 encoder in this libvips")
        let data = try TestImages.encodedGradient(.avif(quality: 70), width: 40, height: 24)
        let decoded = try ImageDecoder.decode(data)
        #expect(decoded.originalFormat == .avif)
        #expect(decoded.width == 40 && decoded.height == 24)
    }

    @Test("animated GIF and WebP keep frames, delays and loop count", arguments: [ImageEncodingFormat.gif, .webp(lossless: true)])
    func animationRoundTrip(encoding: ImageEncodingFormat) throws {
        let animation = try TestImages.animation(frames: 5, width: 20, height: 10)
        let data = try animation.encoded(as: encoding)
        for preload in [false, true] {
            let decoded = try ImageDecoder.decode(data, options: ImageDecodingOptions(preloadAllAnimationData: preload))
            #expect(decoded.frameCount == 5)
            #expect(decoded.width == 20 && decoded.height == 10)
            #expect(decoded.loopCount == 3)
            let expectedDelays = animation.frameDelays
            #expect(decoded.frameDelays.count == 5)
            for (got, want) in zip(decoded.frameDelays, expectedDelays) {
                #expect(abs(got - want) < 0.011, "delay \(got) vs \(want)")
            }
            for frame in 0..<5 {
                let pixel = try decoded.pixel(x: 3, y: 3, frame: frame)
                let expected = try animation.pixel(x: 3, y: 3, frame: frame)
                #expect(abs(Int(pixel.red) - Int(expected.red)) <= 8, "frame \(frame)")
            }
        }
    }

    @Test("onlyFirstFrame decodes a still image from an animation")
    func onlyFirstFrame() throws {
        let data = try TestImages.animation(frames: 4).encoded(as: .gif)
        let decoded = try ImageDecoder.decode(data, options: ImageDecodingOptions(onlyFirstFrame: true))
        #expect(decoded.frameCount == 1)
        #expect(decoded.frameDelays.isEmpty)
        #expect(decoded.height == 10)
    }

    @Test("scale factor sets the point size")
    func scaleFactor() throws {
        let decoded = try ImageDecoder.decode(TestImages.encodedGradient(.png(), width: 60, height: 40), options: ImageDecodingOptions(scaleFactor: 2))
        #expect(decoded.scale == 2)
        #expect(decoded.size == CGSize(width: 30, height: 20))
        #expect(decoded.width == 60)
    }

    @Test("downsampling shrinks on load to the longer side and never enlarges")
    func downsampleOnLoad() throws {
        let data = try TestImages.encodedGradient(.jpeg(), width: 800, height: 400)
        let small = try ImageDecoder.decode(data, options: ImageDecodingOptions(downsampleSize: CGSize(width: 100, height: 100)))
        #expect(small.width == 100)
        #expect(small.height == 50)
        let unchanged = try ImageDecoder.decode(data, options: ImageDecodingOptions(downsampleSize: CGSize(width: 2000, height: 2000)))
        #expect(unchanged.width == 800 && unchanged.height == 400)
        let animated = try TestImages.animation(frames: 3, width: 40, height: 20).encoded(as: .gif)
        let smallAnimation = try ImageDecoder.decode(animated, options: ImageDecodingOptions(downsampleSize: CGSize(width: 10, height: 10)))
        #expect(smallAnimation.frameCount == 3)
        #expect(smallAnimation.width == 10 && smallAnimation.height == 5)
    }

    @Test("loader-only downsampling decodes a JPEG at 1/2, 1/4 or 1/8, never below the target")
    func loaderOnlyDownsampling() throws {
        let data = try TestImages.encodedGradient(.jpeg(), width: 800, height: 400)
        func decoded(_ side: CGFloat, scale: CGFloat = 1) throws -> Image {
            try ImageDecoder.decode(data, options: ImageDecodingOptions(
                scaleFactor: scale, downsampleSize: CGSize(width: side, height: side), downsamplingMode: .loaderOnly))
        }
        for (side, width, height) in [(100, 100, 50), (101, 200, 100), (150, 200, 100), (300, 400, 200), (401, 800, 400), (2000, 800, 400)] {
            let image = try decoded(CGFloat(side))
            #expect(image.width == width && image.height == height, "target \(side): got \(image.width)x\(image.height)")
        }
        // The target is in points: 75 pt at scale 2 needs 150 px, so 1/4 is the most the loader may shrink.
        let retina = try decoded(75, scale: 2)
        #expect(retina.width == 200 && retina.height == 100 && retina.scale == 2)
        // Still the same picture: the gradient runs dark on the left to bright on the right.
        let left = try retina.pixel(x: 10, y: 50), right = try retina.pixel(x: 190, y: 50)
        #expect(Int(left.red) + 100 < Int(right.red), "left \(left), right \(right)")
        // A PNG with alpha has no loader shrink (the shrinking PNG loader takes grey and RGB only): downsampled exactly.
        let png = try ImageDecoder.decode(TestImages.encodedGradient(.png(), width: 800, height: 400), options: ImageDecodingOptions(
            downsampleSize: CGSize(width: 150, height: 150), downsamplingMode: .loaderOnly))
        #expect(png.width == 150 && png.height == 75)
    }

    @Test("the JPEG shrink is the largest that keeps the longer side at the target or above")
    func jpegShrinkChoice() {
        #expect(ImageDecoder.jpegShrink(longerSide: 4000, shorterSide: 3000, atLeast: 300) == 8)
        #expect(ImageDecoder.jpegShrink(longerSide: 4000, shorterSide: 3000, atLeast: 500) == 8)
        #expect(ImageDecoder.jpegShrink(longerSide: 4000, shorterSide: 3000, atLeast: 501) == 4)
        #expect(ImageDecoder.jpegShrink(longerSide: 4001, shorterSide: 3000, atLeast: 501) == 8)
        #expect(ImageDecoder.jpegShrink(longerSide: 4000, shorterSide: 3000, atLeast: 1001) == 2)
        #expect(ImageDecoder.jpegShrink(longerSide: 4000, shorterSide: 3000, atLeast: 2001) == 1)
        #expect(ImageDecoder.jpegShrink(longerSide: 10, shorterSide: 10, atLeast: 4000) == 1)
    }

    @Test("the JPEG shrink never takes the shorter side below one pixel")
    func jpegShrinkKeepsShorterSide() {
        #expect(ImageDecoder.jpegShrink(longerSide: 4000, shorterSide: 8, atLeast: 200) == 8)
        #expect(ImageDecoder.jpegShrink(longerSide: 4000, shorterSide: 7, atLeast: 200) == 4)
        #expect(ImageDecoder.jpegShrink(longerSide: 4000, shorterSide: 3, atLeast: 200) == 2)
        #expect(ImageDecoder.jpegShrink(longerSide: 4000, shorterSide: 1, atLeast: 200) == 1)
        #expect(ImageDecoder.jpegShrink(longerSide: 1, shorterSide: 1, atLeast: 1) == 1)
    }

    // MARK: - Bad input

    @Test("empty data is refused as empty")
    func emptyData() {
        #expect(throws: HalcyonError.self) { try ImageDecoder.decode(Data()) }
        do {
            _ = try ImageDecoder.decode(Data())
        } catch {
            guard case .emptyData = processorReason(error) else { Issue.record("got \(error)"); return }
        }
    }

    @Test("wrong magic is an unsupported format")
    func wrongMagic() {
        do {
            _ = try ImageDecoder.decode(Data("GIF00a this is text, not an image".utf8))
            Issue.record("decoded text")
        } catch {
            guard case .unsupportedFormat(.unknown) = processorReason(error) else { Issue.record("got \(error)"); return }
        }
    }

    @Test("a recognised format this build refuses to load is unsupported, not corrupt")
    func blockedFormat() {
        // 1×1 24-bit BMP: libvips would need the untrusted ImageMagick loader, which is blocked.
        var bmp: [UInt8] = Array("BM".utf8) + [58, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 24, 0]
        bmp += [UInt8](repeating: 0, count: 24) + [0, 0, 255, 0]
        do {
            _ = try ImageDecoder.decode(Data(bmp))
            Issue.record("decoded a BMP through a blocked loader")
        } catch {
            guard case .unsupportedFormat(.bmp) = processorReason(error) else { Issue.record("got \(error)"); return }
        }
    }

    @Test("truncated and corrupt data give corruptData with libvips' reason", arguments: [
        ImageEncodingFormat.jpeg(), .png(), .webp(), .gif,
    ])
    func truncatedData(encoding: ImageEncodingFormat) throws {
        let data = try TestImages.encodedGradient(encoding, width: 200, height: 150)
        for cut in [data.count / 2, 40] {
            let truncated = data.prefix(cut)
            do {
                let image = try ImageDecoder.decode(Data(truncated), options: ImageDecodingOptions(preloadAllAnimationData: true))
                Issue.record("decoded \(cut) of \(data.count) bytes of \(encoding) into \(image.width)x\(image.height)")
            } catch {
                guard case .corruptData(let format, let message) = processorReason(error) else { Issue.record("got \(error)"); continue }
                #expect(format == encoding.format)
                #expect(!message.isEmpty)
            }
        }
    }

    @Test("garbage after a valid signature is corrupt, not a crash")
    func garbageAfterMagic() {
        var rng = SystemRandomNumberGenerator()
        for signature in [[0xFF, 0xD8, 0xFF], [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], Array("GIF89a".utf8)] as [[UInt8]] {
            let noise = (0..<500).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(throws: HalcyonError.self) { try ImageDecoder.decode(Data(signature + noise)) }
        }
    }

    @Test("a decompression bomb is refused from its header")
    func pixelLimit() throws {
        let bomb = try TestImages.pngClaimingSize(width: 16384, height: 16384)
        do {
            _ = try ImageDecoder.decode(bomb)
            Issue.record("decoded a 268 MP header")
        } catch {
            guard case .tooManyPixels(let width, let height, _, let limit) = processorReason(error) else { Issue.record("got \(error)"); return }
            #expect(width == 16384 && height == 16384)
            #expect(limit == ImageDecodingOptions.defaultMaxPixelCount)
        }
    }

    @Test("an animation's pixel limit counts every frame; the frame limit applies too")
    func animationLimits() throws {
        let data = try TestImages.animation(frames: 6, width: 20, height: 10).encoded(as: .gif)
        do {
            _ = try ImageDecoder.decode(data, options: ImageDecodingOptions(maxPixelCount: 20 * 10 * 5))
            Issue.record("decoded past the pixel limit")
        } catch {
            guard case .tooManyPixels(_, _, let frames, _) = processorReason(error) else { Issue.record("got \(error)"); return }
            #expect(frames == 6)
        }
        do {
            _ = try ImageDecoder.decode(data, options: ImageDecodingOptions(maxFrameCount: 5))
            Issue.record("decoded past the frame limit")
        } catch {
            guard case .tooManyFrames(6, 5) = processorReason(error) else { Issue.record("got \(error)"); return }
        }
        let firstOnly = try ImageDecoder.decode(data, options: ImageDecodingOptions(onlyFirstFrame: true, maxFrameCount: 1))
        #expect(firstOnly.frameCount == 1)
    }

    @Test("libvips counts 4097 frames for any longer animation: the message says more than 4096, not 4097")
    func framesPastLibvipsCount() throws {
        let data = try TestImages.animation(frames: 5000, width: 2, height: 2).encoded(as: .gif)
        do {
            _ = try ImageDecoder.decode(data, options: ImageDecodingOptions(maxFrameCount: 1000))
            Issue.record("decoded past the frame limit")
        } catch {
            guard case .tooManyFrames(let count, 1000) = processorReason(error) else { Issue.record("got \(error)"); return }
            #expect(count > 4096)
            #expect("\(error)".contains("more than 4096 frames"), "\(error)")
            #expect(!"\(error)".contains("\(count)"))
        }
    }
}
