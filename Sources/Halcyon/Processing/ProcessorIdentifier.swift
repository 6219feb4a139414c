import Foundation

/// Stable spellings of parameters inside processor identifiers.
enum ProcessorIdentifier {
    /// The prefix every built-in identifier starts with.
    static let prefix = "halcyon."

    /// A number without trailing zeros: `300`, `0.5`, `-1.25`.
    static func number(_ value: CGFloat) -> String {
        let rounded = (Double(value) * 10_000).rounded() / 10_000
        if rounded == rounded.rounded() && abs(rounded) < 1e15 {
            return String(Int(rounded))
        }
        return String(rounded)
    }

    /// `WxH` in numbers.
    static func size(_ size: CGSize) -> String {
        "\(number(size.width))x\(number(size.height))"
    }
}
