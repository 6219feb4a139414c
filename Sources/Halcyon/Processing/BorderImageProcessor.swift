import Foundation

/// Draws a ``Border`` along the inside of the image's edges.
///
/// The stroke covers the outer `lineWidth` points of the image, rounded by the
/// border's radius; the image keeps its size. Animations keep every frame.
public struct BorderImageProcessor: ImageProcessor {
    /// The border drawn.
    public let border: Border
    public let identifier: String

    /// Makes the processor.
    public init(border: Border) {
        self.border = border
        identifier = "\(ProcessorIdentifier.prefix)border(\(ProcessorIdentifier.number(border.lineWidth)),"
            + "\(border.color.hexString),\(border.radius.identifierText),\(border.roundingCorners.identifierText))"
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        guard border.lineWidth >= 0 else {
            throw .processorError(reason: .invalidParameter(processor: identifier, message: "line width must not be negative"))
        }
        let image = try decodedImage(item, options: options)
        let line = Double(border.lineWidth * image.scale)
        guard line > 0 else { return image }
        let outerRadius = border.radius.pixels(width: image.width, height: image.height, scale: image.scale)
        let outer = RoundedRectMask.coverage(width: image.width, height: image.height, inset: 0, radius: outerRadius, corners: border.roundingCorners)
        let inner = RoundedRectMask.coverage(width: image.width, height: image.height, inset: line, radius: max(0, outerRadius - line), corners: border.roundingCorners)
        let colorAlpha = border.color.alpha
        let ring = zip(outer, inner).map { UInt8((Double($0 > $1 ? $0 - $1 : 0) * colorAlpha).rounded()) }
        let ringImage = try VipsImageRef.fromPixels(ring, width: image.width, height: image.height, bands: 1)
        let color = border.color.bandValues
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            let rgba = try frame.withAlpha()
            let stroke = try rgba.constant(Array(color.prefix(3))).joined(with: ringImage)
            return try stroke.composited(over: rgba, mode: .normal)
        }
    }
}
