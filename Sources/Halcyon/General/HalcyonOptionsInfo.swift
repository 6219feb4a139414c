import Foundation

/// Options for retrieving, processing and caching an image, in Kingfisher's
/// `KingfisherOptionsInfo` shape: a list of items, later ones overriding earlier.
public typealias HalcyonOptionsInfo = [HalcyonOptionsInfoItem]

/// One option of a ``HalcyonOptionsInfo`` list.
///
/// Kingfisher's 38 items, with the same names and meanings, plus a few of
/// Halcyon's own at the end. Options about drawing on screen are kept for a
/// headless ``ImageSettable`` target; each says what it does without a screen.
public enum HalcyonOptionsInfoItem: Sendable {
    // MARK: Caches and loaders

    /// The cache results are read from and stored to. Default ``ImageCache/default``.
    case targetCache(ImageCache)
    /// The cache the original (unprocessed) image is read from and stored to,
    /// for `cacheOriginalImage` and for processing an original already on disk.
    /// Default: the target cache.
    case originalCache(ImageCache)
    /// The downloader for network sources. Default ``ImageDownloader/default``.
    case downloader(ImageDownloader)

    // MARK: Display (headless targets)

    /// The transition an ``ImageSettable`` target is given with an image loaded
    /// from the network (or always, with `forceTransition`); the target decides how to show it.
    case transition(ImageTransition)
    /// Hand the transition to the target even for images from the cache.
    case forceTransition
    /// Keep the target's current image while loading instead of showing the placeholder.
    case keepCurrentImageWhileLoading
    /// The image a target shows when loading fails (nil clears it).
    case onFailureImage(Image?)
    /// Progressive JPEG previews while the body downloads (see ``ImageProgressive``): each complete
    /// scan is decoded and handed to its `onImageUpdated`, and shown on an ``ImageSettable`` target.
    case progressiveJPEG(ImageProgressive)
    /// A source to use instead while ``HalcyonManager/isLowDataMode`` is set
    /// (Linux has no system low-data signal; the application sets the flag).
    case lowDataMode(Source?)

    // MARK: Loading

    /// Priority of the download among waiting ones, 0...1. Default 0.5.
    case downloadPriority(Float)
    /// Skip the caches and download again.
    case forceRefresh
    /// Use the memory cache, but skip the disk cache and download on a memory miss.
    case fromMemoryCacheOrRefresh
    /// Only read the caches; a miss fails with `cacheError(.imageNotExisting)`.
    case onlyFromCache
    /// Changes each download request; returning nil fails with `requestError(.emptyRequest)`.
    /// It runs before the URL is checked, so it may turn a placeholder URL into an http(s) one.
    case requestModifier(any AsyncImageDownloadRequestModifier)
    /// Decides about each redirect: follow, rewrite or block.
    case redirectHandler(any ImageDownloadRedirectHandler)
    /// Other sources to try, in order, when the main source fails.
    case alternativeSources([Source])
    /// When and how often a failed retrieval is retried.
    case retryStrategy(any RetryStrategy)
    /// Side effects that see each chunk of a download's body as it arrives (the download is not shared then).
    case onDataReceived([any DataReceivingSideEffect])

    // MARK: Decoding and processing

    /// Pixels per point of decoded images. Default 1.
    case scaleFactor(CGFloat)
    /// Decode only the first frame of animations.
    case onlyLoadFirstFrame
    /// Decode every frame of an animation at once instead of on first use.
    case preloadAllAnimationData
    /// Decode fully (every animation frame) off the caller's thread before delivering.
    case backgroundDecode
    /// The processor applied after decoding. Default ``DefaultImageProcessor``.
    case processor(any ImageProcessor)
    /// Where processing runs. Default: Halcyon's processing queue, never the caller's thread.
    case processingQueue(CallbackQueue)
    /// Applied to the image after processing and caching; never cached.
    case imageModifier(any ImageModifier)

    // MARK: Caching

    /// How images become cache data and back. Default ``DefaultCacheSerializer``.
    case cacheSerializer(any CacheSerializer)
    /// Store in memory only, never on disk.
    case cacheMemoryOnly
    /// Call back only after the result is stored in the cache.
    case waitForCache
    /// Also store the original data (processor `""`) in the original cache.
    case cacheOriginalImage
    /// For the prefetcher: also put disk-cached images into memory.
    case alsoPrefetchToMemory
    /// Read the disk cache on the calling thread (completion-handler API).
    case loadDiskFileSynchronously
    /// Check the cache type off the calling thread. Accepted for compatibility: Halcyon's cache
    /// lookups never block the caller unless `loadDiskFileSynchronously` asks them to.
    case asyncCacheTypeCheck
    /// How disk entries are written; `.syncsWrites` fsyncs each file before renaming it in place.
    case diskStoreWriteOptions(DiskStoreWriteOptions)
    /// Expiration of new memory cache entries. Default: the memory storage's.
    case memoryCacheExpiration(StorageExpiration)
    /// How a memory cache hit extends its expiration. Default `.cacheTime`.
    case memoryCacheAccessExtendingExpiration(ExpirationExtending)
    /// Expiration of new disk cache entries. Default: the disk storage's.
    case diskCacheExpiration(StorageExpiration)
    /// How a disk cache hit extends its expiration. Default `.cacheTime`.
    case diskCacheAccessExtendingExpiration(ExpirationExtending)
    /// A file extension forced onto this image's cache file name.
    case forcedCacheFileExtension(String?)
    /// Where completion handlers and the manager's progress blocks run. Default `.mainCurrentOrAsync`
    /// (the main dispatch queue, which the program must run; see ``CallbackQueue``).
    case callbackQueue(CallbackQueue)

    // MARK: Halcyon's own

    /// Fetch a URL even if it is on the failed-URL blocklist (SDWebImage's `retryFailed`).
    case retryFailed
    /// Maps a URL to the cache key (SDWebImage's `cacheKeyFilter`).
    case cacheKeyFilter(@Sendable (URL) -> String)
    /// Revalidate a cached network image with the server (If-None-Match /
    /// If-Modified-Since) before using it; a 304 keeps and re-dates the entry.
    case refreshCached
    /// Largest width × height (× frames) to decode. Default 50 MP.
    case maxPixelCount(Int)
    /// Most frames an animation may have. Default 1000.
    case maxFrameCount(Int)
    /// How much damage in the data decoding tolerates (libvips' `fail_on`).
    /// Default ``DecodingStrictness/default`` (`.truncated`).
    case decodingStrictness(DecodingStrictness)
}

/// How disk cache entries are written.
public struct DiskStoreWriteOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// fsync the entry before it is renamed into place.
    public static let syncsWrites = DiskStoreWriteOptions(rawValue: 1)
}

/// A ``HalcyonOptionsInfo`` list parsed once into fields; later items win.
public struct HalcyonParsedOptionsInfo: Sendable {
    public var targetCache: ImageCache?
    public var originalCache: ImageCache?
    public var downloader: ImageDownloader?
    public var transition: ImageTransition = .none
    public var forceTransition = false
    public var keepCurrentImageWhileLoading = false
    public var onFailureImage: Image??
    public var progressiveJPEG: ImageProgressive?
    public var lowDataModeSource: Source?
    public var downloadPriority: Float = 0.5
    public var forceRefresh = false
    public var fromMemoryCacheOrRefresh = false
    public var onlyFromCache = false
    public var requestModifier: (any AsyncImageDownloadRequestModifier)?
    public var redirectHandler: (any ImageDownloadRedirectHandler)?
    public var alternativeSources: [Source]?
    public var retryStrategy: (any RetryStrategy)?
    public var onDataReceived: [any DataReceivingSideEffect]?
    public var scaleFactor: CGFloat = 1
    public var onlyLoadFirstFrame = false
    public var preloadAllAnimationData = false
    public var backgroundDecode = false
    public var processor: any ImageProcessor = DefaultImageProcessor.default
    public var processingQueue: CallbackQueue?
    public var imageModifier: (any ImageModifier)?
    public var cacheSerializer: any CacheSerializer = DefaultCacheSerializer.default
    public var cacheMemoryOnly = false
    public var waitForCache = false
    public var cacheOriginalImage = false
    public var alsoPrefetchToMemory = false
    public var loadDiskFileSynchronously = false
    public var asyncCacheTypeCheck = false
    public var diskStoreWriteOptions: DiskStoreWriteOptions = []
    public var memoryCacheExpiration: StorageExpiration?
    public var memoryCacheAccessExtendingExpiration: ExpirationExtending = .cacheTime
    public var diskCacheExpiration: StorageExpiration?
    public var diskCacheAccessExtendingExpiration: ExpirationExtending = .cacheTime
    public var forcedExtension: String?
    public var callbackQueue: CallbackQueue = .mainCurrentOrAsync
    public var retryFailed = false
    public var cacheKeyFilter: (@Sendable (URL) -> String)?
    public var refreshCached = false
    public var maxPixelCount = ImageDecodingOptions.defaultMaxPixelCount
    public var maxFrameCount = ImageDecodingOptions.defaultMaxFrameCount
    /// How much damage in the data decoding tolerates; see ``DecodingStrictness``.
    public var decodingStrictness = DecodingStrictness.default

    /// Parses `info`; for a repeated option the last item wins.
    public init(_ info: HalcyonOptionsInfo?) {
        for item in info ?? [] {
            apply(item)
        }
    }

    private mutating func apply(_ item: HalcyonOptionsInfoItem) {
        switch item {
        case .targetCache(let value): targetCache = value
        case .originalCache(let value): originalCache = value
        case .downloader(let value): downloader = value
        case .transition(let value): transition = value
        case .forceTransition: forceTransition = true
        case .keepCurrentImageWhileLoading: keepCurrentImageWhileLoading = true
        case .onFailureImage(let value): onFailureImage = .some(value)
        case .progressiveJPEG(let value): progressiveJPEG = value
        case .lowDataMode(let value): lowDataModeSource = value
        case .downloadPriority(let value): downloadPriority = value
        case .forceRefresh: forceRefresh = true
        case .fromMemoryCacheOrRefresh: fromMemoryCacheOrRefresh = true
        case .onlyFromCache: onlyFromCache = true
        case .requestModifier(let value): requestModifier = value
        case .redirectHandler(let value): redirectHandler = value
        case .alternativeSources(let value): alternativeSources = value
        case .retryStrategy(let value): retryStrategy = value
        case .onDataReceived(let value): onDataReceived = value
        case .scaleFactor(let value): scaleFactor = value
        case .onlyLoadFirstFrame: onlyLoadFirstFrame = true
        case .preloadAllAnimationData: preloadAllAnimationData = true
        case .backgroundDecode: backgroundDecode = true
        case .processor(let value): processor = value
        case .processingQueue(let value): processingQueue = value
        case .imageModifier(let value): imageModifier = value
        case .cacheSerializer(let value): cacheSerializer = value
        case .cacheMemoryOnly: cacheMemoryOnly = true
        case .waitForCache: waitForCache = true
        case .cacheOriginalImage: cacheOriginalImage = true
        case .alsoPrefetchToMemory: alsoPrefetchToMemory = true
        case .loadDiskFileSynchronously: loadDiskFileSynchronously = true
        case .asyncCacheTypeCheck: asyncCacheTypeCheck = true
        case .diskStoreWriteOptions(let value): diskStoreWriteOptions = value
        case .memoryCacheExpiration(let value): memoryCacheExpiration = value
        case .memoryCacheAccessExtendingExpiration(let value): memoryCacheAccessExtendingExpiration = value
        case .diskCacheExpiration(let value): diskCacheExpiration = value
        case .diskCacheAccessExtendingExpiration(let value): diskCacheAccessExtendingExpiration = value
        case .forcedCacheFileExtension(let value): forcedExtension = value
        case .callbackQueue(let value): callbackQueue = value
        case .retryFailed: retryFailed = true
        case .cacheKeyFilter(let value): cacheKeyFilter = value
        case .refreshCached: refreshCached = true
        case .maxPixelCount(let value): maxPixelCount = value
        case .maxFrameCount(let value): maxFrameCount = value
        case .decodingStrictness(let value): decodingStrictness = value
        }
    }

    /// The decoding options these options imply.
    public var decodingOptions: ImageDecodingOptions {
        ImageDecodingOptions(
            scaleFactor: scaleFactor,
            onlyFirstFrame: onlyLoadFirstFrame,
            preloadAllAnimationData: preloadAllAnimationData || backgroundDecode,
            maxPixelCount: maxPixelCount,
            maxFrameCount: maxFrameCount,
            strictness: decodingStrictness)
    }
}
