import Foundation

/// A corner radius: in points, or as a fraction of the image's width or height.
public enum CornerRadius: Sendable, Hashable {
    /// A fixed radius in points.
    case point(CGFloat)
    /// A fraction of the image width (0.5 makes a full circle of a square image).
    case widthFraction(CGFloat)
    /// A fraction of the image height.
    case heightFraction(CGFloat)

    /// The radius in pixels for an image of `width` × `height` pixels at `scale`.
    func pixels(width: Int, height: Int, scale: CGFloat) -> Double {
        switch self {
        case .point(let value): return Double(value * scale)
        case .widthFraction(let fraction): return Double(fraction) * Double(width)
        case .heightFraction(let fraction): return Double(fraction) * Double(height)
        }
    }

    var identifierText: String {
        switch self {
        case .point(let value): return ProcessorIdentifier.number(value)
        case .widthFraction(let fraction): return "w*\(ProcessorIdentifier.number(fraction))"
        case .heightFraction(let fraction): return "h*\(ProcessorIdentifier.number(fraction))"
        }
    }
}
