/// The outcome of storing an image in both cache layers.
public struct CacheStoreResult: Sendable {
    /// Storing in memory; it cannot fail, so always success.
    public let memoryCacheResult: Result<Void, Never>
    /// Serializing and writing to disk; success when `toDisk` was false.
    public let diskCacheResult: Result<Void, HalcyonError>
}
