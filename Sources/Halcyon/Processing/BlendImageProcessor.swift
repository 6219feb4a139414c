import CHalcyonVips
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
        let mode = blendMode.vipsMode
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

    var vipsMode: Int32 {
        let mode: VipsBlendMode
        switch self {
        case .normal: mode = VIPS_BLEND_MODE_OVER
        case .multiply: mode = VIPS_BLEND_MODE_MULTIPLY
        case .screen: mode = VIPS_BLEND_MODE_SCREEN
        case .overlay: mode = VIPS_BLEND_MODE_OVERLAY
        case .darken: mode = VIPS_BLEND_MODE_DARKEN
        case .lighten: mode = VIPS_BLEND_MODE_LIGHTEN
        case .colorDodge: mode = VIPS_BLEND_MODE_COLOUR_DODGE
        case .colorBurn: mode = VIPS_BLEND_MODE_COLOUR_BURN
        case .softLight: mode = VIPS_BLEND_MODE_SOFT_LIGHT
        case .hardLight: mode = VIPS_BLEND_MODE_HARD_LIGHT
        case .difference: mode = VIPS_BLEND_MODE_DIFFERENCE
        case .exclusion: mode = VIPS_BLEND_MODE_EXCLUSION
        case .clear: mode = VIPS_BLEND_MODE_CLEAR
        case .copy: mode = VIPS_BLEND_MODE_SOURCE
        case .sourceIn: mode = VIPS_BLEND_MODE_IN
        case .sourceOut: mode = VIPS_BLEND_MODE_OUT
        case .sourceAtop: mode = VIPS_BLEND_MODE_ATOP
        case .destinationOver: mode = VIPS_BLEND_MODE_DEST_OVER
        case .destinationIn: mode = VIPS_BLEND_MODE_DEST_IN
        case .destinationOut: mode = VIPS_BLEND_MODE_DEST_OUT
        case .destinationAtop: mode = VIPS_BLEND_MODE_DEST_ATOP
        case .xor: mode = VIPS_BLEND_MODE_XOR
        case .plusLighter: mode = VIPS_BLEND_MODE_ADD
        }
        return Int32(mode.rawValue)
    }
}
