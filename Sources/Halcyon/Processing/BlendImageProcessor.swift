import Foundation

/// Draws the image with a blend mode and an alpha over a background colour.
///
/// Without a background colour the image is blended over transparency, so
/// only `alpha` changes it. Animations keep every frame.
public struct BlendImageProcessor: ImageProcessor {
    /// How image and background combine.
    public let blendMode: BlendMode
    /// The image's opacity, 0...1.
    public let alpha: CGFloat
    /// The colour under the image, if any.
    public let backgroundColor: Color?
    public let identifier: String

    /// Makes the processor; alpha 1 and no background by default.
    public init(blendMode: BlendMode, alpha: CGFloat = 1, backgroundColor: Color? = nil) {
        self.blendMode = blendMode
        self.alpha = alpha
        self.backgroundColor = backgroundColor
        identifier = "\(ProcessorIdentifier.prefix)blend(\(blendMode.rawValue),\(ProcessorIdentifier.number(alpha)),"
            + "\(backgroundColor?.hexString ?? "none"))"
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let opacity = Double(min(1, max(0, alpha)))
        let background = (backgroundColor ?? .clear).bandValues
        let mode = blendMode
        return try processFrames(item, options: options) { (frame, _) throws(HalcyonError) in
            let foreground = try frame.withAlpha().linear(multiply: [1, 1, 1, opacity], add: [0, 0, 0, 0])
            let base = try foreground.constant(background)
            return try foreground.composited(over: base, mode: mode)
        }
    }
}

/// The blend modes libvips can composite with, named as in Core Graphics.
public enum BlendMode: String, Sendable, Hashable, CaseIterable {
    case normal, multiply, screen, overlay, darken, lighten, colorDodge, colorBurn
    case softLight, hardLight, difference, exclusion
    case clear, copy, sourceIn, sourceOut, sourceAtop
    case destinationOver, destinationIn, destinationOut, destinationAtop, xor, plusLighter
}
