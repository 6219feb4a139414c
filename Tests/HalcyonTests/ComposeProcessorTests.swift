import Foundation
@testable import Halcyon
import Testing

/// The trim, metadata-stripping, watermark and rectangle-crop processors on images in memory
/// (also run under AddressSanitizer: they call libvips through new shims).
@Suite("Compose processors")
struct ComposeProcessorTests {
    private let options = HalcyonParsedOptionsInfo([])

    private func run(_ processor: any ImageProcessor, _ image: Image) throws -> Image {
        try processor.process(item: .image(image), options: options)
    }

    /// 100×80 white with a red 40×40 square at (20, 10).
    static func framedSquare() throws -> Image {
        var pixels = [UInt8](repeating: 255, count: 100 * 80 * 4)
        for y in 10..<50 { for x in 20..<60 { let i = (y * 100 + x) * 4; pixels[i + 1] = 0; pixels[i + 2] = 0 } }
        return try Image(rgbaPixels: pixels, width: 100, height: 80)
    }

    @Test("Trim cuts the border by the corner's colour or a given one; an all-border image is unchanged")
    func trim() throws {
        let image = try Self.framedSquare()
        let trimmed = try run(TrimmingImageProcessor(threshold: 10), image)
        #expect(trimmed.width == 40 && trimmed.height == 40)
        let equal = try run(TrimmingImageProcessor(threshold: 10, color: Color(hex: "ffffff"), equalHorizontal: true, equalVertical: true), image)
        #expect(equal.width == 60 && equal.height == 60)
        let plain = try TestImages.solid(RGBA8(red: 9, green: 9, blue: 9, alpha: 255), width: 12, height: 12)
        #expect(try run(TrimmingImageProcessor(), plain).width == 12)
    }

    @Test("A watermark lands at its anchor with its opacity, or tiles; scale sets its width")
    func watermark() throws {
        let base = try TestImages.solid(RGBA8(red: 0, green: 0, blue: 255, alpha: 255), width: 60, height: 40)
        let mark = try TestImages.solid(RGBA8(red: 255, green: 0, blue: 0, alpha: 255), width: 10, height: 10)
        let corner = try run(WatermarkImageProcessor(watermark: mark, name: "red", anchor: CGPoint(x: 1, y: 1)), base)
        #expect(try corner.pixel(x: 55, y: 35).red == 255)
        #expect(try corner.pixel(x: 45, y: 35).red == 0)
        let faded = try run(WatermarkImageProcessor(watermark: mark, name: "red", opacity: 0.5, anchor: .zero), base)
        let mixed = try faded.pixel(x: 5, y: 5)
        #expect(abs(Int(mixed.red) - 128) < 4 && abs(Int(mixed.blue) - 128) < 4, "\(mixed)")
        let tiled = try run(WatermarkImageProcessor(watermark: mark, name: "red", anchor: nil), base)
        #expect(try tiled.pixel(x: 59, y: 39).red == 255)
        #expect(tiled.hasAlpha == base.hasAlpha)
        let scaled = try run(WatermarkImageProcessor(watermark: mark, name: "red", anchor: .zero, scale: 0.5), base)
        #expect(try scaled.pixel(x: 29, y: 29).red == 255)
        #expect(try scaled.pixel(x: 31, y: 5).red == 0)
    }

    @Test("A smart crop finds the detailed corner of a flat image")
    func smartCrop() throws {
        var pixels = [UInt8](repeating: 128, count: 80 * 60 * 4)
        for y in 0..<60 { for x in 0..<80 {
            let i = (y * 80 + x) * 4
            pixels[i + 3] = 255
            if x >= 55 && y >= 35 { (pixels[i], pixels[i + 1], pixels[i + 2]) = (x + y) % 2 == 0 ? (255, 0, 0) : (0, 255, 0) }
        } }
        let image = try Image(rgbaPixels: pixels, width: 80, height: 60)
        let cropped = try run(SmartCroppingImageProcessor(size: CGSize(width: 30, height: 30)), image)
        #expect(cropped.width == 30 && cropped.height == 30)
        #expect(try cropped.pixel(x: 29, y: 29).green == 255 || cropped.pixel(x: 29, y: 29).red == 255, "the busy corner is kept")
    }

    @Test("A rectangle crop takes exactly that part; outside parts are dropped")
    func rectangleCrop() throws {
        let image = try TestImages.gradient(width: 30, height: 20)
        let cropped = try run(CroppingImageProcessor(rect: CGRect(x: 10, y: 5, width: 10, height: 10)), image)
        #expect(cropped.width == 10 && cropped.height == 10)
        #expect(try cropped.pixel(x: 0, y: 0) == image.pixel(x: 10, y: 5))
        let clipped = try run(CroppingImageProcessor(rect: CGRect(x: 25, y: 15, width: 10, height: 10)), image)
        #expect(clipped.width == 5 && clipped.height == 5)
    }
}
