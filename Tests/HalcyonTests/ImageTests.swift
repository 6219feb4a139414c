import Foundation
import Testing
@testable import Halcyon

@Suite("Image")
struct ImageTests {
    @Test("pixels made are the pixels read back")
    func pixelsRoundTrip() throws {
        let pixels = TestImages.gradientPixels(width: 9, height: 7, alpha: 200)
        let image = try Image(rgbaPixels: pixels, width: 9, height: 7)
        #expect(try image.rgbaPixels() == pixels)
        #expect(try image.pixel(x: 8, y: 6) == RGBA8(red: 255, green: 255, blue: 100, alpha: 200))
        #expect(image.hasAlpha)
        #expect(image.cost == 9 * 7 * 4)
    }

    @Test("an animation reports frames, delays, duration and cost")
    func animationProperties() throws {
        let image = try TestImages.animation(frames: 4, width: 20, height: 10)
        #expect(image.isAnimated)
        #expect(image.frameCount == 4)
        #expect(image.height == 10)
        #expect(zip(image.frameDelays, [0.05, 0.1, 0.15, 0.2]).allSatisfy { abs($0 - $1) < 1e-9 })
        #expect(image.frameDelays.count == 4)
        #expect(abs(image.duration - 0.5) < 1e-9)
        #expect(image.cost == 20 * 10 * 4 * 4)
        #expect(try image.pixel(x: 0, y: 0, frame: 2).red == 80)
    }

    @Test("bad sizes, frames and coordinates are typed errors")
    func badArguments() throws {
        #expect(throws: HalcyonError.self) { try Image(rgbaPixels: [1, 2, 3], width: 1, height: 1) }
        #expect(throws: HalcyonError.self) { try Image(rgbaPixels: [], width: 0, height: 0) }
        let image = try TestImages.gradient(width: 4, height: 4)
        #expect(throws: HalcyonError.self) { try image.pixel(x: 4, y: 0) }
        #expect(throws: HalcyonError.self) { try image.pixel(x: 0, y: 0, frame: 1) }
        #expect(throws: HalcyonError.self) { try image.rgbaPixels(frame: -1) }
    }

    @Test("JPEG flattens alpha onto white; formats without animation keep the first frame")
    func encodingRules() throws {
        let transparent = try TestImages.solid(RGBA8(red: 0, green: 0, blue: 0, alpha: 0))
        let jpeg = try ImageDecoder.decode(transparent.encoded(as: .jpeg()))
        let pixel = try jpeg.pixel(x: 5, y: 5)
        #expect(pixel.red > 245 && pixel.green > 245 && pixel.blue > 245)
        #expect(!jpeg.hasAlpha)
        let animation = try TestImages.animation(frames: 3)
        let png = try ImageDecoder.decode(animation.encoded(as: .png()))
        #expect(png.frameCount == 1)
        #expect(png.height == 10)
    }

    @Test("TIFF is written compressed: one colour at 2000x2000 is kilobytes, not the 16 MB of its pixels, and reads back")
    func tiffIsCompressed() throws {
        let image = try TestImages.solid(RGBA8(red: 30, green: 140, blue: 200, alpha: 255), width: 2000, height: 2000)
        let data = try image.encoded(as: .tiff)
        #expect(data.count < 200_000, "\(data.count) bytes")
        let back = try ImageDecoder.decode(data)
        #expect(back.width == 2000 && back.height == 2000 && back.originalFormat == .tiff)
        #expect(try back.pixel(x: 1999, y: 1999) == RGBA8(red: 30, green: 140, blue: 200, alpha: 255))
    }
}
