import Foundation

/// Retrieves images: memory cache, then disk cache, then the network or a
/// provider, then processing, then the caches again.
///
/// Kingfisher's `KingfisherManager`, over the stages of the retrieve pipeline
/// (`Sources/Halcyon/Pipeline/README.md`). A memory hit is answered here, on
/// the caller's task; anything else is one *load image* stage: one disk
/// lookup (fresh, stale with validators, or miss), the original on disk
/// processed, or the source fetched (*fetch original data*: network or
/// provider, revalidation, blocklist), decoded and processed once (*fetch
/// original image*), and stored. Callers whose requests would give the same
/// result share each stage; a stage stops when its last caller leaves, and
/// runs at the highest priority of its callers. Failures go through the retry
/// strategy, then the alternative sources. Permanent network failures block
/// their URL until `.retryFailed`; any successful download (or 304) of a URL
/// unblocks it. Cached network images with validators are revalidated with
/// the server when expired or when `.refreshCached` asks. Thread-safe.
public final class HalcyonManager: Sendable {
    /// The shared manager, on ``ImageDownloader/default`` and ``ImageCache/default``.
    public static let shared = HalcyonManager(downloader: .default, cache: .default)

    private struct Settings {
        var downloader: ImageDownloader
        var dataLoader: (any DataLoading)?
        var cache: ImageCache
        var defaultOptions: HalcyonOptionsInfo = []
        var isLowDataMode = false
    }

    private let settings: Locked<Settings>
    let pipeline: ImagePipeline

    /// URLs that failed for good; see ``FailedURLBlocklist``.
    public var failedURLs: FailedURLBlocklist { pipeline.failedURLs }

    /// The bounded queues this manager decodes and processes on.
    public var queues: PipelineQueues { pipeline.queues }

    /// How many decode-and-process stages are running or shared with waiting callers (0 when the manager is idle).
    var processingInFlightCount: Int { pipeline.fetchImageStage.inFlightCount }

    /// How many load and fetch stages are running (0 when the manager is idle).
    var loadsInFlightCount: Int { pipeline.loadImageStage.inFlightCount + pipeline.fetchDataStage.inFlightCount }

    /// Makes a manager on a downloader and a cache, doing its CPU work on `queues`.
    public init(downloader: ImageDownloader, cache: ImageCache, queues: PipelineQueues = .shared) {
        settings = Locked(Settings(downloader: downloader, cache: cache))
        pipeline = ImagePipeline(queues: queues, failedURLs: FailedURLBlocklist())
    }

    /// Makes a manager whose network bytes come from `dataLoader` (for example without sockets, in tests).
    ///
    /// ``downloader`` is then a fresh default downloader used by nothing
    /// unless an option or a later assignment to ``dataLoader`` asks for it.
    public convenience init(dataLoader: any DataLoading, cache: ImageCache, queues: PipelineQueues = .shared) {
        self.init(downloader: ImageDownloader(name: "unused"), cache: cache, queues: queues)
        self.dataLoader = dataLoader
    }

    // MARK: - Settings

    /// The downloader for network sources unless an option names another.
    public var downloader: ImageDownloader {
        get { settings.withLock { $0.downloader } }
        set { settings.withLock { $0.downloader = newValue } }
    }

    /// Where network bytes come from; nil (the default) uses ``downloader``. A `.downloader` option wins over both.
    public var dataLoader: (any DataLoading)? {
        get { settings.withLock { $0.dataLoader } }
        set { settings.withLock { $0.dataLoader = newValue } }
    }

    /// The cache unless an option names another.
    public var cache: ImageCache {
        get { settings.withLock { $0.cache } }
        set { settings.withLock { $0.cache = newValue } }
    }

    /// Options put before every call's own (the call's win).
    public var defaultOptions: HalcyonOptionsInfo {
        get { settings.withLock { $0.defaultOptions } }
        set { settings.withLock { $0.defaultOptions = newValue } }
    }

    /// Whether the application is on a metered link: `.lowDataMode(source)` options then load that source.
    public var isLowDataMode: Bool {
        get { settings.withLock { $0.isLowDataMode } }
        set { settings.withLock { $0.isLowDataMode = newValue } }
    }

    /// The parsed options of a call: the defaults, then the call's items.
    public func parsedOptions(_ options: HalcyonOptionsInfo?) -> HalcyonParsedOptionsInfo {
        HalcyonParsedOptionsInfo(defaultOptions + (options ?? []))
    }

    // MARK: - Async API

    /// Retrieves the image of `source`; throws `HalcyonError`.
    ///
    /// Cancelling the calling task cancels the retrieval (a download shared
    /// with other callers goes on for them) and throws `requestError(.taskCancelled)`
    /// (`requestError(.dataProviderCancelled)` for a data provider's load).
    /// `progressBlock` runs on the main queue, as in Kingfisher, whatever the
    /// `.callbackQueue`, except with `.callbackQueue(.untouch)`: then on the
    /// thread that received the bytes. A program that does not run the main
    /// queue (see ``CallbackQueue``) should pass `.untouch`; calls still queued
    /// on the main queue may run after this returns.
    public func retrieveImage(
        with source: Source,
        options: HalcyonOptionsInfo? = nil,
        progressBlock: DownloadProgressBlock? = nil
    ) async throws(HalcyonError) -> RetrieveImageResult {
        try await retrieve(source, options: parsedOptions(options), progressBlock: progressBlock, attemptStarted: nil)
    }

    /// Retrieves the image of `resource` (a file URL is read from disk, not downloaded).
    public func retrieveImage(
        with resource: any Resource,
        options: HalcyonOptionsInfo? = nil,
        progressBlock: DownloadProgressBlock? = nil
    ) async throws(HalcyonError) -> RetrieveImageResult {
        try await retrieveImage(with: resource.convertToSource(), options: options, progressBlock: progressBlock)
    }

    // MARK: - Completion-handler API

    /// Retrieves the image of `source` and calls `completionHandler` once, on the options' callback queue.
    ///
    /// A memory hit (and, with `.loadDiskFileSynchronously`, a disk hit) is
    /// delivered before this returns. `downloadTaskUpdated` is handed the task
    /// of each attempt after the first (a retry or an alternative source): cancelling
    /// it stops that attempt alone (a download shared with other callers goes on for them),
    /// and the retrieval then fails with `requestError(.taskCancelled)`.
    /// `progressBlock` runs on the main queue whatever the callback queue, except with `.callbackQueue(.untouch)`
    /// (then on the thread that received the bytes), which a server or command-line program that does not run
    /// the main queue passes.
    @discardableResult
    public func retrieveImage(
        with source: Source,
        options: HalcyonOptionsInfo? = nil,
        progressBlock: DownloadProgressBlock? = nil,
        downloadTaskUpdated: (@Sendable (RetrieveImageTask) -> Void)? = nil,
        completionHandler: (@Sendable (Result<RetrieveImageResult, HalcyonError>) -> Void)?
    ) -> RetrieveImageTask? {
        let parsed = parsedOptions(options)
        if let cached = synchronousCacheHit(source, options: parsed) {
            if let completionHandler { parsed.callbackQueue.execute { completionHandler(.success(cached)) } }
            return nil
        }
        let task = Task {
            let result: Result<RetrieveImageResult, HalcyonError>
            do throws(HalcyonError) {
                result = .success(try await self.retrieve(source, options: parsed, progressBlock: progressBlock, attemptStarted: downloadTaskUpdated))
            } catch {
                result = .failure(error)
            }
            if let completionHandler { parsed.callbackQueue.execute { completionHandler(result) } }
        }
        return RetrieveImageTask(cancelling: task, source: source)
    }

    /// Retrieves the image of `resource`; see ``retrieveImage(with:options:progressBlock:downloadTaskUpdated:completionHandler:)-(Source,_,_,_,_)``.
    @discardableResult
    public func retrieveImage(
        with resource: any Resource,
        options: HalcyonOptionsInfo? = nil,
        progressBlock: DownloadProgressBlock? = nil,
        downloadTaskUpdated: (@Sendable (RetrieveImageTask) -> Void)? = nil,
        completionHandler: (@Sendable (Result<RetrieveImageResult, HalcyonError>) -> Void)?
    ) -> RetrieveImageTask? {
        retrieveImage(with: resource.convertToSource(), options: options, progressBlock: progressBlock,
                      downloadTaskUpdated: downloadTaskUpdated, completionHandler: completionHandler)
    }

    // MARK: - Keys

    /// The cache key of `source` under `options` (the `cacheKeyFilter` applies to network sources).
    public func cacheKey(for source: Source, options: HalcyonParsedOptionsInfo) -> String {
        if case .network(let resource) = source, let filter = options.cacheKeyFilter {
            return filter(resource.downloadURL)
        }
        return source.cacheKey
    }

    // MARK: - Sources, retries and alternatives

    private func retrieve(
        _ source: Source,
        options: HalcyonParsedOptionsInfo,
        progressBlock: DownloadProgressBlock?,
        attemptStarted: (@Sendable (RetrieveImageTask) -> Void)?
    ) async throws(HalcyonError) -> RetrieveImageResult {
        let progressBlock = progressBlock.map { Self.progress($0, on: options.callbackQueue) }
        var options = options
        let previewer = Self.previewer(for: options)
        if let previewer { options.onDataReceived = (options.onDataReceived ?? []) + [previewer] }
        defer { previewer?.finish() }
        // A cancellation names the download it stopped (see AttemptDownloads).
        let downloads = AttemptDownloads()
        let result = await AttemptDownloads.$current.withValue(downloads) {
            // Cancelling stops the previews at once, not when the retrieval has unwound.
            await withTaskCancellationHandler { () async -> Result<RetrieveImageResult, HalcyonError> in
                do throws(HalcyonError) {
                    return .success(try await retrieveCandidates(source, options: options, progressBlock: progressBlock,
                                                                 attemptStarted: attemptStarted))
                } catch {
                    return .failure(error)
                }
            } onCancel: {
                previewer?.finish()
            }
        }
        return try result.mapError(downloads.attributing).get()
    }

    /// Tries the primary source (or the low data mode one), then each alternative source in turn.
    private func retrieveCandidates(
        _ source: Source,
        options: HalcyonParsedOptionsInfo,
        progressBlock: DownloadProgressBlock?,
        attemptStarted: (@Sendable (RetrieveImageTask) -> Void)?
    ) async throws(HalcyonError) -> RetrieveImageResult {
        var primary = source
        if isLowDataMode, let lowDataSource = options.lowDataModeSource {
            primary = lowDataSource
        }
        let candidates = [primary] + (options.alternativeSources ?? [])
        var failures: [PropagationError] = []
        for (index, candidate) in candidates.enumerated() {
            do {
                return try await retrieveWithRetry(candidate, originalSource: source, options: options, progressBlock: progressBlock,
                                                   attemptStarted: attemptStarted, announcesFirst: index > 0)
            } catch {
                if error.isTaskCancelled || Task.isCancelled { throw Self.cancelled(candidate) }
                failures.append(PropagationError(source: candidate, error: error))
            }
        }
        if let alternatives = options.alternativeSources, !alternatives.isEmpty {
            throw .imageSettingError(reason: .alternativeSourcesExhausted(failures))
        }
        guard let last = failures.last else { throw .imageSettingError(reason: .emptySource) }
        throw last.error
    }

    private func retrieveWithRetry(
        _ source: Source,
        originalSource: Source,
        options: HalcyonParsedOptionsInfo,
        progressBlock: DownloadProgressBlock?,
        attemptStarted: (@Sendable (RetrieveImageTask) -> Void)?,
        announcesFirst: Bool
    ) async throws(HalcyonError) -> RetrieveImageResult {
        var retriedCount = 0
        var userInfo: (any Sendable)?
        while true {
            do {
                let announce = announcesFirst || retriedCount > 0 ? attemptStarted : nil
                return try await attempt(source, originalSource: originalSource, options: options, progressBlock: progressBlock,
                                         announce: announce)
            } catch {
                guard !error.isTaskCancelled, !Task.isCancelled, let strategy = options.retryStrategy else { throw error }
                let context = RetryContext(source: source, error: error, retriedCount: retriedCount, userInfo: userInfo)
                switch await strategy.retry(context: context) {
                case .stop:
                    throw error
                case .retry(let info):
                    if Task.isCancelled { throw .requestError(reason: .taskCancelled(task: nil, token: nil)) }
                    retriedCount += 1
                    userInfo = info
                }
            }
        }
    }

    /// The error of a retrieval of `source` that was cancelled: Kingfisher's `dataProviderCancelled(provider:)` for a
    /// provider-backed load, `taskCancelled` otherwise.
    private static func cancelled(_ source: Source) -> HalcyonError {
        if case .provider(let provider) = source { return .requestError(reason: .dataProviderCancelled(provider: provider)) }
        return .requestError(reason: .taskCancelled(task: nil, token: nil))
    }

    /// The progressive JPEG previewer the options ask for: it hands previews to `onImageUpdated` on the callback queue
    /// unless the retrieval has ended by then.
    private static func previewer(for options: HalcyonParsedOptionsInfo) -> ProgressiveJPEGPreviewer? {
        guard let progressive = options.progressiveJPEG, let callback = progressive.onImageUpdated else { return nil }
        let queue = options.callbackQueue
        return ProgressiveJPEGPreviewer(settings: progressive, decoding: options.decodingOptions) { image, previewer in
            queue.execute { if !previewer.isFinished { callback(image) } }
        }
    }

    /// `block` called on the main queue, as Kingfisher calls download progress whatever the callback queue;
    /// with `.untouch` (the way to say the main queue is not run here) on the thread that received the bytes.
    private static func progress(_ block: @escaping DownloadProgressBlock, on queue: CallbackQueue) -> DownloadProgressBlock {
        if case .untouch = queue { return block }
        return { received, total in CallbackQueue.mainAsync.execute { block(received, total) } }
    }

    // MARK: - One attempt

    /// One attempt; with `announce`, run as its own task whose handle `announce` gets, so it can be cancelled alone.
    private func attempt(
        _ source: Source, originalSource: Source, options: HalcyonParsedOptionsInfo, progressBlock: DownloadProgressBlock?,
        announce: (@Sendable (RetrieveImageTask) -> Void)?
    ) async throws(HalcyonError) -> RetrieveImageResult {
        guard let announce else {
            return try await retrieveOnce(source, originalSource: originalSource, options: options, progressBlock: progressBlock)
        }
        let child = Task { () async -> Result<RetrieveImageResult, HalcyonError> in
            do throws(HalcyonError) {
                return .success(try await self.retrieveOnce(source, originalSource: originalSource, options: options, progressBlock: progressBlock))
            } catch {
                return .failure(error)
            }
        }
        announce(RetrieveImageTask(cancelling: child, source: source))
        let result = await withTaskCancellationHandler { await child.value } onCancel: { child.cancel() }
        if case .failure = result, child.isCancelled { throw .requestError(reason: .taskCancelled(task: nil, token: nil)) }
        return try result.get()
    }

    private func retrieveOnce(
        _ source: Source,
        originalSource: Source,
        options: HalcyonParsedOptionsInfo,
        progressBlock: DownloadProgressBlock?
    ) async throws(HalcyonError) -> RetrieveImageResult {
        if Task.isCancelled { throw .requestError(reason: .taskCancelled(task: nil, token: nil)) }
        AttemptDownloads.current?.startAttempt()
        let key = cacheKey(for: source, options: options)
        let context = AttemptContext(manager: self, source: source, originalSource: originalSource, key: key, options: options)
        if !options.forceRefresh, !(context.isNetwork && options.refreshCached),
           let image = context.targetCache.retrieveImageInMemoryCache(
               forKey: key, processorIdentifier: context.cacheIdentifier,
               extendingExpiration: options.memoryCacheAccessExtendingExpiration) {
            return context.result(try await finishDecoding(image, options: options, source: source), cacheType: .memory)
        }
        let (cache, loader) = settings.withLock { ($0.cache, $0.dataLoader ?? $0.downloader) }
        let request = PipelineRequest(source: source, key: key, options: options, cache: cache, loader: loader,
                                      progressBlock: progressBlock, exclusiveID: pipeline.nextExclusiveID)
        let loaded = try await pipeline.loadImage(request)
        return context.result(loaded.image, cacheType: loaded.cacheType, data: loaded.data, metrics: loaded.metrics)
    }

    /// A memory hit's lazily kept animation frames decoded when `.backgroundDecode` asks for it.
    private func finishDecoding(_ image: Image, options: HalcyonParsedOptionsInfo, source: Source) async throws(HalcyonError) -> Image {
        guard options.backgroundDecode, image.isLazilyDecoded else { return image }
        return try await pipeline.runCPU(on: pipeline.queues.decode, processingQueue: options.processingQueue, url: source.url) {
            () throws(HalcyonError) -> Image in try image.decodedInMemory()
        }
    }

    // MARK: - Synchronous hits

    /// A memory hit (or a disk hit with `.loadDiskFileSynchronously`) read on the calling thread.
    private func synchronousCacheHit(_ source: Source, options: HalcyonParsedOptionsInfo) -> RetrieveImageResult? {
        guard !options.forceRefresh, !(options.refreshCached && source.url.map { !$0.isFileURL } == true) else { return nil }
        if isLowDataMode && options.lowDataModeSource != nil { return nil }
        let key = cacheKey(for: source, options: options)
        let context = AttemptContext(manager: self, source: source, originalSource: source, key: key, options: options)
        let processorID = context.cacheIdentifier
        if let image = context.targetCache.retrieveImageInMemoryCache(
            forKey: key, processorIdentifier: processorID, extendingExpiration: options.memoryCacheAccessExtendingExpiration) {
            return context.result(image, cacheType: .memory)
        }
        guard options.loadDiskFileSynchronously, !options.fromMemoryCacheOrRefresh else { return nil }
        let hit = Locked<Image?>(nil)
        context.targetCache.retrieveImage(
            forKey: key, options: options, memoryExpiration: options.memoryCacheExpiration,
            memoryExpirationExtending: options.memoryCacheAccessExtendingExpiration,
            diskExpirationExtending: options.diskCacheAccessExtendingExpiration,
            loadDiskFileSynchronously: true, callbackQueue: nil
        ) { result in
            if case .success(let cached) = result { hit.withLock { $0 = cached.image } }
        }
        return hit.withLock { $0 }.map { context.result($0, cacheType: .disk) }
    }
}

// MARK: - Attempt context

/// Everything one attempt needs to know, computed once.
private struct AttemptContext: Sendable {
    let source: Source
    let originalSource: Source
    let key: String
    let options: HalcyonParsedOptionsInfo
    let targetCache: ImageCache
    /// The processor-and-frame-choice part of the cache key (``ImageCache/processorIdentifier(for:)``).
    let cacheIdentifier: String

    init(manager: HalcyonManager, source: Source, originalSource: Source, key: String, options: HalcyonParsedOptionsInfo) {
        self.source = source
        self.originalSource = originalSource
        self.key = key
        self.options = options
        targetCache = options.targetCache ?? manager.cache
        cacheIdentifier = ImageCache.processorIdentifier(for: options)
    }

    /// Throws `requestError(.taskCancelled)` when the current task is cancelled.
    func checkNotCancelled() throws(HalcyonError) {
        if Task.isCancelled { throw .requestError(reason: .taskCancelled(task: nil, token: nil)) }
    }

    var isNetwork: Bool {
        if case .network = source { return true }
        return false
    }

    /// The result for `image`, with the options' modifier applied (never cached).
    func result(_ image: Image, cacheType: CacheType, data: Data? = nil, metrics: NetworkMetrics? = nil) -> RetrieveImageResult {
        let modified = options.imageModifier?.modify(image) ?? image
        return RetrieveImageResult(image: modified, cacheType: cacheType, source: source, originalSource: originalSource,
                                   originalData: data, metrics: metrics, serializer: options.cacheSerializer)
    }
}

extension HalcyonError {
    /// Whether this error reports a cancelled task.
    public var isTaskCancelled: Bool {
        if case .requestError(reason: .taskCancelled) = self { return true }
        return false
    }
}
