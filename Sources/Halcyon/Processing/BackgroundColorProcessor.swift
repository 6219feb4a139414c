import Foundation

/// Puts an image with transparency on an opaque colour (imgproxy's `bg`), every frame alike.
public struct BackgroundColorProcessor: ImageProcessor {
    /// The colour behind the image (its alpha is ignored).
    public let color: Color
    /// `halcyon.background(#rrggbb)`.
    public let identifier: String

    /// Flattens onto `color`.
    public init(color: Color) {
        self.color = color
        identifier = "\(ProcessorIdentifier.prefix)background(\(String(color.hexString.prefix(7))))"
    }

    /// The flattened image; an image without alpha comes back as it is.
    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let image = try decodedImage(item, options: options)
        guard image.hasAlpha else { return image }
        let fill = [color.red, color.green, color.blue].map { $0 * 255 }
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in try frame.flattened(background: fill) }
    }
}
