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
    public let data: Data?
    /// Network metrics of the download, when there was one.
    public let metrics: NetworkMetrics?
}

/// A failure of one source among several tried, for `alternativeSourcesExhausted`.
public struct PropagationError: Sendable {
    /// The source that failed.
    public let source: Source
    /// Why it failed.
    public let error: HalcyonError
}
