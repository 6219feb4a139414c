import Foundation

/// Mirrors an image left-right and/or top-bottom (imgproxy's `fl`), every frame alike.
public struct FlipImageProcessor: ImageProcessor {
    /// Mirror left-right.
    public let horizontal: Bool
    /// Mirror top-bottom.
    public let vertical: Bool
    /// `halcyon.flip(h,v)` with 1 or 0 for each.
    public let identifier: String

    /// Mirrors as asked; neither gives the image back.
    public init(horizontal: Bool, vertical: Bool) {
        self.horizontal = horizontal
        self.vertical = vertical
        identifier = "\(ProcessorIdentifier.prefix)flip(\(horizontal ? 1 : 0),\(vertical ? 1 : 0))"
    }

    /// The mirrored image.
    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let image = try decodedImage(item, options: options)
        guard horizontal || vertical else { return image }
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
            var result = frame
            if horizontal { result = try result.flipped(vertical: false) }
            if vertical { result = try result.flipped(vertical: true) }
            return result
        }
    }
}
