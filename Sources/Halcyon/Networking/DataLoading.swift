import Foundation

/// Loads the bytes of network images for the retrieve pipeline.
///
/// ``ImageDownloader`` is the implementation (AsyncHTTPClient, coalescing,
/// limits, revalidation); tests and embedders that only need bytes can give
/// ``HalcyonManager`` another one and run without sockets. Implementations
/// are classes (the pipeline tells loaders apart by instance), must be
/// thread-safe, throw `HalcyonError`, stop when the calling task is
/// cancelled (throwing `requestError(.taskCancelled)`), and answer a request
/// with validators that the server confirmed with `304 Not Modified` as
/// ``DataLoadingResult/notModified`` rather than as an error.
public protocol DataLoading: AnyObject, Sendable {
    /// Loads `request.url`; see the protocol's rules on cancellation and revalidation.
    func loadData(_ request: DataLoadingRequest) async throws(HalcyonError) -> DataLoadingResult
}

/// The validators of a cached response, sent back to revalidate it (`If-None-Match`, `If-Modified-Since`).
public struct CacheValidators: Sendable, Hashable {
    /// The cached response's `ETag`.
    public var etag: String?
    /// The cached response's `Last-Modified`.
    public var lastModified: String?

    /// Makes validators; nil when neither is given.
    public init?(etag: String?, lastModified: String?) {
        guard etag != nil || lastModified != nil else { return nil }
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// One load asked of a ``DataLoading``.
public struct DataLoadingRequest: Sendable {
    /// The URL to load.
    public var url: URL
    /// Changes the request before it is sent; nil sends it as is.
    public var requestModifier: (any AsyncImageDownloadRequestModifier)?
    /// Decides about redirects; nil follows them.
    public var redirectHandler: (any ImageDownloadRedirectHandler)?
    /// Called while the body streams in, on any thread.
    public var progressBlock: DownloadProgressBlock?
    /// Given each chunk of the body as it arrives, on any thread.
    public var dataReceivers: [any DataReceivingSideEffect]
    /// Sent as a conditional request when set; a 304 answer is ``DataLoadingResult/notModified``.
    public var validators: CacheValidators?
    /// The priority of the load; it may change while the load waits.
    public var priority: LoadPriority

    /// Makes a request; every argument but the URL has a default.
    public init(
        url: URL,
        requestModifier: (any AsyncImageDownloadRequestModifier)? = nil,
        redirectHandler: (any ImageDownloadRedirectHandler)? = nil,
        progressBlock: DownloadProgressBlock? = nil,
        dataReceivers: [any DataReceivingSideEffect] = [],
        validators: CacheValidators? = nil,
        priority: LoadPriority = LoadPriority(0.5)
    ) {
        self.url = url
        self.requestModifier = requestModifier
        self.redirectHandler = redirectHandler
        self.progressBlock = progressBlock
        self.dataReceivers = dataReceivers
        self.validators = validators
        self.priority = priority
    }
}

/// What a ``DataLoading`` load gave.
public enum DataLoadingResult: Sendable {
    /// The body, with the response it came with.
    case loaded(ImageDataLoadingResult)
    /// The server confirmed the cached copy (304): it is still good.
    case notModified
}

// MARK: - ImageDownloader

extension ImageDownloader: DataLoading {
    /// Downloads `request.url` without decoding; joins a running download of the same request.
    ///
    /// The request's priority moves this caller's download in the waiting
    /// queue as it changes; cancelling the calling task leaves the download
    /// (which stops when its last caller leaves).
    public func loadData(_ request: DataLoadingRequest) async throws(HalcyonError) -> DataLoadingResult {
        var modifier = request.requestModifier
        if let validators = request.validators {
            modifier = ConditionalRequestModifier(base: modifier, validators: validators)
        }
        let options = DownloadOptions(
            requestModifier: modifier, redirectHandler: request.redirectHandler,
            downloadPriority: request.priority.value, callbackQueue: .untouch, progressBlock: request.progressBlock,
            dataReceivers: request.dataReceivers)
        let task = DownloadTask(url: request.url)
        AttemptDownloads.current?.record(task)
        task.follow(request.priority)
        let observation = request.priority.observe { _ in task.priorityDidChange() }
        defer { request.priority.removeObserver(observation) }
        do throws(HalcyonError) {
            let payload = try await download(url: request.url, options: options, decode: false, task: task)
            return .loaded(ImageDataLoadingResult(payload))
        } catch {
            if request.validators != nil, case .responseError(reason: .notModified) = error { return .notModified }
            throw error
        }
    }
}
