import Foundation

/// A border drawn along the inside of an image's edges.
public struct Border: Sendable, Hashable {
    /// The stroke colour.
    public var color: Color
    /// The stroke width in points.
    public var lineWidth: CGFloat
    /// The radius of the border's corners.
    public var radius: CornerRadius
    /// Which corners are rounded.
    public var roundingCorners: RectCorner

    /// Makes a border; black, 4 points wide and square by default.
    public init(color: Color = .black, lineWidth: CGFloat = 4, radius: CornerRadius = .point(0), roundingCorners: RectCorner = .all) {
        self.color = color
        self.lineWidth = lineWidth
        self.radius = radius
        self.roundingCorners = roundingCorners
    }
}
