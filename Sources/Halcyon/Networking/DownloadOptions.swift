import Foundation

/// Receives download progress: bytes received so far and the expected total (-1 when unknown).
public typealias DownloadProgressBlock = @Sendable (_ receivedSize: Int64, _ totalSize: Int64) -> Void

/// Per-request options of ``ImageDownloader``.
///
/// Options shared by every request of a downloader (timeout, limits,
/// credentials, delegate) are properties of the downloader instead.
public struct DownloadOptions: Sendable {
    /// Changes the request before it is sent; nil sends it as is.
    public var requestModifier: (any AsyncImageDownloadRequestModifier)?
    /// Decides about redirects; nil follows them (up to `maxRedirects`).
    public var redirectHandler: (any ImageDownloadRedirectHandler)?
    /// Priority in the waiting queue, 0 (lowest) to 1 (highest). Default 0.5.
    ///
    /// A coalesced download waits with the highest priority of its current callers: it rises when
    /// one joins and falls when one leaves; ``DownloadTask/setPriority(_:)`` changes a caller's.
    public var downloadPriority: Float
    /// Decoding and processing options; `processingOptions.processor` runs on the bytes.
    public var processingOptions: HalcyonParsedOptionsInfo
    /// Where completion and progress callbacks run. Default ``CallbackQueue/untouch``.
    ///
    /// The async methods ignore it: they resume on the Swift concurrency pool and
    /// call `progressBlock` on the thread that received the bytes.
    public var callbackQueue: CallbackQueue
    /// Called while the body streams in, on `callbackQueue`.
    public var progressBlock: DownloadProgressBlock?
    /// Given each chunk of the body as it arrives, on the thread that read it. Default: the
    /// `onDataReceived` side effects of `processingOptions`.
    public var dataReceivers: [any DataReceivingSideEffect]

    /// Makes options; every argument has the documented default.
    public init(
        requestModifier: (any AsyncImageDownloadRequestModifier)? = nil,
        redirectHandler: (any ImageDownloadRedirectHandler)? = nil,
        downloadPriority: Float = 0.5,
        processingOptions: HalcyonParsedOptionsInfo = HalcyonParsedOptionsInfo(nil),
        callbackQueue: CallbackQueue = .untouch,
        progressBlock: DownloadProgressBlock? = nil,
        dataReceivers: [any DataReceivingSideEffect]? = nil
    ) {
        self.requestModifier = requestModifier
        self.redirectHandler = redirectHandler
        self.downloadPriority = downloadPriority
        self.processingOptions = processingOptions
        self.callbackQueue = callbackQueue
        self.progressBlock = progressBlock
        self.dataReceivers = dataReceivers ?? processingOptions.onDataReceived ?? []
    }

    /// The processor that turns the bytes into the image. Default ``DefaultImageProcessor``.
    public var processor: any ImageProcessor {
        get { processingOptions.processor }
        set { processingOptions.processor = newValue }
    }

    /// The default options (made once: the full processing options are costly to build per request).
    public static let `default` = DownloadOptions()
}
