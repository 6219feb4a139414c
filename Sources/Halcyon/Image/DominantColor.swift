import Foundation

/// The colour most of an image is: the most populated cell of a 16 × 16 × 16 RGB histogram over
/// the pixels that are not mostly transparent, averaged within that cell.
///
/// Ties go to the cell seen first. An image with no opaque pixel gives the average of all pixels
/// with alpha 0. Linear in the pixel count.
public enum DominantColor {
    /// The dominant colour of straight 8-bit RGBA pixels.
    public static func of(rgba pixels: [UInt8]) -> RGBA8 {
        var counts = [Int](repeating: 0, count: 4096)
        var sums = [(Int, Int, Int)](repeating: (0, 0, 0), count: 4096)
        var best = -1
        var index = 0
        while index + 3 < pixels.count {
            defer { index += 4 }
            guard pixels[index + 3] >= 128 else { continue }
            let (r, g, b) = (Int(pixels[index]), Int(pixels[index + 1]), Int(pixels[index + 2]))
            let cell = (r >> 4) << 8 | (g >> 4) << 4 | b >> 4
            counts[cell] += 1
            sums[cell] = (sums[cell].0 + r, sums[cell].1 + g, sums[cell].2 + b)
            if best < 0 || counts[cell] > counts[best] { best = cell }
        }
        guard best >= 0 else { return average(pixels) }
        let n = counts[best]
        return RGBA8(red: UInt8(sums[best].0 / n), green: UInt8(sums[best].1 / n), blue: UInt8(sums[best].2 / n))
    }

    private static func average(_ pixels: [UInt8]) -> RGBA8 {
        let count = max(1, pixels.count / 4)
        var r = 0, g = 0, b = 0
        for index in stride(from: 0, to: pixels.count - 3, by: 4) {
            r += Int(pixels[index])
            g += Int(pixels[index + 1])
            b += Int(pixels[index + 2])
        }
        return RGBA8(red: UInt8(r / count), green: UInt8(g / count), blue: UInt8(b / count), alpha: 0)
    }
}
