import Foundation

/// Where an image comes from: the network, or a provider of its bytes.
public enum Source: Sendable {
    /// Downloaded by an ``ImageDownloader`` from the resource's URL.
    case network(any Resource)
    /// Read from a provider (a file, base64 text, raw bytes, or your own).
    case provider(any ImageDataProvider)

    /// The key the image is cached under.
    public var cacheKey: String {
        switch self {
        case .network(let resource): return resource.cacheKey
        case .provider(let provider): return provider.cacheKey
        }
    }

    /// The URL behind the source, if it has one.
    public var url: URL? {
        switch self {
        case .network(let resource): return resource.downloadURL
        case .provider(let provider): return provider.contentURL
        }
    }

    /// Whether two sources load the same thing under the same key.
    public func isSameSource(as other: Source) -> Bool {
        switch (self, other) {
        case (.network(let left), .network(let right)):
            return left.cacheKey == right.cacheKey && left.downloadURL == right.downloadURL
        case (.provider(let left), .provider(let right)):
            return left.cacheKey == right.cacheKey && left.contentURL == right.contentURL
        default:
            return false
        }
    }
}
