import Foundation

/// Lays a colour over an image: each colour channel becomes
/// `image × fraction + overlay × (1 − fraction)`; alpha is kept.
///
/// `fraction` is how much of the image shows through (Kingfisher's meaning):
/// 1 leaves the image as it is, 0 paints it the overlay colour. The overlay
/// colour's own alpha is ignored. Animations keep every frame.
public struct OverlayImageProcessor: ImageProcessor {
    /// The colour laid over the image.
    public let overlay: Color
    /// How much of the image shows through, 0...1.
    public let fraction: CGFloat
    public let identifier: String

    /// Makes the processor; `fraction` defaults to 0.5.
    public init(overlay: Color, fraction: CGFloat = 0.5) {
        self.overlay = overlay
        self.fraction = fraction
        identifier = "\(ProcessorIdentifier.prefix)overlay(\(overlay.hexString),\(ProcessorIdentifier.number(fraction)))"
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let keep = Double(min(1, max(0, fraction)))
        let color = overlay.bandValues
        return try processFrames(item, options: options) { (frame, _) throws(HalcyonError) in
            var multipliers = [keep, keep, keep]
            var addends = color.prefix(3).map { $0 * (1 - keep) }
            if frame.bands == 4 {
                multipliers.append(1)
                addends.append(0)
            }
            return try frame.linear(multiply: multipliers, add: addends)
        }
    }
}
