import Foundation

/// Shrinks an image so its longer side fits `max(size.width, size.height)`
/// points, decoding bytes with libvips shrink-on-load.
///
/// From bytes this is the cheap way to a thumbnail: JPEG, WebP and others are
/// decoded at a fraction of their size, so a 50 MP photo never lands in memory
/// whole. Never enlarges. Animations keep every frame.
public struct DownsamplingImageProcessor: ImageProcessor {
    /// The box in points whose longer side the result's longer side fits.
    public let size: CGSize
    public let identifier: String

    /// Makes the processor for a target size in points.
    public init(size: CGSize) {
        self.size = size
        identifier = "\(ProcessorIdentifier.prefix)downsampling(\(ProcessorIdentifier.size(size)))"
    }

    public func process(item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        guard size.width > 0, size.height > 0 else {
            throw .processorError(reason: .invalidParameter(processor: identifier, message: "size must be positive"))
        }
        switch item {
        case .data(let data):
            var decoding = options.decodingOptions
            decoding.downsampleSize = size
            return try ImageDecoder.decode(data, options: decoding)
        case .image(let image):
            let pixels = Int(max(1, (max(size.width, size.height) * options.scaleFactor).rounded()))
            return try image.mapFrames(identifier) { (frame) throws(HalcyonError) in
                try frame.thumbnailed(fitting: pixels)
            }.withScale(options.scaleFactor)
        }
    }
}
