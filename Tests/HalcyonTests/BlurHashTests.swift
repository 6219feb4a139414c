import Foundation
@testable import Halcyon
import Testing

@Suite("BlurHash and dominant colour")
struct BlurHashTests {
    /// A smooth two-axis gradient: red rises left to right, blue top to bottom, green is constant.
    static func gradient(width: Int, height: Int) -> [UInt8] {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 4
                pixels[offset] = UInt8(40 + 180 * x / max(1, width - 1))
                pixels[offset + 1] = 90
                pixels[offset + 2] = UInt8(220 - 170 * y / max(1, height - 1))
            }
        }
        return pixels
    }

    /// Mean absolute difference per channel (RGB) of two RGBA buffers of one size.
    static func meanError(_ a: [UInt8], _ b: [UInt8]) -> Double {
        var total = 0, count = 0
        for index in stride(from: 0, to: min(a.count, b.count), by: 4) {
            for channel in 0..<3 { total += abs(Int(a[index + channel]) - Int(b[index + channel])) }
            count += 3
        }
        return Double(total) / Double(max(1, count))
    }

    @Test("Length is 4 + 2 × components, the size flag names them, and bad counts or buffers throw")
    func shape() throws {
        let pixels = Self.gradient(width: 16, height: 12)
        for (cx, cy) in [(1, 1), (4, 3), (9, 9), (2, 7)] {
            let hash = try BlurHash.encode(rgba: pixels, width: 16, height: 12, componentsX: cx, componentsY: cy)
            #expect(hash.count == 4 + 2 * cx * cy)
            #expect(try BlurHashDecoder.components(hash) == (cx, cy))
        }
        #expect(throws: HalcyonError.self) { try BlurHash.encode(rgba: pixels, width: 16, height: 12, componentsX: 0) }
        #expect(throws: HalcyonError.self) { try BlurHash.encode(rgba: pixels, width: 16, height: 12, componentsY: 10) }
        #expect(throws: HalcyonError.self) { try BlurHash.encode(rgba: pixels, width: 15, height: 12) }
    }

    /// The discrete cosine sums of a flat image are not all zero (for odd i, the sum over x of
    /// cos(πix/w) is 1), so a flat image's hash has small AC terms in the reference algorithm too;
    /// its average (the DC term) is the colour itself.
    @Test("A solid colour's hash stores that colour as its average, and decodes close to it")
    func solid() throws {
        var pixels = [UInt8](repeating: 255, count: 20 * 10 * 4)
        for index in stride(from: 0, to: pixels.count, by: 4) { (pixels[index], pixels[index + 1], pixels[index + 2]) = (200, 100, 50) }
        let hash = try BlurHash.encode(rgba: pixels, width: 20, height: 10)
        let average = try BlurHashDecoder.average(hash)
        #expect(average == (200, 100, 50))
        let decoded = try BlurHashDecoder.decode(hash, width: 20, height: 10)
        #expect(Self.meanError(decoded, pixels) < 12, "mean error \(Self.meanError(decoded, pixels))")
    }

    /// 4 × 3 cosine components follow a linear ramp to within a few levels; the bound (6 of 255 per channel)
    /// sits well below what a hash of another image gives (checked below), so the test can fail.
    @Test("Decoding the hash of a smooth image with an independent decoder gives that image, closely")
    func roundTrip() throws {
        let (width, height) = (64, 48)
        let pixels = Self.gradient(width: width, height: height)
        let hash = try BlurHash.encode(rgba: pixels, width: width, height: height)
        let decoded = try BlurHashDecoder.decode(hash, width: width, height: height)
        let error = Self.meanError(decoded, pixels)
        #expect(error < 6, "mean error \(error)")
        // A hash of the image turned upside down decodes to something far from the image.
        var flipped: [UInt8] = []
        for y in (0..<height).reversed() {
            let row = y * width * 4
            flipped += pixels[row..<(row + width * 4)]
        }
        let other = try BlurHashDecoder.decode(try BlurHash.encode(rgba: Array(flipped), width: width, height: height),
                                               width: width, height: height)
        #expect(Self.meanError(other, pixels) > 4 * error, "the check cannot tell images apart")
    }

    @Test("Image.blurHash decodes close to the image's own small thumbnail")
    func throughImage() throws {
        let image = try Image(rgbaPixels: Self.gradient(width: 300, height: 200), width: 300, height: 200)
        let hash = try image.blurHash(componentsX: 5, componentsY: 4)
        #expect(hash.count == 4 + 2 * 20)
        let thumbnail = try image.vips.thumbnailed(fitting: 30)
        let reference = try thumbnail.withAlpha().pixelBytes()
        let decoded = try BlurHashDecoder.decode(hash, width: thumbnail.width, height: thumbnail.height)
        // The hash comes from a 64-pixel copy, the reference is a 30-pixel one: a little more than the round trip above.
        #expect(Self.meanError(decoded, reference) < 8, "mean error \(Self.meanError(decoded, reference))")
        #expect(throws: HalcyonError.self) { try image.blurHash(componentsX: 10) }
    }

    @Test("Dominant colour: the colour of most opaque pixels, transparent ones left out")
    func dominant() throws {
        let (width, height) = (40, 40)
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 4
                let colour: (UInt8, UInt8, UInt8, UInt8) = y < 10 ? (250, 250, 250, 0)   // transparent white band
                    : x < 25 ? (30, 120, 200, 255) : (200, 40, 40, 255)
                (pixels[offset], pixels[offset + 1], pixels[offset + 2], pixels[offset + 3]) = colour
            }
        }
        #expect(DominantColor.of(rgba: pixels) == RGBA8(red: 30, green: 120, blue: 200))
        let image = try Image(rgbaPixels: pixels, width: width, height: height)
        let found = try image.dominantColor()
        #expect(abs(Int(found.red) - 30) <= 8 && abs(Int(found.green) - 120) <= 8 && abs(Int(found.blue) - 200) <= 8, "\(found)")
    }
}
