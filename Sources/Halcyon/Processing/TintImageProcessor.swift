import Foundation

/// Composites a colour, with its alpha, over the whole image (source-over).
///
/// Each colour channel becomes `image × (1 − a) + tint × a` and alpha becomes
/// `alpha × (1 − a) + a`, where `a` is the tint's alpha: an opaque tint paints
/// the image, a half-transparent one mixes it. Animations keep every frame.
public struct TintImageProcessor: ImageProcessor {
    /// The colour laid over the image, with its alpha.
    public let tint: Color
    public let identifier: String

    /// Makes the processor.
    public init(tint: Color) {
        self.tint = tint
        identifier = "\(ProcessorIdentifier.prefix)tint(\(tint.hexString))"
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let amount = tint.alpha
        let color = tint.bandValues
        return try processFrames(item, options: options) { (frame, _) throws(HalcyonError) in
            var multipliers = [Double](repeating: 1 - amount, count: 3)
            var addends = color.prefix(3).map { $0 * amount }
            if frame.bands == 4 {
                multipliers.append(1 - amount)
                addends.append(255 * amount)
            }
            return try frame.linear(multiply: multipliers, add: addends)
        }
    }
}
