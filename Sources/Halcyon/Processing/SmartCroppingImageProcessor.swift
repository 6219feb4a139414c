import Foundation

/// Crops to a size in points where libvips' attention model finds the most interest (edges, skin tones,
/// saturated colour): imgproxy's and thumbor's smart crop.
///
/// A size larger than the image is clipped to it. Animations are cropped at
/// the centre, so every frame keeps the same window.
public struct SmartCroppingImageProcessor: ImageProcessor {
    /// The size in points to crop to.
    public let size: CGSize
    /// `halcyon.smartcrop(w×h)`.
    public let identifier: String

    /// Makes the processor.
    public init(size: CGSize) {
        self.size = size
        identifier = "\(ProcessorIdentifier.prefix)smartcrop(\(ProcessorIdentifier.size(size)))"
    }

    /// The cropped image; throws `.invalidParameter` for a size that is not positive.
    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        guard size.width > 0, size.height > 0 else {
            throw .processorError(reason: .invalidParameter(processor: identifier, message: "size must be positive"))
        }
        let image = try decodedImage(item, options: options)
        let width = min(image.width, max(1, Int((size.width * image.scale).rounded())))
        let height = min(image.height, max(1, Int((size.height * image.scale).rounded())))
        if width == image.width && height == image.height { return image }
        guard !image.isAnimated else { return try CroppingImageProcessor(size: size).process(item: .image(image), options: options) }
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            try frame.smartCropped(width: width, height: height)
        }
    }
}
