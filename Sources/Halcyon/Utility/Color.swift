import Foundation

/// An sRGB colour with alpha, each component in 0...1.
///
/// Stands in for the platform colour Kingfisher's processors take. Parses
/// `#rgb`, `#rgba`, `#rrggbb` and `#rrggbbaa`; ``hexString`` is the stable
/// spelling used in processor identifiers.
public struct Color: Sendable, Hashable, Codable, CustomStringConvertible {
    public var red: Double
    public var green: Double
    public var blue: Double
    public var alpha: Double

    /// Makes a colour; components are clamped to 0...1.
    public init(red: Double, green: Double, blue: Double, alpha: Double = 1) {
        self.red = Color.clamp(red)
        self.green = Color.clamp(green)
        self.blue = Color.clamp(blue)
        self.alpha = Color.clamp(alpha)
    }

    /// Parses a hex colour with or without `#`; nil when it is not 3, 4, 6 or 8 hex digits.
    public init?(hex: String) {
        var digits = Substring(hex)
        if digits.hasPrefix("#") { digits = digits.dropFirst() }
        guard [3, 4, 6, 8].contains(digits.count), digits.allSatisfy(\.isHexDigit) else { return nil }
        if digits.count <= 4 {
            digits = Substring(digits.flatMap { [$0, $0] })
        }
        guard let value = UInt64(digits, radix: 16) else { return nil }
        let hasAlpha = digits.count == 8
        let shift: UInt64 = hasAlpha ? 8 : 0
        self.init(
            red: Double((value >> (16 + shift)) & 0xFF) / 255,
            green: Double((value >> (8 + shift)) & 0xFF) / 255,
            blue: Double((value >> shift) & 0xFF) / 255,
            alpha: hasAlpha ? Double(value & 0xFF) / 255 : 1)
    }

    public static let black = Color(red: 0, green: 0, blue: 0)
    public static let white = Color(red: 1, green: 1, blue: 1)
    public static let clear = Color(red: 0, green: 0, blue: 0, alpha: 0)

    /// `#rrggbbaa`, lower case.
    public var hexString: String {
        let parts = [red, green, blue, alpha].map { String(format: "%02x", Int(($0 * 255).rounded())) }
        return "#" + parts.joined()
    }

    /// Components scaled to 0...255, as libvips band values: red, green, blue, alpha.
    var bandValues: [Double] { [red * 255, green * 255, blue * 255, alpha * 255] }

    public var description: String { hexString }

    private static func clamp(_ value: Double) -> Double { value.isNaN ? 0 : min(1, max(0, value)) }
}
