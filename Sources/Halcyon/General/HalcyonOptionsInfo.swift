import Foundation

/// Options for retrieving, processing and caching an image, in Kingfisher's
/// `KingfisherOptionsInfo` shape: a list of items, later ones overriding earlier.
public typealias HalcyonOptionsInfo = [HalcyonOptionsInfoItem]

/// One option of a ``HalcyonOptionsInfo`` list.
public enum HalcyonOptionsInfoItem: Sendable {
    /// Pixels per point of decoded images. Default 1.
    case scaleFactor(CGFloat)
    /// Decode only the first frame of animations.
    case onlyLoadFirstFrame
    /// Decode every frame of an animation at once instead of on first use.
    case preloadAllAnimationData
    /// The processor applied after decoding. Default ``DefaultImageProcessor``.
    case processor(any ImageProcessor)
    /// How images become cache data and back. Default ``DefaultCacheSerializer``.
    case cacheSerializer(any CacheSerializer)
    /// Applied to the image after processing and caching; never cached.
    case imageModifier(any ImageModifier)
    /// Largest width × height (× frames) to decode. Default 50 MP.
    case maxPixelCount(Int)
    /// Most frames an animation may have. Default 1000.
    case maxFrameCount(Int)
}

/// A ``HalcyonOptionsInfo`` list parsed once into fields.
public struct HalcyonParsedOptionsInfo: Sendable {
    public var scaleFactor: CGFloat = 1
    public var onlyLoadFirstFrame = false
    public var preloadAllAnimationData = false
    public var processor: any ImageProcessor = DefaultImageProcessor.default
    public var cacheSerializer: any CacheSerializer = DefaultCacheSerializer.default
    public var imageModifier: (any ImageModifier)?
    public var maxPixelCount = ImageDecodingOptions.defaultMaxPixelCount
    public var maxFrameCount = ImageDecodingOptions.defaultMaxFrameCount

    /// Parses `info`; for a repeated option the last item wins.
    public init(_ info: HalcyonOptionsInfo?) {
        for item in info ?? [] {
            switch item {
            case .scaleFactor(let value): scaleFactor = value
            case .onlyLoadFirstFrame: onlyLoadFirstFrame = true
            case .preloadAllAnimationData: preloadAllAnimationData = true
            case .processor(let value): processor = value
            case .cacheSerializer(let value): cacheSerializer = value
            case .imageModifier(let value): imageModifier = value
            case .maxPixelCount(let value): maxPixelCount = value
            case .maxFrameCount(let value): maxFrameCount = value
            }
        }
    }

    /// The decoding options these options imply.
    public var decodingOptions: ImageDecodingOptions {
        ImageDecodingOptions(
            scaleFactor: scaleFactor,
            onlyFirstFrame: onlyLoadFirstFrame,
            preloadAllAnimationData: preloadAllAnimationData,
            maxPixelCount: maxPixelCount,
            maxFrameCount: maxFrameCount)
    }
}
