import Foundation

/// A ThumbHash decoder written for the tests from the format's description (header bit layout, LPQA channels,
/// cosine terms with 4-bit normalised factors), independent of ``ThumbHash``'s encoder code.
enum ThumbHashDecoder {
    struct Decoded {
        /// RGBA pixels, 0...1 each, row by row.
        var pixels: [(r: Double, g: Double, b: Double, a: Double)]
        var width: Int
        var height: Int
        /// The aspect ratio the hash carries (width / height).
        var aspectRatio: Double
        /// The average colour from the constant terms.
        var average: (r: Double, g: Double, b: Double)
    }

    /// Decodes `hash` to `width` × `height` pixels; nil when the hash is too short.
    static func decode(_ hash: [UInt8], width: Int, height: Int) -> Decoded? {
        guard hash.count >= 5 else { return nil }
        let h24 = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
        let h16 = Int(hash[3]) | Int(hash[4]) << 8
        let lDC = Double(h24 & 63) / 63, pDC = Double((h24 >> 6) & 63) / 31.5 - 1, qDC = Double((h24 >> 12) & 63) / 31.5 - 1
        let lScale = Double((h24 >> 18) & 31) / 31, hasAlpha = (h24 >> 23) & 1 == 1
        let pScale = Double((h16 >> 3) & 63) / 63, qScale = Double((h16 >> 9) & 63) / 63, landscape = (h16 >> 15) & 1 == 1
        let longSide = hasAlpha ? 5 : 7, shortSide = h16 & 7
        let lx = landscape ? longSide : shortSide, ly = landscape ? shortSide : longSide
        var nibbles: [Double] = []
        let start = hasAlpha ? 6 : 5
        guard hash.count >= start else { return nil }
        for byte in hash.dropFirst(start) { nibbles += [Double(byte & 15) / 15, Double(byte >> 4) / 15] }
        var cursor = 0
        func terms(_ nx: Int, _ ny: Int, scale: Double) -> [(cx: Int, cy: Int, value: Double)] {
            var out: [(Int, Int, Double)] = []
            for cy in 0..<ny {
                var cx = cy == 0 ? 1 : 0
                while cx * ny < nx * (ny - cy) {
                    let nibble = cursor < nibbles.count ? nibbles[cursor] : 0.5
                    cursor += 1
                    out.append((cx, cy, (nibble - 0.5) * 2 * scale))
                    cx += 1
                }
            }
            return out
        }
        let l = terms(max(3, lx), max(3, ly), scale: lScale), p = terms(3, 3, scale: pScale), q = terms(3, 3, scale: qScale)
        var aDC = 1.0, a: [(cx: Int, cy: Int, value: Double)] = []
        if hasAlpha {
            aDC = Double(hash[5] & 15) / 15
            a = terms(5, 5, scale: Double(hash[5] >> 4) / 15)
        }
        func value(_ dc: Double, _ list: [(cx: Int, cy: Int, value: Double)], x: Int, y: Int) -> Double {
            list.reduce(dc) { sum, term in
                let weight = (term.cx > 0 ? 2.0 : 1.0) * (term.cy > 0 ? 2.0 : 1.0)
                return sum + weight * term.value * cos(Double.pi / Double(width) * Double(term.cx) * (Double(x) + 0.5))
                    * cos(Double.pi / Double(height) * Double(term.cy) * (Double(y) + 0.5))
            }
        }
        let rgb = { (l: Double, p: Double, q: Double) -> (Double, Double, Double) in
            let b = l - 2 * p / 3, r = (3 * l - b + q) / 2
            return (r, r - q, b)
        }
        var pixels: [(r: Double, g: Double, b: Double, a: Double)] = []
        for y in 0..<height {
            for x in 0..<width {
                let (r, g, b) = rgb(value(lDC, l, x: x, y: y), value(pDC, p, x: x, y: y), value(qDC, q, x: x, y: y))
                let clamp = { (v: Double) in min(1, max(0, v)) }
                pixels.append((clamp(r), clamp(g), clamp(b), clamp(value(aDC, a, x: x, y: y))))
            }
        }
        let mean = rgb(lDC, pDC, qDC)
        return Decoded(pixels: pixels, width: width, height: height, aspectRatio: Double(lx) / Double(ly), average: mean)
    }
}
