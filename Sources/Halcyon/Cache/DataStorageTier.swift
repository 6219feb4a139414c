import Foundation

/// One value kept by a ``DataStorageTier``: bytes and what describes them.
public struct StoredData: Sendable, Equatable {
    /// The bytes, exactly as stored.
    public var data: Data
    /// The media type of `data`, if known.
    public var contentType: String?
    /// A validator for `data` (an HTTP ETag, quoted), if known.
    public var etag: String?
    /// When the value was made. A tier may keep its own date instead: ``DiskDataStorage`` gives the time of the write.
    public var created: Date

    /// Makes a value made at `created` (default now).
    public init(data: Data, contentType: String? = nil, etag: String? = nil, created: Date = Date()) {
        self.data = data
        self.contentType = contentType
        self.etag = etag
        self.created = created
    }
}

/// A key-value tier of encoded data below the local caches: get, set with a
/// lifetime, remove and contains.
///
/// The shape of Nuke's `DataCaching` and SDWebImage's cache-manager entries:
/// a local disk folder (``DiskDataStorage``) or a store shared by a fleet
/// (the Redis one in `HalcyonRedis`). Every call is async and cancellable:
/// a cancelled caller gets `.requestError(.taskCancelled)` or a miss, never a
/// half-written value. A tier that cannot be reached throws
/// `.cacheError(.storageUnavailable)`, which callers treat as a miss.
///
/// Two users take an ordered list of tiers: ``ImageCache/tiers`` (serialized
/// images under the cache's keys, below its disk) and the image service's
/// result storage (encoded answers under the request plan's key). A new kind
/// of storage is one conformance, usable by both.
public protocol DataStorageTier: Sendable {
    /// A short name for logs and metrics, e.g. `disk` or `redis`.
    var name: String { get }

    /// The value under `key`, or nil when missing, expired or unreadable (a corrupt entry is removed).
    func value(forKey key: String) async throws(HalcyonError) -> StoredData?

    /// Stores `value` under `key`, replacing any previous one atomically; nil `lifetime` keeps it until evicted.
    func store(_ value: StoredData, forKey key: String, lifetime: Duration?) async throws(HalcyonError)

    /// Removes the value under `key`, if any.
    func removeValue(forKey key: String) async throws(HalcyonError)

    /// Whether a value is stored under `key` (without reading it).
    func containsValue(forKey key: String) async throws(HalcyonError) -> Bool
}
