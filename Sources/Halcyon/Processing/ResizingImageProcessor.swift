import Foundation

/// Resizes an image to a reference size in points, by a ``ContentMode``.
///
/// Enlarges as well as shrinks (use ``DownsamplingImageProcessor`` for
/// thumbnails from bytes). Animations keep every frame.
public struct ResizingImageProcessor: ImageProcessor {
    /// The size in points to resize to, or to fit or fill.
    public let referenceSize: CGSize
    /// How the aspect ratio is treated.
    public let targetContentMode: ContentMode
    public let identifier: String

    /// Makes the processor; `mode` defaults to stretching to the exact size.
    public init(referenceSize: CGSize, mode: ContentMode = .none) {
        self.referenceSize = referenceSize
        targetContentMode = mode
        identifier = "\(ProcessorIdentifier.prefix)resizing(\(ProcessorIdentifier.size(referenceSize)),\(mode.rawValue))"
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        guard referenceSize.width > 0, referenceSize.height > 0 else {
            throw .processorError(reason: .invalidParameter(processor: identifier, message: "reference size must be positive"))
        }
        let image = try decodedImage(item, options: options)
        let target = ResizingImageProcessor.pixelSize(
            of: CGSize(width: image.width, height: image.height),
            fitting: CGSize(width: referenceSize.width * image.scale, height: referenceSize.height * image.scale),
            mode: targetContentMode)
        if Int(target.width) == image.width && Int(target.height) == image.height { return image }
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            try frame.resized(horizontal: target.width / CGFloat(frame.width), vertical: target.height / CGFloat(frame.height))
        }
    }

    /// The whole-pixel size an image of `source` pixels gets for `reference` and `mode`.
    static func pixelSize(of source: CGSize, fitting reference: CGSize, mode: ContentMode) -> CGSize {
        let widthRatio = reference.width / source.width
        let heightRatio = reference.height / source.height
        let ratio: CGFloat
        switch mode {
        case .none:
            return CGSize(width: max(1, reference.width.rounded()), height: max(1, reference.height.rounded()))
        case .aspectFit: ratio = min(widthRatio, heightRatio)
        case .aspectFill: ratio = max(widthRatio, heightRatio)
        }
        return CGSize(width: max(1, (source.width * ratio).rounded()), height: max(1, (source.height * ratio).rounded()))
    }
}
