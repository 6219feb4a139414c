import Foundation

/// HTTP and bookkeeping facts stored with a disk cache entry, for later revalidation.
///
/// Every field is optional: an entry stored without a response has only its
/// key and dates. Kept inside the entry file, in its header, so it
/// can never disagree with the bytes it describes.
public struct CacheEntryMetadata: Sendable, Hashable {
    /// The key the entry was stored under, before hashing into a file name.
    public var originalKey: String?
    /// The `Content-Type` of the response the bytes came from.
    public var contentType: String?
    /// The `ETag` of that response, for `If-None-Match`.
    public var etag: String?
    /// The `Last-Modified` of that response, for `If-Modified-Since`.
    public var lastModified: String?
    /// The `Cache-Control` of that response.
    public var cacheControl: String?

    /// Makes metadata; every field defaults to absent.
    public init(
        originalKey: String? = nil,
        contentType: String? = nil,
        etag: String? = nil,
        lastModified: String? = nil,
        cacheControl: String? = nil
    ) {
        self.originalKey = originalKey
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
        self.cacheControl = cacheControl
    }
}
