import Foundation

/// A downloaded and decoded image, with the bytes it came from.
public struct ImageLoadingResult: Sendable {
    /// The image, decoded and processed by the request's processor.
    public let image: Image
    /// The URL that was requested (after the request modifier).
    public let url: URL
    /// The body bytes as downloaded (after the delegate's data hook).
    public let originalData: Data
    /// The head of the final response.
    public let response: ImageDownloadResponse
    /// Timing and size of the HTTP download.
    public let metrics: NetworkMetrics
}

/// Downloaded bytes that were not decoded (``ImageDownloader/downloadData(with:options:)``).
public struct ImageDataLoadingResult: Sendable {
    /// The URL that was requested (after the request modifier).
    public let url: URL
    /// The body bytes as downloaded (after the delegate's data hook).
    public let data: Data
    /// The head of the final response.
    public let response: ImageDownloadResponse
    /// Timing and size of the HTTP download.
    public let metrics: NetworkMetrics
}
