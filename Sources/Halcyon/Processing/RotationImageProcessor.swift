import Foundation

/// Turns an image clockwise by a multiple of 90° (imgproxy's `rot`), every frame alike.
public struct RotationImageProcessor: ImageProcessor {
    /// Quarter turns clockwise, 0...3.
    public let quarterTurns: Int
    /// `halcyon.rotate(N)`, N in degrees.
    public let identifier: String

    /// Turns by `degrees`, which must be a multiple of 90 (negative turns counter-clockwise).
    public init(degrees: Int) {
        quarterTurns = ((degrees / 90) % 4 + 4) % 4
        identifier = "\(ProcessorIdentifier.prefix)rotate(\(quarterTurns * 90))"
    }

    /// The turned image; 0° gives the image back.
    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let image = try decodedImage(item, options: options)
        guard quarterTurns != 0 else { return image }
        return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in try frame.rotated(quarterTurns: quarterTurns) }
    }
}
