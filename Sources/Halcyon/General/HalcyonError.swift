import Foundation

/// Every error Halcyon reports, grouped by the stage that failed.
///
/// The groups follow Kingfisher's `KingfisherError`: request, response, cache,
/// processor and image setting. Each reason says what went wrong and with
/// which input, so a log line is enough to act on. Decoding and encoding
/// failures belong to the processor group, as decoding is the default
/// processor's job.
public enum HalcyonError: Error, Sendable, CustomStringConvertible {
    /// Building or sending the request failed before any response arrived.
    case requestError(reason: RequestErrorReason)
    /// The response, or the data in it, was not acceptable.
    case responseError(reason: ResponseErrorReason)
    /// Reading from or writing to a cache failed.
    case cacheError(reason: CacheErrorReason)
    /// Decoding, processing or encoding an image failed.
    case processorError(reason: ProcessorErrorReason)
    /// Setting an image on a target, or choosing its source, failed.
    case imageSettingError(reason: ImageSettingErrorReason)

    // MARK: - Reasons

    /// Why a request could not be made or was abandoned.
    public enum RequestErrorReason: Sendable {
        /// The request modifier returned nil for this request.
        case emptyRequest
        /// The URL cannot be fetched (no scheme, no host, or not http/https).
        case invalidURL(url: URL?)
        /// The work was cancelled (Kingfisher's payload): `task` and `token` are the coalesced download and
        /// the caller's claim on it when a caller's ``CancelToken`` ended a download; both are nil when Swift
        /// task cancellation, a retrieve task's `cancel()` or a stopped prefetcher ended the work at another
        /// stage. The URL, when there was a download, is `task.url`.
        case taskCancelled(task: SessionDataTask?, token: CancelToken?)
        /// The redirect handler refused to follow a redirect from `url` to `location`.
        case redirectBlocked(url: URL, location: URL)
        /// More redirects than the downloader's `maxRedirects` were needed to reach an answer.
        case tooManyRedirects(url: URL, limit: Int)
        /// A redirect pointed at a location that is not an http(s) URL.
        case invalidRedirect(url: URL, location: String)
        /// The connection to the host could not be opened (refused, unreachable, DNS).
        case cannotConnect(url: URL, message: String)
        /// The downloader was shut down before or while the request ran.
        case downloaderShutDown(url: URL)
        /// The URL failed for good before and is on the failed-URL blocklist; pass `.retryFailed` to try it again.
        case blockedURL(url: URL)
        /// The connection gate refused to connect to `url` (for example its address is private); nothing was sent.
        case connectionRefusedByGate(url: URL, message: String)
        /// The load of an ``ImageDataProvider`` was cancelled (Kingfisher's payload: the provider): the caller's Swift
        /// task, `RetrieveImageTask.cancel()` or `hc.cancelDownloadTask()` stopped a provider-backed retrieval.
        /// As in Kingfisher, ``HalcyonError/isTaskCancelled`` is false for it.
        case dataProviderCancelled(provider: any ImageDataProvider)
    }

    /// Why a response was refused.
    public enum ResponseErrorReason: Sendable {
        /// The server answered with a status code the validator rejects.
        case invalidHTTPStatusCode(url: URL, statusCode: Int)
        /// The transport failed after the connection was open (reset, protocol error...).
        case networkError(url: URL, message: String)
        /// The response took longer than the timeout.
        case timedOut(url: URL, after: TimeInterval)
        /// The body is larger than the configured limit (`received` past `limit`); for a compressed body, what it
        /// inflates to (a decompression bomb stops there; `received` may then be at most `limit`).
        case tooLarge(url: URL, limit: Int, received: Int)
        /// The server sent an empty body.
        case emptyBody(url: URL)
        /// A delegate or data modifier refused the response or its data.
        case rejected(url: URL, message: String)
        /// The connection closed before the body announced by Content-Length arrived.
        case truncatedBody(url: URL, expected: Int, received: Int)
        /// A ranged request for a resumed download got a 206 whose Content-Range does not continue the kept bytes.
        case invalidRangeResponse(url: URL, contentRange: String?)
        /// The server answered a conditional request with 304 Not Modified: the cached copy is still good.
        case notModified(url: URL)
        /// The body came in a content coding the downloader cannot decode: one other than `gzip` (or `x-gzip`) and
        /// `deflate`, or more than one; `encoding` is the `Content-Encoding` header (at most 100 characters).
        case unsupportedContentEncoding(url: URL, encoding: String)
        /// The body did not decode in its `gzip` or `deflate` coding: corrupt or cut-off compressed data, data after
        /// its end (a second gzip member), or raw DEFLATE without zlib's wrapper; `message` says which.
        case contentDecodingFailed(url: URL, encoding: String, message: String)
    }

    /// Why a cache operation failed.
    public enum CacheErrorReason: Sendable {
        /// No image is cached under the key.
        case imageNotExisting(key: String)
        /// The serializer could not turn the image into data.
        case cannotSerializeImage(key: String, message: String)
        /// The cache directory could not be created.
        case cannotCreateDirectory(path: String, message: String)
        /// Writing a cache file failed.
        case cannotWriteFile(path: String, message: String)
        /// Reading a cache file failed.
        case cannotReadFile(path: String, message: String)
        /// Removing a cache file or directory failed.
        case cannotRemoveFile(path: String, message: String)
        /// A cache entry file is truncated, torn or corrupt; it is removed and reads as a miss.
        case corruptEntry(path: String, message: String)
        /// A storage configuration value is invalid, such as a path extension that is not 1–20 letters or digits.
        case invalidConfiguration(message: String)
        /// A storage tier (a shared store such as Redis) could not be reached or answered wrongly; read as a miss.
        case storageUnavailable(tier: String, message: String)
    }

    /// Why an image could not be decoded, processed or encoded.
    public enum ProcessorErrorReason: Sendable {
        /// The data to decode is empty.
        case emptyData
        /// The data is in a format this build of libvips cannot or will not read.
        case unsupportedFormat(ImageFormat)
        /// The data claims a known format but cannot be decoded.
        case corruptData(format: ImageFormat, message: String)
        /// The image has more pixels than the decoding limit allows.
        case tooManyPixels(width: Int, height: Int, frames: Int, limit: Int)
        /// The animation has more frames than the decoding limit allows. `count` is the frames libvips counted,
        /// which stops past 4096 (see ``framesText(_:)``).
        case tooManyFrames(count: Int, limit: Int)
        /// Encoding to the format failed, or this libvips cannot write it.
        case encodeFailed(format: ImageFormat, message: String)
        /// A processor failed on `item` (Kingfisher's payload). The pipeline, the downloader and the manager
        /// report a processor's engine failure this way; the engine's own words stay in ``operationFailed(operation:message:)``,
        /// which a processor called directly throws.
        case processingFailed(processor: any ImageProcessor, item: ImageProcessItem)
        /// An image-engine operation failed; `operation` names the step, `message` is libvips' text.
        case operationFailed(operation: String, message: String)
        /// A parameter of a processor is out of range.
        case invalidParameter(processor: String, message: String)
        /// A processor chain string could not be parsed.
        case invalidProcessorChain(chain: String, position: Int, message: String)
        /// libvips could not start.
        case engineUnavailable(message: String)
        /// The result would have more pixels (all frames counted) than allowed; found before decoding.
        case resultTooLarge(width: Int, height: Int, frames: Int, limit: Int)
        /// The work needs more memory than the whole budget (`waited` false), or
        /// none came free within the wait deadline (`waited` true).
        case memoryBudgetExceeded(neededBytes: Int, budgetBytes: Int, waited: Bool)
    }

    /// Why an image could not be set on a target.
    public enum ImageSettingErrorReason: Sendable {
        /// The source given to the target is nil.
        case emptySource
        /// The result arrived for a source that is no longer the target's current one: the result or the
        /// error it had, and its source (Kingfisher's payload).
        indirect case notCurrentSourceTask(result: RetrieveImageResult?, error: HalcyonError?, source: Source)
        /// The data provider failed with its own error (a ``DataProviderFailure`` for Halcyon's providers).
        case dataProviderError(provider: any ImageDataProvider, error: any Error & Sendable)
        /// The main source and every alternative source failed; the errors are in the order tried.
        case alternativeSourcesExhausted([PropagationError])
    }

    // MARK: - Description

    /// A one-line, human-readable account of the error.
    public var description: String {
        switch self {
        case .requestError(let reason): return "request error: \(reason)"
        case .responseError(let reason): return "response error: \(reason)"
        case .cacheError(let reason): return "cache error: \(reason)"
        case .processorError(let reason): return "processor error: \(reason)"
        case .imageSettingError(let reason): return "image setting error: \(reason)"
        }
    }
}

extension HalcyonError.ProcessorErrorReason: CustomStringConvertible {
    public var description: String {
        switch self {
        case .emptyData:
            return "the data is empty"
        case .unsupportedFormat(let format):
            return "unsupported image format (\(format))"
        case .corruptData(let format, let message):
            return "corrupt \(format) data: \(message)"
        case .tooManyPixels(let width, let height, let frames, let limit):
            let frameText = frames > 1 ? " x \(frames) frames" : ""
            return "image of \(width)x\(height)\(frameText) pixels exceeds the limit of \(limit) pixels"
        case .tooManyFrames(let count, let limit):
            return "animation of \(Self.framesText(count)) frames exceeds the limit of \(limit) frames"
        case .encodeFailed(let format, let message):
            return "cannot encode \(format): \(message)"
        case .processingFailed(let processor, let item):
            let input = if case .data(let data) = item { "\(data.count) bytes" } else { "an image" }
            return "processor \(processor.identifier.isEmpty ? "(default)" : processor.identifier) failed on \(input)"
        case .operationFailed(let operation, let message):
            return "\(operation) failed: \(message)"
        case .invalidParameter(let processor, let message):
            return "\(processor): \(message)"
        case .invalidProcessorChain(let chain, let position, let message):
            return "bad processor chain at character \(position + 1) of \"\(chain)\": \(message)"
        case .engineUnavailable(let message):
            return "libvips could not start: \(message)"
        case .resultTooLarge(let width, let height, let frames, let limit):
            let frameText = frames > 1 ? " x \(frames) frames" : ""
            return "result of \(width)x\(height)\(frameText) pixels exceeds the limit of \(limit) pixels"
        case .memoryBudgetExceeded(let needed, let budget, let waited):
            let neededMB = (needed + 1_048_575) / 1_048_576, budgetMB = budget / 1_048_576
            return waited ? "\(neededMB) MB of image memory did not come free in time (budget \(budgetMB) MB)"
                : "the image needs \(neededMB) MB, more than the whole budget of \(budgetMB) MB"
        }
    }
}

extension HalcyonError.ProcessorErrorReason {
    /// A frame count as libvips reports it, for messages: "more than 4096" when libvips stopped counting
    /// (it reports 4097 for any longer animation), else the count.
    public static func framesText(_ count: Int) -> String {
        count > 4096 ? "more than 4096" : String(count)
    }
}
