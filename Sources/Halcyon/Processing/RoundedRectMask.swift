import Foundation

/// Anti-aliased coverage masks of rounded rectangles, as one-band 8-bit pixels.
///
/// Used by the round-corner and border processors: a mask value is how much of
/// a pixel the shape covers, 0 to 255.
enum RoundedRectMask {
    /// Coverage of the rectangle `inset` pixels in from every edge of a
    /// `width` × `height` image, with `radius` on the chosen corners.
    static func coverage(width: Int, height: Int, inset: Double, radius: Double, corners: RectCorner) -> [UInt8] {
        let left = inset
        let top = inset
        let right = Double(width) - inset
        let bottom = Double(height) - inset
        let maxRadius = max(0, min(right - left, bottom - top) / 2)
        let r = min(max(0, radius), maxRadius)
        var mask = [UInt8](repeating: 0, count: width * height)
        guard right > left, bottom > top else { return mask }
        mask.withUnsafeMutableBufferPointer { pixels in
            for y in 0..<height {
                let cy = Double(y) + 0.5
                let row = y * width
                for x in 0..<width {
                    let cx = Double(x) + 0.5
                    let value = cover(cx, cy, left: left, top: top, right: right, bottom: bottom, radius: r, corners: corners)
                    pixels[row + x] = UInt8((value * 255).rounded())
                }
            }
        }
        return mask
    }

    /// Coverage in 0...1 of the pixel centred at (x, y).
    private static func cover(
        _ x: Double, _ y: Double,
        left: Double, top: Double, right: Double, bottom: Double,
        radius: Double, corners: RectCorner
    ) -> Double {
        if radius > 0 {
            let inLeft = x < left + radius
            let inRight = x > right - radius
            let inTop = y < top + radius
            let inBottom = y > bottom - radius
            var center: (Double, Double)?
            if inLeft && inTop && corners.contains(.topLeft) { center = (left + radius, top + radius) }
            if inRight && inTop && corners.contains(.topRight) { center = (right - radius, top + radius) }
            if inLeft && inBottom && corners.contains(.bottomLeft) { center = (left + radius, bottom - radius) }
            if inRight && inBottom && corners.contains(.bottomRight) { center = (right - radius, bottom - radius) }
            if let (centerX, centerY) = center {
                let distance = ((x - centerX) * (x - centerX) + (y - centerY) * (y - centerY)).squareRoot()
                return clamp(radius - distance + 0.5)
            }
        }
        return clamp(min(x - left, right - x, y - top, bottom - y) + 0.5)
    }

    private static func clamp(_ value: Double) -> Double { min(1, max(0, value)) }

    /// The mask as a one-band libvips image.
    static func image(width: Int, height: Int, inset: Double, radius: Double, corners: RectCorner) throws(HalcyonError) -> VipsImageRef {
        let mask = coverage(width: width, height: height, inset: inset, radius: radius, corners: corners)
        return try VipsImageRef.fromPixels(mask, width: width, height: height, bands: 1)
    }
}
