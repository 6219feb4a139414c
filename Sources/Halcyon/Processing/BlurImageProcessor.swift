import Foundation

/// Blurs an image with a Gaussian whose standard deviation is `blurRadius` points.
///
/// A radius of 0 leaves the image as it is. Animations keep every frame.
public struct BlurImageProcessor: ImageProcessor {
    /// The Gaussian's standard deviation in points.
    public let blurRadius: CGFloat
    public let identifier: String

    /// Makes the processor.
    public init(blurRadius: CGFloat) {
        self.blurRadius = blurRadius
        identifier = "\(ProcessorIdentifier.prefix)blur(\(ProcessorIdentifier.number(blurRadius)))"
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        guard blurRadius >= 0, blurRadius.isFinite else {
            throw .processorError(reason: .invalidParameter(processor: identifier, message: "blur radius must be finite and not negative"))
        }
        let image = try decodedImage(item, options: options)
        let sigma = Double(blurRadius * image.scale)
        guard sigma > 0.01 else { return image }
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            try frame.gaussianBlurred(sigma: sigma)
        }
    }
}
