import CHalcyonVips
import Foundation

// MARK: - Turns, mirrors, sharpening, pixelation and borders

extension VipsImageRef {
    /// Turned clockwise by `quarterTurns` × 90° (any integer; taken modulo 4).
    func rotated(quarterTurns: Int) throws(HalcyonError) -> VipsImageRef {
        try apply("rot") { hc_rot($0, Int32(quarterTurns % 4), $1) }
    }

    /// Mirrored left-right, or top-bottom with `vertical`.
    func flipped(vertical: Bool) throws(HalcyonError) -> VipsImageRef {
        try apply("flip") { hc_flip($0, vertical ? 1 : 0, $1) }
    }

    /// Sharpened by libvips' unsharp mask with `sigma`.
    func sharpened(sigma: Double) throws(HalcyonError) -> VipsImageRef {
        try apply("sharpen") { hc_sharpen($0, sigma, $1) }
    }

    /// Blocks of `size` × `size` pixels, each its block's average; the size is unchanged.
    func pixelated(size: Int) throws(HalcyonError) -> VipsImageRef {
        try apply("pixelate") { hc_pixelate($0, Int32(size), $1) }
    }

    /// Placed at (`x`, `y`) on a `width` × `height` canvas of `background` (one value per band).
    func embedded(x: Int, y: Int, width: Int, height: Int, background: [Double]) throws(HalcyonError) -> VipsImageRef {
        try apply("embed") { input, output in
            background.withUnsafeBufferPointer {
                hc_embed(input, Int32(x), Int32(y), Int32(width), Int32(height), $0.baseAddress, Int32(background.count), output)
            }
        }
    }
}
