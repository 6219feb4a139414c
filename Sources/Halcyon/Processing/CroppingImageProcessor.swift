import Foundation

/// Crops an image to a size in points around an anchor.
///
/// `anchor` is a unit point: (0, 0) keeps the top left, (0.5, 0.5) the centre,
/// (1, 1) the bottom right. A size larger than the image is clipped to it.
/// Animations keep every frame.
public struct CroppingImageProcessor: ImageProcessor {
    /// The size in points to crop to.
    public let size: CGSize
    /// Where the crop sits, in unit coordinates.
    public let anchor: CGPoint
    public let identifier: String

    /// Makes the processor; the anchor defaults to the centre.
    public init(size: CGSize, anchor: CGPoint = CGPoint(x: 0.5, y: 0.5)) {
        self.size = size
        self.anchor = anchor
        identifier = "\(ProcessorIdentifier.prefix)cropping(\(ProcessorIdentifier.size(size)),"
            + "\(ProcessorIdentifier.number(anchor.x)),\(ProcessorIdentifier.number(anchor.y)))"
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        guard size.width > 0, size.height > 0 else {
            throw .processorError(reason: .invalidParameter(processor: identifier, message: "size must be positive"))
        }
        let image = try decodedImage(item, options: options)
        let width = min(image.width, max(1, Int((size.width * image.scale).rounded())))
        let height = min(image.height, max(1, Int((size.height * image.scale).rounded())))
        if width == image.width && height == image.height { return image }
        let anchorX = min(1, max(0, anchor.x))
        let anchorY = min(1, max(0, anchor.y))
        let left = Int((CGFloat(image.width - width) * anchorX).rounded())
        let top = Int((CGFloat(image.height - height) * anchorY).rounded())
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            try frame.extracted(left: left, top: top, width: width, height: height)
        }
    }
}
