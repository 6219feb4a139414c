import Foundation

/// Changes a request before it is sent, possibly after awaiting something (a token refresh).
///
/// Returning nil cancels the download with `HalcyonError.requestError(.emptyRequest)`.
/// It sees the URL as given, before any check; only the URL it returns must be
/// http(s) (`requestError(.invalidURL)` otherwise). The modified URL is the
/// coalescing key. Runs on a task of the cooperative pool.
public protocol AsyncImageDownloadRequestModifier: Sendable {
    /// Returns the request to send, or nil to refuse it.
    func modified(for request: ImageDownloadRequest) async -> ImageDownloadRequest?
}

/// Changes a request before it is sent, synchronously on the caller's thread.
///
/// Returning nil fails the download with `HalcyonError.requestError(.emptyRequest)`.
/// A synchronous modifier lets the completion-handler API register the
/// download before it returns, so requests issued back to back coalesce.
public protocol ImageDownloadRequestModifier: AsyncImageDownloadRequestModifier {
    /// Returns the request to send, or nil to refuse it.
    func modified(for request: ImageDownloadRequest) -> ImageDownloadRequest?
}

extension ImageDownloadRequestModifier {
    /// Calls the synchronous ``modified(for:)``.
    public func modified(for request: ImageDownloadRequest) async -> ImageDownloadRequest? {
        let sync: (ImageDownloadRequest) -> ImageDownloadRequest? = self.modified(for:)
        return sync(request)
    }
}

/// A synchronous request modifier made from a closure.
public struct AnyModifier: ImageDownloadRequestModifier {
    private let block: @Sendable (ImageDownloadRequest) -> ImageDownloadRequest?

    /// Makes a modifier that runs `modify`.
    public init(modify: @escaping @Sendable (ImageDownloadRequest) -> ImageDownloadRequest?) {
        self.block = modify
    }

    /// Runs the closure.
    public func modified(for request: ImageDownloadRequest) -> ImageDownloadRequest? {
        block(request)
    }
}

/// An asynchronous request modifier made from a closure.
public struct AnyAsyncModifier: AsyncImageDownloadRequestModifier {
    private let block: @Sendable (ImageDownloadRequest) async -> ImageDownloadRequest?

    /// Makes a modifier that runs `modify`.
    public init(modify: @escaping @Sendable (ImageDownloadRequest) async -> ImageDownloadRequest?) {
        self.block = modify
    }

    /// Runs the closure.
    public func modified(for request: ImageDownloadRequest) async -> ImageDownloadRequest? {
        await block(request)
    }
}
