/// A set of corners of a rectangle, for rounding.
public struct RectCorner: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let topLeft = RectCorner(rawValue: 1 << 0)
    public static let topRight = RectCorner(rawValue: 1 << 1)
    public static let bottomLeft = RectCorner(rawValue: 1 << 2)
    public static let bottomRight = RectCorner(rawValue: 1 << 3)
    public static let all: RectCorner = [.topLeft, .topRight, .bottomLeft, .bottomRight]

    /// `tl`, `tr`, `bl`, `br` joined by `+`, or `all`; for identifiers.
    var identifierText: String {
        if self == .all { return "all" }
        let names: [(RectCorner, String)] = [(.topLeft, "tl"), (.topRight, "tr"), (.bottomLeft, "bl"), (.bottomRight, "br")]
        let present = names.filter { contains($0.0) }.map(\.1)
        return present.isEmpty ? "none" : present.joined(separator: "+")
    }
}
