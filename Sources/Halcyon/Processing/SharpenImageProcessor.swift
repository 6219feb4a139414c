import Foundation

/// Sharpens an image with libvips' unsharp mask (imgproxy's `sh`), every frame alike.
public struct SharpenImageProcessor: ImageProcessor {
    /// The mask's sigma in points (scaled by the image's scale); 0 gives the image back.
    public let sigma: CGFloat
    /// `halcyon.sharpen(sigma)`.
    public let identifier: String

    /// Sharpens with `sigma`.
    public init(sigma: CGFloat) {
        self.sigma = sigma
        identifier = "\(ProcessorIdentifier.prefix)sharpen(\(ProcessorIdentifier.number(sigma)))"
    }

    /// The sharpened image; throws `.invalidParameter` for a negative or non-finite sigma.
    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        guard sigma >= 0, sigma.isFinite else {
            throw .processorError(reason: .invalidParameter(processor: identifier, message: "sigma must be finite and not negative"))
        }
        let image = try decodedImage(item, options: options)
        let scaled = Double(sigma * image.scale)
        guard scaled > 0.01 else { return image }
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in try frame.sharpened(sigma: scaled) }
    }
}
