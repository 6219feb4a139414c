import Foundation

/// How encoded bytes become an ``Image``.
public struct ImageDecodingOptions: Sendable, Hashable {
    /// Default for ``maxPixelCount``: 50 megapixels.
    public static let defaultMaxPixelCount = 50_000_000
    /// Default for ``maxFrameCount``.
    public static let defaultMaxFrameCount = 1_000

    /// Pixels per point of the result. Default 1.
    public var scaleFactor: CGFloat
    /// Decode only the first frame of an animation. Default false.
    public var onlyFirstFrame: Bool
    /// Decode every frame of an animation now. When false (the default), the
    /// frames of an animation are decoded on first use from the encoded bytes,
    /// which the image keeps; still images are always decoded at once.
    public var preloadAllAnimationData: Bool
    /// When set, the image is shrunk while loading (libvips shrink-on-load) so
    /// its longer side is at most `max(width, height) * scaleFactor` pixels.
    /// Never enlarges. Default nil.
    public var downsampleSize: CGSize?
    /// How ``downsampleSize`` is reached: exactly (the default) or by the
    /// JPEG loader's shrink alone. See ``DownsamplingMode``.
    public var downsamplingMode: DownsamplingMode
    /// Largest width × height (× frames for an animation) accepted; checked on
    /// the header, before any pixel is decoded. Default 50 MP.
    public var maxPixelCount: Int
    /// Most frames an animation may have. Default 1000.
    public var maxFrameCount: Int
    /// How much damage in the data the decode tolerates (libvips' `fail_on`).
    /// Default ``DecodingStrictness/default`` (`.truncated`).
    public var strictness: DecodingStrictness

    /// Makes decoding options; every argument has the documented default.
    public init(
        scaleFactor: CGFloat = 1,
        onlyFirstFrame: Bool = false,
        preloadAllAnimationData: Bool = false,
        downsampleSize: CGSize? = nil,
        downsamplingMode: DownsamplingMode = .exact,
        maxPixelCount: Int = ImageDecodingOptions.defaultMaxPixelCount,
        maxFrameCount: Int = ImageDecodingOptions.defaultMaxFrameCount,
        strictness: DecodingStrictness = .default
    ) {
        self.scaleFactor = scaleFactor
        self.onlyFirstFrame = onlyFirstFrame
        self.preloadAllAnimationData = preloadAllAnimationData
        self.downsampleSize = downsampleSize
        self.downsamplingMode = downsamplingMode
        self.maxPixelCount = maxPixelCount
        self.maxFrameCount = maxFrameCount
        self.strictness = strictness
    }
}
