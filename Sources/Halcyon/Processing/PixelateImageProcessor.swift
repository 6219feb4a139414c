import Foundation

/// Pixelates an image into square blocks of one colour each (imgproxy's `pix`), every frame alike.
public struct PixelateImageProcessor: ImageProcessor {
    /// The side of a block in pixels; 1 or less gives the image back.
    public let size: Int
    /// `halcyon.pixelate(size)`.
    public let identifier: String

    /// Pixelates with `size` × `size` blocks.
    public init(size: Int) {
        self.size = size
        identifier = "\(ProcessorIdentifier.prefix)pixelate(\(size))"
    }

    /// The pixelated image, the same size; blocks larger than the image are clamped to it.
    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let image = try decodedImage(item, options: options)
        let block = min(size, image.width, image.height)
        guard block > 1 else { return image }
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in try frame.pixelated(size: block) }
    }
}
