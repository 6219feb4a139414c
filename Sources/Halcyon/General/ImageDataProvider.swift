import Foundation

/// Supplies the bytes of an image that does not come from an HTTP download.
///
/// The manager caches what a provider gives under its `cacheKey`, exactly as
/// it caches downloads, and calls `data()` only on a cache miss.
public protocol ImageDataProvider: Sendable {
    /// The key the image is cached under; must change when the bytes change.
    var cacheKey: String { get }
    /// Reads the bytes. Errors reach the caller as `imageSettingError(.dataProviderError(provider:error:))` with this
    /// provider and its error.
    func data() async throws -> Data
    /// A URL describing where the bytes live, if any.
    var contentURL: URL? { get }
}

extension ImageDataProvider {
    public var contentURL: URL? { nil }
}

/// Reads an image from a local file, off the caller's thread.
public struct LocalFileImageDataProvider: ImageDataProvider {
    /// The file read.
    public let fileURL: URL
    public let cacheKey: String

    /// Makes a provider; the cache key defaults to `local://` and the file's path.
    public init(fileURL: URL, cacheKey: String? = nil) {
        self.fileURL = fileURL
        self.cacheKey = cacheKey ?? fileURL.cacheKey
    }

    public func data() async throws -> Data {
        let url = fileURL
        let provider = self
        return try await Task.detached(priority: Task.currentPriority) {
            do {
                return try Data(contentsOf: url, options: .mappedIfSafe)
            } catch {
                let failure = DataProviderFailure(message: "cannot read \(url.path): \(error.localizedDescription)")
                throw HalcyonError.imageSettingError(reason: .dataProviderError(provider: provider, error: failure))
            }
        }.value
    }

    public var contentURL: URL? { fileURL }
}

/// Decodes an image from base64 text (a `data:` URL prefix is accepted).
public struct Base64ImageDataProvider: ImageDataProvider {
    /// The base64 text.
    public let base64String: String
    public let cacheKey: String

    /// Makes a provider with an explicit cache key (the text can be long).
    public init(base64String: String, cacheKey: String) {
        self.base64String = base64String
        self.cacheKey = cacheKey
    }

    public func data() async throws -> Data {
        var text = Substring(base64String)
        if text.hasPrefix("data:"), let comma = text.firstIndex(of: ",") {
            text = text[text.index(after: comma)...]
        }
        guard let data = Data(base64Encoded: String(text), options: .ignoreUnknownCharacters) else {
            let failure = DataProviderFailure(message: "the text for \(cacheKey) is not valid base64")
            throw HalcyonError.imageSettingError(reason: .dataProviderError(provider: self, error: failure))
        }
        return data
    }
}

/// Hands over bytes already in memory.
public struct RawImageDataProvider: ImageDataProvider {
    /// The bytes.
    public let rawData: Data
    public let cacheKey: String

    /// Makes a provider.
    public init(data: Data, cacheKey: String) {
        rawData = data
        self.cacheKey = cacheKey
    }

    public func data() async throws -> Data { rawData }
}
