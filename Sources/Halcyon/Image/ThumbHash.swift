import Foundation

/// ThumbHash: a placeholder of at most 25 bytes (Evan Wallace's format) that,
/// unlike a BlurHash, also carries the aspect ratio and alpha.
///
/// The pixels, composited over their own average colour, become four
/// channels: luminance, yellow–blue, red–green and alpha. Each is reduced to
/// its lowest cosine (DCT) terms: the constant term and the varying terms,
/// normalised by their largest magnitude and quantised to 4 bits each. A 5-byte
/// header holds the constants, the scales, the luminance term count along
/// the shorter side, and flags for alpha and landscape; a sixth header byte
/// holds the alpha channel's constant and scale. Work is proportional to
/// pixels × terms: ``encode(rgba:width:height:)`` takes at most 100 × 100
/// pixels (``Image/thumbHash()`` shrinks to 64 first).
public enum ThumbHash {
    /// The hash of `width` × `height` straight 8-bit RGBA pixels (each side 1...100).
    ///
    /// Throws `.processorError(.invalidParameter)` for a larger or empty image, or a buffer of the wrong length.
    public static func encode(rgba pixels: [UInt8], width: Int, height: Int) throws(HalcyonError) -> [UInt8] {
        guard (1...100).contains(width), (1...100).contains(height), pixels.count == width * height * 4 else {
            throw .processorError(reason: .invalidParameter(
                processor: "ThumbHash", message: "\(pixels.count) bytes of \(width)x\(height) RGBA (each side 1...100) cannot be hashed"))
        }
        let channels = Channels(pixels, width: width, height: height)
        let longer = Double(max(width, height))
        let limit = channels.hasAlpha ? 5.0 : 7.0
        let lx = max(1, Int((limit * Double(width) / longer).rounded()))
        let ly = max(1, Int((limit * Double(height) / longer).rounded()))
        let l = Terms(channels.l, width: width, height: height, nx: max(3, lx), ny: max(3, ly))
        let p = Terms(channels.p, width: width, height: height, nx: 3, ny: 3)
        let q = Terms(channels.q, width: width, height: height, nx: 3, ny: 3)
        let landscape = width > height
        let header24 = Int((63 * l.dc).rounded()) | Int((31.5 + 31.5 * p.dc).rounded()) << 6
            | Int((31.5 + 31.5 * q.dc).rounded()) << 12 | Int((31 * l.scale).rounded()) << 18 | (channels.hasAlpha ? 1 << 23 : 0)
        let header16 = (landscape ? ly : lx) | Int((63 * p.scale).rounded()) << 3 | Int((63 * q.scale).rounded()) << 9
            | (landscape ? 1 << 15 : 0)
        var hash = [header24 & 255, (header24 >> 8) & 255, header24 >> 16, header16 & 255, header16 >> 8].map(UInt8.init)
        var varying = l.ac + p.ac + q.ac
        if channels.hasAlpha {
            let a = Terms(channels.a, width: width, height: height, nx: 5, ny: 5)
            hash.append(UInt8(Int((15 * a.dc).rounded()) | Int((15 * a.scale).rounded()) << 4))
            varying += a.ac
        }
        // Two 4-bit terms a byte, the first in the low nibble.
        for (index, term) in varying.enumerated() {
            let nibble = UInt8(Int((15 * term).rounded()))
            if index % 2 == 0 { hash.append(nibble) } else { hash[hash.count - 1] |= nibble << 4 }
        }
        return hash
    }

    /// The four channels of the pixels composited over their alpha-weighted average colour.
    private struct Channels {
        var l: [Double] = [], p: [Double] = [], q: [Double] = [], a: [Double] = []
        var hasAlpha = false

        init(_ pixels: [UInt8], width: Int, height: Int) {
            let count = width * height
            var sum = (r: 0.0, g: 0.0, b: 0.0, a: 0.0)
            for index in 0..<count {
                let alpha = Double(pixels[index * 4 + 3]) / 255
                sum.r += alpha * Double(pixels[index * 4]) / 255
                sum.g += alpha * Double(pixels[index * 4 + 1]) / 255
                sum.b += alpha * Double(pixels[index * 4 + 2]) / 255
                sum.a += alpha
            }
            let average = sum.a > 0 ? (sum.r / sum.a, sum.g / sum.a, sum.b / sum.a) : (0, 0, 0)
            hasAlpha = sum.a < Double(count)
            for index in 0..<count {
                let alpha = Double(pixels[index * 4 + 3]) / 255
                let mix = { (channel: Int, mean: Double) in mean * (1 - alpha) + alpha * Double(pixels[index * 4 + channel]) / 255 }
                let (r, g, b) = (mix(0, average.0), mix(1, average.1), mix(2, average.2))
                l.append((r + g + b) / 3)
                p.append((r + g) / 2 - b)
                q.append(r - g)
                a.append(alpha)
            }
        }
    }

    /// The DCT terms of one channel: cx + cy along the triangle cx·ny < nx·(ny − cy), row by row.
    private struct Terms {
        var dc = 0.0
        var ac: [Double] = []
        var scale = 0.0

        init(_ channel: [Double], width: Int, height: Int, nx: Int, ny: Int) {
            for cy in 0..<ny {
                var cx = 0
                while cx * ny < nx * (ny - cy) {
                    let fx = (0..<width).map { cos(Double.pi / Double(width) * Double(cx) * (Double($0) + 0.5)) }
                    var sum = 0.0
                    for y in 0..<height {
                        let fy = cos(Double.pi / Double(height) * Double(cy) * (Double(y) + 0.5))
                        for x in 0..<width { sum += channel[x + y * width] * fx[x] * fy }
                    }
                    let term = sum / Double(width * height)
                    if cx == 0 && cy == 0 { dc = term } else { ac.append(term); scale = max(scale, abs(term)) }
                    cx += 1
                }
            }
            if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
        }
    }
}
