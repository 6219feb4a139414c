/// What a cache lookup found, and where.
public enum ImageCacheResult: Sendable {
    /// Found on disk (and now also in memory).
    case disk(Image)
    /// Found in memory.
    case memory(Image)
    /// Not cached.
    case none

    /// The image found, if any.
    public var image: Image? {
        switch self {
        case .disk(let image), .memory(let image): return image
        case .none: return nil
        }
    }

    /// Where the image was found: `.memory`, `.disk` or `.none`.
    public var cacheType: CacheType {
        switch self {
        case .disk: return .disk
        case .memory: return .memory
        case .none: return .none
        }
    }
}
