import Foundation

/// Adds space around an image, filled with a colour (imgproxy's `pd` with `bg`), every frame alike.
public struct PaddingImageProcessor: ImageProcessor {
    /// Pixels added above, right, below and left.
    public let top: Int, right: Int, bottom: Int, left: Int
    /// The fill; a translucent one gives the result an alpha channel.
    public let color: Color
    /// The most pixels a side of the result may have (checked before any pixel is made).
    public let maxSide: Int
    /// `halcyon.padding(t,r,b,l,#rrggbbaa)`.
    public let identifier: String

    /// Pads by the given amounts (each ≥ 0) with `color`; results over `maxSide` per side are refused.
    public init(top: Int, right: Int, bottom: Int, left: Int, color: Color, maxSide: Int = 16_384) {
        (self.top, self.right, self.bottom, self.left) = (top, right, bottom, left)
        self.color = color
        self.maxSide = maxSide
        identifier = "\(ProcessorIdentifier.prefix)padding(\(top),\(right),\(bottom),\(left),\(color.hexString))"
    }

    /// The padded image; throws `.invalidParameter` for negative padding and `.resultTooLarge` past `maxSide`.
    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        guard min(top, right, bottom, left) >= 0 else {
            throw .processorError(reason: .invalidParameter(processor: identifier, message: "padding must not be negative"))
        }
        let image = try decodedImage(item, options: options)
        let width = image.width + left + right, height = image.height + top + bottom
        guard width <= maxSide, height <= maxSide else {
            throw .processorError(reason: .resultTooLarge(width: width, height: height, frames: image.frameCount, limit: maxSide))
        }
        guard width != image.width || height != image.height else { return image }
        let opaque = color.alpha >= 1
        let fill = [color.red, color.green, color.blue].map { $0 * 255 } + (opaque && !image.hasAlpha ? [] : [color.alpha * 255])
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            let base = opaque && !image.hasAlpha ? frame : try frame.withAlpha()
            return try base.embedded(x: left, y: top, width: width, height: height, background: fill)
        }
    }
}
