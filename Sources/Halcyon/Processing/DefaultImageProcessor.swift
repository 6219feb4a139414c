import Foundation

/// Decodes bytes into an image and leaves images as they are.
///
/// Identifier `""`, so its results are cached under the plain key. Bytes are
/// decoded with the options' scale factor, frame and limit settings; an image
/// passed in gets the options' scale factor.
public struct DefaultImageProcessor: ImageProcessor {
    /// The shared instance.
    public static let `default` = DefaultImageProcessor()

    public let identifier = ""

    public init() {}

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        switch item {
        case .data(let data):
            return try ImageDecoder.decode(data, options: options.decodingOptions)
        case .image(let image):
            return image.scale == options.scaleFactor || options.scaleFactor <= 0 ? image : image.withScale(options.scaleFactor)
        }
    }
}
