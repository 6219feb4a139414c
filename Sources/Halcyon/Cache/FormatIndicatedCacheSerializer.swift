import Foundation

/// A serializer that always stores one format, whatever the image came from.
///
/// Use `.png` to keep alpha from processors such as round corners when the
/// source was a JPEG.
public struct FormatIndicatedCacheSerializer: CacheSerializer {
    /// Stores PNG.
    public static let png = FormatIndicatedCacheSerializer(encoding: .png())
    /// Stores JPEG at quality 90.
    public static let jpeg = FormatIndicatedCacheSerializer(encoding: .jpeg())
    /// Stores GIF, animations included.
    public static let gif = FormatIndicatedCacheSerializer(encoding: .gif)
    /// Stores WebP at quality 80, animations included.
    public static let webp = FormatIndicatedCacheSerializer(encoding: .webp())

    /// Stores JPEG at a compression quality in 0...1.
    public static func jpeg(compressionQuality: CGFloat) -> FormatIndicatedCacheSerializer {
        FormatIndicatedCacheSerializer(encoding: .jpeg(quality: Int((compressionQuality * 100).rounded())))
    }

    /// The encoding used for every image.
    public let encoding: ImageEncodingFormat

    /// `format-indicated`, with the encoding.
    public var pipelineIdentity: String { "format-indicated(\(encoding))" }

    /// Makes a serializer for one encoding.
    public init(encoding: ImageEncodingFormat) {
        self.encoding = encoding
    }

    public func data(with image: Image, original: Data?) throws(HalcyonError) -> Data {
        try image.encoded(as: encoding)
    }
}
