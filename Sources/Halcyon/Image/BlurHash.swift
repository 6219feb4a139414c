import Foundation

/// BlurHash: a compact text placeholder for an image (Wolt's algorithm): the
/// image's average colour and its lowest-frequency cosine components, a few
/// dozen characters of base 83.
///
/// ``encode(rgba:width:height:componentsX:componentsY:)`` takes straight 8-bit
/// RGBA pixels; alpha is ignored, as in the reference encoder. Work is
/// proportional to pixels × components: encode a small copy (``Image/blurHash(componentsX:componentsY:)``
/// shrinks to at most 64 pixels a side first).
public enum BlurHash {
    /// The base-83 digits.
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")

    /// The hash of `width` × `height` RGBA pixels with `componentsX` × `componentsY` components (each 1...9).
    ///
    /// Throws `.processorError(.invalidParameter)` for component counts outside 1...9, an empty image or a
    /// pixel buffer of the wrong length. The result has 4 + 2 × componentsX × componentsY characters.
    public static func encode(
        rgba pixels: [UInt8], width: Int, height: Int, componentsX: Int = 4, componentsY: Int = 3
    ) throws(HalcyonError) -> String {
        guard (1...9).contains(componentsX), (1...9).contains(componentsY) else {
            throw invalid("components must be 1...9 each, not \(componentsX)x\(componentsY)")
        }
        guard width > 0, height > 0, pixels.count == width * height * 4 else {
            throw invalid("\(pixels.count) bytes are not \(width)x\(height) RGBA pixels")
        }
        let linear = pixels.map { sRGBToLinear($0) }
        var factors: [(Double, Double, Double)] = []
        for j in 0..<componentsY {
            for i in 0..<componentsX {
                factors.append(component(linear, width: width, height: height, i: i, j: j))
            }
        }
        var hash = digits((componentsX - 1) + (componentsY - 1) * 9, length: 1)
        let ac = factors.dropFirst()
        var maximum = 1.0
        if ac.isEmpty {
            hash += digits(0, length: 1)
        } else {
            let actual = ac.map { max(abs($0.0), abs($0.1), abs($0.2)) }.max() ?? 0
            let quantised = Int(max(0, min(82, (actual * 166 - 0.5).rounded(.down))))
            maximum = Double(quantised + 1) / 166
            hash += digits(quantised, length: 1)
        }
        let dc = factors[0]
        hash += digits(linearToSRGB(dc.0) << 16 | linearToSRGB(dc.1) << 8 | linearToSRGB(dc.2), length: 4)
        for factor in ac {
            let q = [factor.0, factor.1, factor.2].map { value -> Int in
                Int(max(0, min(18, (signedPow(value / maximum, 0.5) * 9 + 9.5).rounded(.down))))
            }
            hash += digits(q[0] * 19 * 19 + q[1] * 19 + q[2], length: 2)
        }
        return hash
    }

    /// The (i, j) cosine component of linear RGB pixels.
    private static func component(_ linear: [Double], width: Int, height: Int, i: Int, j: Int) -> (Double, Double, Double) {
        var r = 0.0, g = 0.0, b = 0.0
        let xs = (0..<width).map { cos(Double.pi * Double(i) * Double($0) / Double(width)) }
        for y in 0..<height {
            let cy = cos(Double.pi * Double(j) * Double(y) / Double(height))
            for x in 0..<width {
                let basis = xs[x] * cy
                let offset = (y * width + x) * 4
                r += basis * linear[offset]
                g += basis * linear[offset + 1]
                b += basis * linear[offset + 2]
            }
        }
        let scale = (i == 0 && j == 0 ? 1.0 : 2.0) / Double(width * height)
        return (r * scale, g * scale, b * scale)
    }

    // MARK: - Helpers (shared with decoders)

    /// An 8-bit sRGB value in linear light, 0...1.
    static func sRGBToLinear(_ value: UInt8) -> Double {
        let v = Double(value) / 255
        return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
    }

    /// A linear-light value as 8-bit sRGB, rounded, clamped.
    static func linearToSRGB(_ value: Double) -> Int {
        let v = max(0, min(1, value))
        return v <= 0.003_130_8 ? Int(v * 12.92 * 255 + 0.5) : Int((1.055 * pow(v, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    static func signedPow(_ value: Double, _ exponent: Double) -> Double {
        (value < 0 ? -1 : 1) * pow(abs(value), exponent)
    }

    /// `value` in `length` base-83 digits, most significant first.
    static func digits(_ value: Int, length: Int) -> String {
        var result = ""
        for place in (0..<length).reversed() {
            var divisor = 1
            for _ in 0..<place { divisor *= 83 }
            result.append(alphabet[(value / divisor) % 83])
        }
        return result
    }

    private static func invalid(_ message: String) -> HalcyonError {
        .processorError(reason: .invalidParameter(processor: "blurhash", message: message))
    }
}
