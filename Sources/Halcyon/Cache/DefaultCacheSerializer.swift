import Foundation

/// The serializer used unless another is given.
///
/// Stores the original bytes when the image is exactly what they decode to
/// (or always, with `preferCacheOriginalData`); otherwise re-encodes, as
/// Kingfisher does, in the format of the original bytes (the image's own
/// original format when there are none) at `compressionQuality` through
/// ``OutputEncodingPolicy/pngFallback``: formats Halcyon cannot write become
/// PNG (GIF for an animation). Reading decodes with the options given.
public struct DefaultCacheSerializer: CacheSerializer {
    /// The shared instance with default settings.
    public static let `default` = DefaultCacheSerializer()

    /// Quality for lossy re-encoding, 0...1. Default 1.
    public var compressionQuality: CGFloat
    /// Store the original bytes whenever they are given, even for a processed image.
    ///
    /// As in Kingfisher, ``ImageCache`` then keeps the source's bytes under a
    /// processed key (`key@processorIdentifier`) too, and a disk hit there runs
    /// the processor again on the decoded image (the processed image is what goes
    /// into memory). A processed image stored without its original bytes is kept
    /// in memory only, so a disk hit is never processed twice.
    public var preferCacheOriginalData: Bool

    /// Makes a serializer; quality 1 and re-encoding of processed images by default.
    public init(compressionQuality: CGFloat = 1, preferCacheOriginalData: Bool = false) {
        self.compressionQuality = compressionQuality
        self.preferCacheOriginalData = preferCacheOriginalData
    }

    /// Whether the original bytes are stored whenever given (``preferCacheOriginalData``).
    public var originalDataUsed: Bool { preferCacheOriginalData }

    /// `default`, with the quality and the original-data choice.
    public var pipelineIdentity: String {
        "default(q:\(compressionQuality),original:\(preferCacheOriginalData))"
    }

    /// The bytes to store: the original when it is what the image decodes to, else a re-encoding.
    ///
    /// The format is the one `original` is in (the image's original one when
    /// `original` is nil or in no known format), set up by ``OutputEncodingPolicy/pngFallback``;
    /// the quality is ``compressionQuality`` × 100.
    public func data(with image: Image, original: Data?) throws(HalcyonError) -> Data {
        if let original, !original.isEmpty {
            if preferCacheOriginalData || image.sourceFingerprint?.identifies(original) == true {
                return original
            }
        }
        // Kingfisher's rule: the format of the original bytes when given, so a PNG-decoded image stored with
        // JPEG bytes as its original is stored as JPEG; the image's own format when they are none or unknown.
        var format = original.map { ImageFormat(sniffing: $0) } ?? .unknown
        if format == .unknown { format = image.originalFormat }
        let quality = Int((Double(compressionQuality) * 100).rounded())
        let encoding = OutputEncodingPolicy.pngFallback.encoding(
            for: format, quality: quality, hasAlpha: image.hasAlpha, isAnimated: image.isAnimated)
        return try image.encoded(as: encoding)
    }
}
