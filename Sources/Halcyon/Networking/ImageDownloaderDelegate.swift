import Foundation

/// What a delegate decides about a response head.
public enum ResponseDisposition: Sendable {
    /// Go on and stream the body.
    case allow
    /// Stop now; the download fails with `HalcyonError.responseError(.rejected)`.
    case cancel
}

/// Observes and steers an ``ImageDownloader``; every method has a default.
///
/// Methods are called on the task that runs the download, never on the
/// caller's queue, and must return quickly. The downloader holds its delegate
/// weakly. For a coalesced download each method is called once per HTTP
/// request, except `didDownload image`, called once per distinct processor.
public protocol ImageDownloaderDelegate: AnyObject, Sendable {
    /// The request is about to be sent (after the modifier, before credentials are added).
    func imageDownloader(_ downloader: ImageDownloader, willDownloadImageForURL url: URL, with request: ImageDownloadRequest)

    /// The download ended: once per HTTP request, after the data hook
    /// (`imageDownloader(_:didDownload:for:)` with the `Data`) and before decoding.
    ///
    /// `response` is the final response head when one arrived; `error` is set
    /// when the request, the response or the data hook failed (a hook that
    /// rejects the data gives `responseError(.rejected)`).
    func imageDownloader(
        _ downloader: ImageDownloader, didFinishDownloadingImageForURL url: URL,
        with response: ImageDownloadResponse?, error: HalcyonError?)

    /// The head of the final response arrived; `.cancel` stops before the body is read.
    func imageDownloader(_ downloader: ImageDownloader, didReceive response: ImageDownloadResponse) -> ResponseDisposition

    /// The body arrived; return it (possibly rewritten) or nil to reject it.
    ///
    /// A rejection (nil or empty data) fails every caller with
    /// `HalcyonError.responseError(.rejected)`, and the did-finish event that follows carries that error.
    func imageDownloader(_ downloader: ImageDownloader, didDownload data: Data, for url: URL) -> Data?

    /// An image was decoded and processed from the downloaded data.
    func imageDownloader(
        _ downloader: ImageDownloader, didDownload image: Image, for url: URL, with response: ImageDownloadResponse)

    /// Whether `code` is an acceptable status for a final answer. Default: ``ImageDownloader/isAcceptableStatus(_:)``,
    /// 200, 206 and 304. A 206 is refused, whatever this says, unless it answers a resumed download's `Range` request.
    func isValidStatusCode(_ code: Int, for downloader: ImageDownloader) -> Bool
}

extension ImageDownloaderDelegate {
    /// Does nothing.
    public func imageDownloader(_ downloader: ImageDownloader, willDownloadImageForURL url: URL, with request: ImageDownloadRequest) {}

    /// Does nothing.
    public func imageDownloader(
        _ downloader: ImageDownloader, didFinishDownloadingImageForURL url: URL,
        with response: ImageDownloadResponse?, error: HalcyonError?) {}

    /// Allows every response.
    public func imageDownloader(_ downloader: ImageDownloader, didReceive response: ImageDownloadResponse) -> ResponseDisposition {
        .allow
    }

    /// Keeps the data as downloaded.
    public func imageDownloader(_ downloader: ImageDownloader, didDownload data: Data, for url: URL) -> Data? {
        data
    }

    /// Does nothing.
    public func imageDownloader(
        _ downloader: ImageDownloader, didDownload image: Image, for url: URL, with response: ImageDownloadResponse) {}

    /// Accepts 200, 206 (to a resume's `Range` request) and 304: ``ImageDownloader/isAcceptableStatus(_:)``.
    public func isValidStatusCode(_ code: Int, for downloader: ImageDownloader) -> Bool {
        ImageDownloader.isAcceptableStatus(code)
    }
}
