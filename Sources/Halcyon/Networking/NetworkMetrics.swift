import Foundation

/// Timing and size of one HTTP download, for logging and tuning.
public struct NetworkMetrics: Sendable {
    /// The URL first requested (after the request modifier).
    public let originalURL: URL
    /// The URL that finally answered, after redirects.
    public let url: URL
    /// The final HTTP status code.
    public let statusCode: Int
    /// How many redirects were followed.
    public let redirectCount: Int
    /// When the HTTP request was started (after waiting for a concurrency slot).
    public let startDate: Date
    /// Time spent waiting for a concurrency slot before the request started.
    public let queueDuration: TimeInterval
    /// Time from the start to the head of the final response.
    public let responseHeadDuration: TimeInterval
    /// Time from the start to the last byte of the body.
    public let totalDuration: TimeInterval
    /// Body bytes received over the network for this request.
    public let receivedBytes: Int
    /// Bytes reused from an earlier interrupted download (resumed with Range), 0 when not resumed.
    public let resumedBytes: Int
    /// The body length the server announced, if any.
    public let expectedBytes: Int?

    /// Makes metrics; all values are as measured by the downloader.
    public init(
        originalURL: URL, url: URL, statusCode: Int, redirectCount: Int, startDate: Date,
        queueDuration: TimeInterval, responseHeadDuration: TimeInterval, totalDuration: TimeInterval,
        receivedBytes: Int, resumedBytes: Int, expectedBytes: Int?
    ) {
        self.originalURL = originalURL
        self.url = url
        self.statusCode = statusCode
        self.redirectCount = redirectCount
        self.startDate = startDate
        self.queueDuration = queueDuration
        self.responseHeadDuration = responseHeadDuration
        self.totalDuration = totalDuration
        self.receivedBytes = receivedBytes
        self.resumedBytes = resumedBytes
        self.expectedBytes = expectedBytes
    }
}
