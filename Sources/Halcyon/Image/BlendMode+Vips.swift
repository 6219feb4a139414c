import CHalcyonVips

extension BlendMode {
    /// The libvips blend mode of this mode.
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
