/// Where a cached image was found.
public enum CacheType: Sendable, Hashable {
    /// Not cached: the image came from elsewhere, or nothing was found.
    case none
    /// Found in the memory cache.
    case memory
    /// Found in the disk cache.
    case disk

    /// Whether the image was in a cache at all.
    public var cached: Bool { self != .none }
}
