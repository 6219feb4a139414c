import Foundation

/// A BlurHash decoder written for the tests from the algorithm's description (Wolt's BlurHash:
/// size flag, quantised maximum, DC as 24-bit sRGB, ACs as base-19 triples scaled by the maximum,
/// summed cosine bases in linear light), independent of the encoder's code.
enum BlurHashDecoder {
    struct Invalid: Error {}

    private static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")

    private static func number(_ characters: ArraySlice<Character>) throws -> Int {
        try characters.reduce(0) { value, character in
            guard let digit = alphabet.firstIndex(of: character) else { throw Invalid() }
            return value * 83 + digit
        }
    }

    private static func linear(_ value: Int) -> Double {
        let v = Double(value) / 255
        return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
    }

    private static func srgb(_ value: Double) -> UInt8 {
        let v = max(0, min(1, value))
        let encoded = v <= 0.0031308 ? v * 12.92 : 1.055 * pow(v, 1 / 2.4) - 0.055
        return UInt8(max(0, min(255, (encoded * 255).rounded())))
    }

    /// The component counts a hash declares.
    static func components(_ hash: String) throws -> (x: Int, y: Int) {
        let characters = Array(hash)
        guard !characters.isEmpty else { throw Invalid() }
        let flag = try number(characters[0...0])
        return (flag % 9 + 1, flag / 9 + 1)
    }

    /// The average colour a hash stores (its DC term), 8-bit sRGB.
    static func average(_ hash: String) throws -> (Int, Int, Int) {
        let characters = Array(hash)
        guard characters.count >= 6 else { throw Invalid() }
        let dc = try number(characters[2..<6])
        return (dc >> 16, (dc >> 8) & 255, dc & 255)
    }

    /// `width` × `height` RGBA pixels (alpha 255) drawn from `hash`.
    static func decode(_ hash: String, width: Int, height: Int) throws -> [UInt8] {
        let characters = Array(hash)
        let (cx, cy) = try components(hash)
        guard characters.count == 4 + 2 * cx * cy else { throw Invalid() }
        let maximum = Double(try number(characters[1...1]) + 1) / 166
        var colours: [(Double, Double, Double)] = []
        let dc = try number(characters[2..<6])
        colours.append((linear(dc >> 16), linear((dc >> 8) & 255), linear(dc & 255)))
        for index in 1..<(cx * cy) {
            let value = try number(characters[(4 + index * 2)..<(6 + index * 2)])
            let channel = { (q: Int) -> Double in
                let unit = Double(q - 9) / 9
                return (unit < 0 ? -1 : 1) * unit * unit * maximum
            }
            colours.append((channel(value / (19 * 19)), channel((value / 19) % 19), channel(value % 19)))
        }
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                var r = 0.0, g = 0.0, b = 0.0
                for j in 0..<cy {
                    for i in 0..<cx {
                        let basis = cos(Double.pi * Double(x) * Double(i) / Double(width))
                            * cos(Double.pi * Double(y) * Double(j) / Double(height))
                        let colour = colours[i + j * cx]
                        r += colour.0 * basis
                        g += colour.1 * basis
                        b += colour.2 * basis
                    }
                }
                let offset = (y * width + x) * 4
                pixels[offset] = srgb(r)
                pixels[offset + 1] = srgb(g)
                pixels[offset + 2] = srgb(b)
            }
        }
        return pixels
    }
}
