import Foundation

/// Rounds the corners of an image, leaving them transparent or filled with a colour.
///
/// With `targetSize`, the image is first resized to exactly that size in
/// points (as Kingfisher draws it into that rectangle). Without a background
/// colour the result has alpha. Animations keep every frame.
public struct RoundCornerImageProcessor: ImageProcessor {
    /// The radius of the rounded corners.
    public let radius: CornerRadius
    /// The size in points to resize to first, if any.
    public let targetSize: CGSize?
    /// Which corners are rounded.
    public let roundingCorners: RectCorner
    /// The colour the cut-away corners get; nil leaves them transparent.
    public let backgroundColor: Color?
    public let identifier: String

    /// Makes the processor; all corners and transparent corners by default.
    public init(radius: CornerRadius, targetSize: CGSize? = nil, roundingCorners: RectCorner = .all, backgroundColor: Color? = nil) {
        self.radius = radius
        self.targetSize = targetSize
        self.roundingCorners = roundingCorners
        self.backgroundColor = backgroundColor
        var text = "\(ProcessorIdentifier.prefix)roundCorner(\(radius.identifierText)"
        if let targetSize { text += ",\(ProcessorIdentifier.size(targetSize))" }
        text += ",\(roundingCorners.identifierText)"
        if let backgroundColor { text += ",\(backgroundColor.hexString)" }
        identifier = text + ")"
    }

    /// Makes the processor with a radius in points (Kingfisher's shorthand).
    public init(cornerRadius: CGFloat, targetSize: CGSize? = nil, roundingCorners: RectCorner = .all, backgroundColor: Color? = nil) {
        self.init(radius: .point(cornerRadius), targetSize: targetSize, roundingCorners: roundingCorners, backgroundColor: backgroundColor)
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        var image = try decodedImage(item, options: options)
        if let targetSize {
            image = try ResizingImageProcessor(referenceSize: targetSize, mode: .none).process(item: .image(image), options: options)
        }
        let pixelRadius = radius.pixels(width: image.width, height: image.height, scale: image.scale)
        let mask = try RoundedRectMask.image(width: image.width, height: image.height, inset: 0, radius: pixelRadius, corners: roundingCorners)
        let background = backgroundColor
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            let rgba = try frame.withAlpha()
            let rgb = try rgba.bands(from: 0, count: 3)
            let alpha = try rgba.bands(from: 3, count: 1)
                .multiplied(by: mask)
                .linear(multiply: [1.0 / 255], add: [0])
            let clipped = try rgb.joined(with: alpha)
            guard let background else { return clipped }
            let fill = try rgba.constant(background.bandValues)
            return try clipped.composited(over: fill, mode: .normal)
        }
    }
}
