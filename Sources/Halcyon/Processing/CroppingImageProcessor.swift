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
    /// The crop's top-left corner in points, when made with ``init(rect:)``; the anchor is then unused.
    public let origin: CGPoint?
    public let identifier: String

    /// Makes the processor; the anchor defaults to the centre.
    public init(size: CGSize, anchor: CGPoint = CGPoint(x: 0.5, y: 0.5)) {
        self.size = size
        self.anchor = anchor
        origin = nil
        identifier = "\(ProcessorIdentifier.prefix)cropping(\(ProcessorIdentifier.size(size)),"
            + "\(ProcessorIdentifier.number(anchor.x)),\(ProcessorIdentifier.number(anchor.y)))"
    }

    /// Crops to `rect` (in points; the part outside the image is dropped).
    public init(rect: CGRect) {
        size = rect.size
        anchor = CGPoint(x: 0.5, y: 0.5)
        origin = rect.origin
        identifier = "\(ProcessorIdentifier.prefix)cropping(\(ProcessorIdentifier.size(rect.size)),"
            + "at:\(ProcessorIdentifier.number(rect.minX)),\(ProcessorIdentifier.number(rect.minY)))"
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        guard size.width > 0, size.height > 0 else {
            throw .processorError(reason: .invalidParameter(processor: identifier, message: "size must be positive"))
        }
        let image = try decodedImage(item, options: options)
        if let origin { return try cropped(image, at: origin) }
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

    /// The part of `rect` inside the image; the whole image when that is all of it.
    private func cropped(_ image: Image, at origin: CGPoint) throws(HalcyonError) -> Image {
        let left = min(image.width - 1, max(0, Int((origin.x * image.scale).rounded())))
        let top = min(image.height - 1, max(0, Int((origin.y * image.scale).rounded())))
        let width = min(image.width - left, max(1, Int((size.width * image.scale).rounded())))
        let height = min(image.height - top, max(1, Int((size.height * image.scale).rounded())))
        if width == image.width && height == image.height { return image }
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            try frame.extracted(left: left, top: top, width: width, height: height)
        }
    }
}
