import Foundation

/// Draws a watermark image over every frame (imgproxy's `watermark`).
///
/// The watermark is placed at `anchor` (unit point: 0,0 top left, 1,1 bottom
/// right), moved inward from that edge by `offset` pixels (from the centre
/// for 0.5), or tiled over the whole image when `anchor` is nil. With
/// `scale` > 0 it is first resized to that fraction of the image's width
/// (at least one pixel). `opacity` (0...1) multiplies its alpha.
public struct WatermarkImageProcessor: ImageProcessor {
    /// The image drawn on top.
    public let watermark: Image
    /// Multiplies the watermark's alpha, 0...1.
    public let opacity: CGFloat
    /// Where it goes; nil tiles it.
    public let anchor: CGPoint?
    /// Pixels inward from the anchored edge (x, y).
    public let offset: CGPoint
    /// Its width as a fraction of the image's; 0 keeps its own size.
    public let scale: CGFloat
    /// `halcyon.watermark(name,opacity,x,y|tile,dx,dy,scale)`.
    public let identifier: String

    /// Makes the processor; `name` stands for the watermark in the identifier (use one per distinct image).
    public init(watermark: Image, name: String, opacity: CGFloat = 1, anchor: CGPoint? = CGPoint(x: 0.5, y: 0.5),
                offset: CGPoint = .zero, scale: CGFloat = 0) {
        self.watermark = watermark
        self.opacity = min(1, max(0, opacity))
        self.anchor = anchor
        self.offset = offset
        self.scale = max(0, scale)
        let place = anchor.map { "\(ProcessorIdentifier.number($0.x)),\(ProcessorIdentifier.number($0.y))" } ?? "tile"
        identifier = "\(ProcessorIdentifier.prefix)watermark(\(name),\(ProcessorIdentifier.number(self.opacity)),\(place),"
            + "\(ProcessorIdentifier.number(offset.x)),\(ProcessorIdentifier.number(offset.y)),\(ProcessorIdentifier.number(self.scale)))"
    }

    /// The watermarked image; a watermark larger than the image is cut at the image's edges.
    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let image = try decodedImage(item, options: options)
        var mark = try watermark.frameImage(0).srgb8().withAlpha()
        if scale > 0 {
            let width = max(1, Int((CGFloat(image.width) * scale).rounded()))
            let factor = Double(width) / Double(mark.width)
            mark = try mark.resized(horizontal: factor, vertical: factor)
        }
        let position = anchor.map { Self.origin(anchor: $0, offset: offset, outer: (image.width, image.height), inner: (mark.width, mark.height)) }
        let overlay = mark
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            try frame.watermarked(with: overlay, opacity: Double(opacity), x: position?.x ?? 0, y: position?.y ?? 0, tiled: position == nil)
        }
    }

    /// The top-left corner of `inner` in `outer` for a unit anchor, moved inward by `offset` (added at the centre).
    static func origin(anchor: CGPoint, offset: CGPoint, outer: (Int, Int), inner: (Int, Int)) -> (x: Int, y: Int) {
        func place(_ unit: CGFloat, _ shift: CGFloat, _ free: Int) -> Int {
            let base = CGFloat(free) * min(1, max(0, unit))
            let moved = unit > 0.5 ? base - shift : base + shift
            return Int(moved.rounded())
        }
        return (place(anchor.x, offset.x, outer.0 - inner.0), place(anchor.y, offset.y, outer.1 - inner.1))
    }
}
