import Foundation

/// What a retrieval produced: the image, where it came from, and the source used.
public struct RetrieveImageResult: Sendable {
    /// The image, processed and modified as the options asked.
    public let image: Image
    /// Where the image was found: `.memory`, `.disk`, or `.none` when loaded from its source.
    public let cacheType: CacheType
    /// The source that gave the image (an alternative source when the main one failed).
    public let source: Source
    /// The source the retrieval was asked for.
    public let originalSource: Source
    /// The original bytes, when the image was loaded from its source in this retrieval.
    public let originalData: Data?
    /// Network metrics of the download, when there was one.
    public let metrics: NetworkMetrics?
    /// The serializer of the retrieval's options, for ``data()``.
    let serializer: any CacheSerializer

    init(image: Image, cacheType: CacheType, source: Source, originalSource: Source, originalData: Data?, metrics: NetworkMetrics?,
         serializer: any CacheSerializer = DefaultCacheSerializer.default) {
        self.image = image
        self.cacheType = cacheType
        self.source = source
        self.originalSource = originalSource
        self.originalData = originalData
        self.metrics = metrics
        self.serializer = serializer
    }

    /// The image's data (Kingfisher's `data()`): the downloaded bytes for a load from the source, else the
    /// image serialized by the options' ``CacheSerializer`` now (memory and disk hits), nil when that fails.
    ///
    /// Serializing encodes the image: call it off the main thread for large images.
    public func data() -> Data? {
        if let originalData { return originalData }
        return try? serializer.data(with: image, original: nil)
    }
}

/// A failure of one source among several tried, for `alternativeSourcesExhausted`.
public struct PropagationError: Sendable {
    /// The source that failed.
    public let source: Source
    /// Why it failed.
    public let error: HalcyonError
}
