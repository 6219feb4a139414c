import Foundation

/// Decides whether and how a redirect is followed.
///
/// Called for each 301, 302, 303, 307 or 308 answer that has a Location, after
/// the downloader's `maxRedirects` check. Return the request to send next
/// (possibly rewritten) or nil to stop with
/// `HalcyonError.requestError(.redirectBlocked)`. For coalesced downloads the
/// handler of the caller that started the HTTP request is used.
public protocol ImageDownloadRedirectHandler: Sendable {
    /// Returns the request to follow `response` with, or nil to block the redirect.
    func handleHTTPRedirection(
        for task: SessionDataTask,
        response: ImageDownloadResponse,
        newRequest: ImageDownloadRequest
    ) async -> ImageDownloadRequest?
}

/// A redirect handler made from a closure.
public struct AnyRedirectHandler: ImageDownloadRedirectHandler {
    private let block: @Sendable (SessionDataTask, ImageDownloadResponse, ImageDownloadRequest) async -> ImageDownloadRequest?

    /// Makes a handler that runs `handle`.
    public init(handle: @escaping @Sendable (SessionDataTask, ImageDownloadResponse, ImageDownloadRequest) async -> ImageDownloadRequest?) {
        self.block = handle
    }

    /// Runs the closure.
    public func handleHTTPRedirection(
        for task: SessionDataTask,
        response: ImageDownloadResponse,
        newRequest: ImageDownloadRequest
    ) async -> ImageDownloadRequest? {
        await block(task, response, newRequest)
    }
}
