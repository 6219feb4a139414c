import Foundation

/// An image on the network: where to download it and the key to cache it under.
///
/// `URL` conforms, with its absolute string as the cache key. A `file://`
/// URL is not downloaded: ``Resource/convertToSource(overrideCacheKey:)``
/// turns it into a ``LocalFileImageDataProvider``.
public protocol Resource: Sendable {
    /// The key the image is cached under.
    var cacheKey: String { get }
    /// Where the image is downloaded from.
    var downloadURL: URL { get }
}

extension Resource {
    /// The ``Source`` for this resource: a local file provider for `file://` URLs, else `.network`.
    public func convertToSource(overrideCacheKey: String? = nil) -> Source {
        let key = overrideCacheKey ?? cacheKey
        if downloadURL.isFileURL {
            return .provider(LocalFileImageDataProvider(fileURL: downloadURL, cacheKey: key))
        }
        if let overrideCacheKey {
            return .network(ImageResource(downloadURL: downloadURL, cacheKey: overrideCacheKey))
        }
        return .network(self)
    }
}

/// A ``Resource`` with an explicit cache key.
public struct ImageResource: Resource, Hashable {
    public let cacheKey: String
    public let downloadURL: URL

    /// Makes a resource; the cache key defaults to the URL's absolute string.
    public init(downloadURL: URL, cacheKey: String? = nil) {
        self.downloadURL = downloadURL
        self.cacheKey = cacheKey ?? downloadURL.cacheKey
    }
}

extension URL: Resource {
    /// The absolute string; for a file URL, `local://` and the standardized path.
    public var cacheKey: String {
        isFileURL ? "local://\(standardizedFileURL.path)" : absoluteString
    }

    /// The URL itself.
    public var downloadURL: URL { self }
}
