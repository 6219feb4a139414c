import Foundation

/// Cuts away a border of one colour (imgproxy's `trim`), every frame by the first frame's box.
///
/// The border colour is `color`, or the top-left pixel's when nil. A pixel
/// belongs to the border when it differs from that colour by at most
/// `threshold` (0...255 per band). `equalHorizontal`/`equalVertical` cut the
/// same amount from left and right / top and bottom (the smaller of the two).
/// An image that is all border is given back unchanged.
public struct TrimmingImageProcessor: ImageProcessor {
    /// How far a pixel may differ from the border colour and still be cut.
    public let threshold: Double
    /// The border colour; nil takes the top-left pixel's.
    public let color: Color?
    /// Cut left and right alike.
    public let equalHorizontal: Bool
    /// Cut top and bottom alike.
    public let equalVertical: Bool
    /// `halcyon.trim(threshold,colour|auto,h,v)`.
    public let identifier: String

    /// Trims with the given threshold and colour.
    public init(threshold: Double = 10, color: Color? = nil, equalHorizontal: Bool = false, equalVertical: Bool = false) {
        self.threshold = threshold
        self.color = color
        self.equalHorizontal = equalHorizontal
        self.equalVertical = equalVertical
        identifier = "\(ProcessorIdentifier.prefix)trim(\(ProcessorIdentifier.number(CGFloat(threshold))),"
            + "\(color?.hexString ?? "auto"),\(equalHorizontal ? 1 : 0),\(equalVertical ? 1 : 0))"
    }

    /// The trimmed image; throws `processingFailed` when libvips cannot search the image.
    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let image = try decodedImage(item, options: options)
        let first = try image.frameImage(0)
        let background = color.map { [$0.red, $0.green, $0.blue].map { $0 * 255 } } ?? []
        guard var box = try first.trimBox(threshold: threshold, background: background) else { return image }
        if equalHorizontal {
            let side = min(box.left, image.width - box.left - box.width)
            box.left = side
            box.width = image.width - 2 * side
        }
        if equalVertical {
            let side = min(box.top, image.height - box.top - box.height)
            box.top = side
            box.height = image.height - 2 * side
        }
        if box.width == image.width && box.height == image.height { return image }
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            try frame.extracted(left: box.left, top: box.top, width: box.width, height: box.height)
        }
    }
}
