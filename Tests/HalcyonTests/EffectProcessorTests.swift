import Foundation
@testable import Halcyon
import Testing

/// The turn, mirror, sharpen, pixelate, padding and background processors on images in memory
/// (also run under AddressSanitizer: they call libvips through new shims).
@Suite("Effect processors")
struct EffectProcessorTests {
    private let options = HalcyonParsedOptionsInfo([])

    private func run(_ processor: any ImageProcessor, _ image: Image) throws -> Image {
        try processor.process(item: .image(image), options: options)
    }

    @Test("Turns and mirrors move known corners; animations keep their frames")
    func turnsAndMirrors() throws {
        let image = try TestImages.gradient(width: 30, height: 20)
        let turned = try run(RotationImageProcessor(degrees: -90), image)
        #expect(turned.width == 20 && turned.height == 30)
        #expect(try turned.pixel(x: 0, y: 0) == image.pixel(x: 29, y: 0), "a counter-clockwise turn brings the top-right to the top-left")
        let mirrored = try run(FlipImageProcessor(horizontal: true, vertical: true), image)
        #expect(try mirrored.pixel(x: 0, y: 0) == image.pixel(x: 29, y: 19))
        let animation = try TestImages.animation(frames: 3, width: 20, height: 10)
        let turnedAnimation = try run(RotationImageProcessor(degrees: 90), animation)
        #expect(turnedAnimation.frameCount == 3 && turnedAnimation.width == 10 && turnedAnimation.height == 20)
        #expect(RotationImageProcessor(degrees: 450).identifier == RotationImageProcessor(degrees: 90).identifier)
    }

    @Test("Pixelate makes uniform blocks and keeps the size, also when the block is larger than the image")
    func pixelate() throws {
        let image = try TestImages.gradient(width: 25, height: 13)
        let blocks = try run(PixelateImageProcessor(size: 5), image)
        #expect(blocks.width == 25 && blocks.height == 13)
        #expect(try blocks.pixel(x: 0, y: 0) == blocks.pixel(x: 4, y: 4))
        #expect(try blocks.pixel(x: 5, y: 0) != blocks.pixel(x: 4, y: 0))
        let whole = try run(PixelateImageProcessor(size: 500), image)
        #expect(whole.width == 25 && whole.height == 13)
    }

    @Test("Padding grows the image with the colour; background flattens alpha; sharpen keeps the size; bad values throw")
    func paddingBackgroundSharpen() throws {
        let image = try TestImages.gradient(width: 10, height: 10, alpha: 0)
        let padded = try run(PaddingImageProcessor(top: 1, right: 2, bottom: 3, left: 4, color: Color(red: 0, green: 1, blue: 0)), image)
        #expect(padded.width == 16 && padded.height == 14)
        #expect(try padded.pixel(x: 0, y: 0) == RGBA8(red: 0, green: 255, blue: 0, alpha: 255))
        let flat = try run(BackgroundColorProcessor(color: Color(red: 1, green: 0, blue: 0)), image)
        #expect(!flat.hasAlpha)
        #expect(try flat.pixel(x: 5, y: 5) == RGBA8(red: 255, green: 0, blue: 0))
        let sharp = try run(SharpenImageProcessor(sigma: 2), try TestImages.gradient(width: 40, height: 30))
        #expect(sharp.width == 40 && sharp.height == 30)
        #expect(throws: HalcyonError.self) { try run(PaddingImageProcessor(top: 0, right: 0, bottom: 0, left: 5000, color: .white, maxSide: 100), image) }
        #expect(throws: HalcyonError.self) { try run(SharpenImageProcessor(sigma: -1), image) }
    }
}
