import Foundation

/// Retrieves images: memory cache, then disk cache, then the network or a
/// provider, then processing, then the caches again.
///
/// The flow (see DESIGN.md): a memory hit is `.memory`; a disk hit of the
/// processed image is `.disk`; with a processor, a disk hit of the original
/// is processed, stored and returned as `.disk`; otherwise the source is
/// loaded (downloads are coalesced by the downloader), processed (coalesced
/// here per cache key and processor, so callers asking for the same result
/// share one run) and stored. Failures go through the retry strategy, then
/// the alternative sources. Permanent network failures block their URL until
/// `.retryFailed`; any successful download (or 304) of a URL unblocks it. Cached network images with validators are revalidated with
/// the server when expired or when `.refreshCached` asks. Thread-safe.
public final class HalcyonManager: Sendable {
    /// The shared manager, on ``ImageDownloader/default`` and ``ImageCache/default``.
    public static let shared = HalcyonManager(downloader: .default, cache: .default)

    private struct Settings {
        var downloader: ImageDownloader
        var cache: ImageCache
        var defaultOptions: HalcyonOptionsInfo = []
        var isLowDataMode = false
    }

    private let settings: Locked<Settings>
    private let processingCoalescer = TaskCoalescer<Image>()
    private let loadCoalescer = TaskCoalescer<LoadedImage>()
    private let processingQueue = DispatchQueue(label: "halcyon.manager.processing", qos: .userInitiated, attributes: .concurrent)

    /// URLs that failed for good; see ``FailedURLBlocklist``.
    public let failedURLs = FailedURLBlocklist()

    /// How many processing jobs are running or shared with waiting callers (0 when the manager is idle).
    var processingInFlightCount: Int { processingCoalescer.inFlightCount }

    /// How many shared network loads (download, process, store) are running (0 when the manager is idle).
    var loadsInFlightCount: Int { loadCoalescer.inFlightCount }

    /// Makes a manager on a downloader and a cache.
    public init(downloader: ImageDownloader, cache: ImageCache) {
        settings = Locked(Settings(downloader: downloader, cache: cache))
    }

    // MARK: - Settings

    /// The downloader for network sources unless an option names another.
    public var downloader: ImageDownloader {
        get { settings.withLock { $0.downloader } }
        set { settings.withLock { $0.downloader = newValue } }
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
    /// with other callers goes on for them) and throws `requestError(.taskCancelled)`.
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
    /// delivered before this returns. `downloadTaskUpdated` is called with
    /// each new source tried after the first: a retry or an alternative source.
    @discardableResult
    public func retrieveImage(
        with source: Source,
        options: HalcyonOptionsInfo? = nil,
        progressBlock: DownloadProgressBlock? = nil,
        downloadTaskUpdated: (@Sendable (Source) -> Void)? = nil,
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
        return RetrieveImageTask(task: task)
    }

    /// Retrieves the image of `resource`; see ``retrieveImage(with:options:progressBlock:downloadTaskUpdated:completionHandler:)-(Source,_,_,_,_)``.
    @discardableResult
    public func retrieveImage(
        with resource: any Resource,
        options: HalcyonOptionsInfo? = nil,
        progressBlock: DownloadProgressBlock? = nil,
        downloadTaskUpdated: (@Sendable (Source) -> Void)? = nil,
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
        attemptStarted: (@Sendable (Source) -> Void)?
    ) async throws(HalcyonError) -> RetrieveImageResult {
        var primary = source
        if isLowDataMode, let lowDataSource = options.lowDataModeSource {
            primary = lowDataSource
        }
        let candidates = [primary] + (options.alternativeSources ?? [])
        var failures: [PropagationError] = []
        for (index, candidate) in candidates.enumerated() {
            if index > 0 { attemptStarted?(candidate) }
            do {
                return try await retrieveWithRetry(candidate, originalSource: source, options: options,
                                                   progressBlock: progressBlock, attemptStarted: attemptStarted)
            } catch {
                if error.isTaskCancelled || Task.isCancelled { throw .requestError(reason: .taskCancelled(url: candidate.url)) }
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
        attemptStarted: (@Sendable (Source) -> Void)?
    ) async throws(HalcyonError) -> RetrieveImageResult {
        var retriedCount = 0
        var userInfo: (any Sendable)?
        while true {
            do {
                return try await retrieveOnce(source, originalSource: originalSource, options: options, progressBlock: progressBlock)
            } catch {
                guard !error.isTaskCancelled, !Task.isCancelled, let strategy = options.retryStrategy else { throw error }
                let context = RetryContext(source: source, error: error, retriedCount: retriedCount, userInfo: userInfo)
                switch await strategy.retry(context: context) {
                case .stop:
                    throw error
                case .retry(let info):
                    if Task.isCancelled { throw .requestError(reason: .taskCancelled(url: source.url)) }
                    retriedCount += 1
                    userInfo = info
                    attemptStarted?(source)
                }
            }
        }
    }

    // MARK: - One attempt

    private func retrieveOnce(
        _ source: Source,
        originalSource: Source,
        options: HalcyonParsedOptionsInfo,
        progressBlock: DownloadProgressBlock?
    ) async throws(HalcyonError) -> RetrieveImageResult {
        if Task.isCancelled { throw .requestError(reason: .taskCancelled(url: source.url)) }
        let key = cacheKey(for: source, options: options)
        let context = AttemptContext(manager: self, source: source, originalSource: originalSource, key: key, options: options)

        if !options.forceRefresh, let cached = try await cachedResult(context) {
            return cached
        }
        if options.onlyFromCache {
            throw .cacheError(reason: .imageNotExisting(key: key))
        }
        let loaded: LoadedImage
        if case .network(let resource) = source, let sharingKey = loadSharingKey(context, progressBlock: progressBlock) {
            loaded = try await sharedLoad(resource.downloadURL, sharingKey: sharingKey, context: context)
        } else {
            loaded = try await load(context, progressBlock: progressBlock)
        }
        return context.result(loaded.image, cacheType: loaded.cacheType, data: loaded.data, metrics: loaded.metrics)
    }

    /// An image loaded from its source (or revalidated), processed and stored; not yet modified for its caller.
    private struct LoadedImage: Sendable {
        let image: Image
        let cacheType: CacheType
        let data: Data?
        let metrics: NetworkMetrics?
    }

    /// The key under which callers share a whole network load, or nil when this caller must load alone.
    ///
    /// Loads are shared by the processed cache key, the caches, the downloader
    /// and whether the caller skips the cache (`forceRefresh`, `refreshCached`). A caller with a progress block, a request modifier or
    /// a redirect handler loads alone: its download still coalesces with others
    /// of the same request in the downloader, and it sees its own progress.
    private func loadSharingKey(_ context: AttemptContext, progressBlock: DownloadProgressBlock?) -> String? {
        let options = context.options
        guard progressBlock == nil, options.requestModifier == nil, options.redirectHandler == nil else { return nil }
        let downloader = options.downloader ?? self.downloader
        let identities = [ObjectIdentifier(context.targetCache), ObjectIdentifier(context.originalCache), ObjectIdentifier(downloader)]
            .map { String(UInt(bitPattern: $0), radix: 36) }
        let processed = ImageCache.computedKey(context.key, processorIdentifier: context.cacheIdentifier)
        let skipsCache = options.forceRefresh || options.refreshCached
        return identities.joined(separator: ":") + (skipsCache ? ":refresh:" : ":") + processed
    }

    /// Downloads, processes and stores once for every caller with the same sharing key.
    ///
    /// The memory cache is read again when the shared load starts: a load that
    /// ended a moment ago has stored its image there (before it was removed
    /// from the coalescer), so no caller downloads an image that just arrived.
    private func sharedLoad(_ url: URL, sharingKey: String, context: AttemptContext) async throws(HalcyonError) -> LoadedImage {
        do {
            return try await loadCoalescer.value(forKey: sharingKey) {
                let options = context.options
                if !options.forceRefresh, !options.refreshCached, let image = context.targetCache.retrieveImageInMemoryCache(
                    forKey: context.key, processorIdentifier: context.cacheIdentifier,
                    extendingExpiration: options.memoryCacheAccessExtendingExpiration) {
                    return LoadedImage(image: image, cacheType: .memory, data: nil, metrics: nil)
                }
                return try await self.load(context, progressBlock: nil)
            }
        } catch let error as HalcyonError {
            throw error
        } catch {
            throw .requestError(reason: .taskCancelled(url: url))
        }
    }

    /// Loads the source's bytes (or revalidates the cached entry), processes them and stores the result.
    private func load(_ context: AttemptContext, progressBlock: DownloadProgressBlock?) async throws(HalcyonError) -> LoadedImage {
        let source = context.source
        let loaded: LoadedData
        switch source {
        case .network(let resource):
            switch try await download(resource.downloadURL, context: context, progressBlock: progressBlock) {
            case .loaded(let data):
                loaded = data
            case .notModified(let image):
                return LoadedImage(image: image, cacheType: .disk, data: nil, metrics: nil)
            }
        case .provider(let provider):
            loaded = LoadedData(data: try await providedData(provider), response: nil, metrics: nil)
        }
        let image: Image
        do {
            image = try await process(.data(loaded.data), context: context)
        } catch {
            if case .network(let resource) = source, FailedURLBlocklist.isPermanent(error) {
                failedURLs.insert(resource.downloadURL)
            }
            throw error
        }
        try await store(image, original: loaded.data, response: loaded.response, context: context)
        return LoadedImage(image: image, cacheType: .none, data: loaded.data, metrics: loaded.metrics)
    }

    /// A hit in the memory or disk cache, processing an original from disk when needed.
    private func cachedResult(_ context: AttemptContext) async throws(HalcyonError) -> RetrieveImageResult? {
        let options = context.options
        if options.refreshCached && context.isNetwork { return nil }
        if options.fromMemoryCacheOrRefresh {
            guard let image = context.targetCache.retrieveImageInMemoryCache(
                forKey: context.key, processorIdentifier: context.cacheIdentifier,
                extendingExpiration: options.memoryCacheAccessExtendingExpiration) else { return nil }
            return context.result(image, cacheType: .memory)
        }
        let cached = try await context.targetCache.retrieveImage(
            forKey: context.key, options: options,
            memoryExpiration: options.memoryCacheExpiration,
            memoryExpirationExtending: options.memoryCacheAccessExtendingExpiration,
            diskExpirationExtending: options.diskCacheAccessExtendingExpiration)
        if let image = cached.image {
            let decoded = try await finishDecoding(image, options: options)
            try context.checkNotCancelled()
            return context.result(decoded, cacheType: cached.cacheType)
        }
        guard !options.processor.identifier.isEmpty else { return nil }
        guard let original = try await context.originalCache.retrieveOriginalImageInDiskCache(
            forKey: context.key, options: options,
            extendingExpiration: options.diskCacheAccessExtendingExpiration) else { return nil }
        let image = try await process(.image(original), context: context)
        try await store(image, original: nil, response: nil, context: context)
        return context.result(image, cacheType: .disk)
    }

    // MARK: - Loading

    private struct LoadedData {
        let data: Data
        let response: ImageDownloadResponse?
        let metrics: NetworkMetrics?
    }

    private enum DownloadOutcome {
        case loaded(LoadedData)
        case notModified(Image)
    }

    /// Downloads `url`, revalidating a cached entry with validators when it is stale or `.refreshCached` asks.
    private func download(_ url: URL, context: AttemptContext, progressBlock: DownloadProgressBlock?) async throws(HalcyonError) -> DownloadOutcome {
        let options = context.options
        if !options.retryFailed && failedURLs.contains(url) {
            throw .requestError(reason: .blockedURL(url: url))
        }
        let stale = options.forceRefresh ? nil : try? await staleEntryWithValidators(context)
        var modifier = options.requestModifier
        if let stale {
            modifier = ConditionalRequestModifier(base: options.requestModifier, metadata: stale.metadata)
        }
        let downloadOptions = DownloadOptions(
            requestModifier: modifier,
            redirectHandler: options.redirectHandler,
            downloadPriority: options.downloadPriority,
            processingOptions: options,
            callbackQueue: .untouch,
            progressBlock: progressBlock)
        let downloader = options.downloader ?? self.downloader
        do throws(HalcyonError) {
            let loaded = try await downloader.downloadData(with: url, options: downloadOptions)
            failedURLs.remove(url)
            return .loaded(LoadedData(data: loaded.data, response: loaded.response, metrics: loaded.metrics))
        } catch {
            if let stale, case .responseError(reason: .notModified) = error {
                failedURLs.remove(url)
                return .notModified(try await revalidated(stale, context: context))
            }
            if FailedURLBlocklist.isPermanent(error) { failedURLs.insert(url) }
            throw error
        }
    }

    /// The cached entry for this attempt when it carries validators and needs revalidation.
    private func staleEntryWithValidators(_ context: AttemptContext) async throws(HalcyonError) -> DiskStorage.Entry? {
        guard let entry = try await context.targetCache.diskEntry(
            forKey: context.key, processorIdentifier: context.cacheIdentifier, includingExpired: true) else { return nil }
        guard entry.metadata.etag != nil || entry.metadata.lastModified != nil else { return nil }
        return context.options.refreshCached || entry.isExpired() ? entry : nil
    }

    /// A 304 answer: keep the entry, give it a new expiration, and use it.
    private func revalidated(_ entry: DiskStorage.Entry, context: AttemptContext) async throws(HalcyonError) -> Image {
        let options = context.options
        let processorID = context.cacheIdentifier
        try await context.targetCache.extendDiskExpiration(forKey: context.key, processorIdentifier: processorID, to: options.diskCacheExpiration)
        let image = try await onProcessingQueue(options) { () throws(HalcyonError) -> Image in
            try options.cacheSerializer.image(with: entry.data, options: options)
        }
        context.targetCache.memoryStorage.store(
            value: image, forKey: ImageCache.computedKey(context.key, processorIdentifier: processorID),
            expiration: options.memoryCacheExpiration)
        return image
    }

    private func providedData(_ provider: any ImageDataProvider) async throws(HalcyonError) -> Data {
        do {
            return try await provider.data()
        } catch let error as HalcyonError {
            throw error
        } catch is CancellationError {
            throw .requestError(reason: .taskCancelled(url: provider.contentURL))
        } catch {
            throw .imageSettingError(reason: .dataProviderError(message: "\(provider.cacheKey): \(error)"))
        }
    }

    // MARK: - Processing

    /// Processes `item` once per cache key and processor, however many callers ask at once.
    private func process(_ item: ImageProcessItem, context: AttemptContext) async throws(HalcyonError) -> Image {
        let options = context.options
        let processor = options.processor
        let key = ImageCache.computedKey(context.key, processorIdentifier: context.cacheIdentifier)
        do {
            return try await processingCoalescer.value(forKey: key) {
                try await self.onProcessingQueue(options) { () throws(HalcyonError) -> Image in
                    let image = try processor.process(item: item, options: options)
                    return options.backgroundDecode ? try image.decodedInMemory() : image
                }
            }
        } catch let error as HalcyonError {
            throw error
        } catch {
            throw .requestError(reason: .taskCancelled(url: context.source.url))
        }
    }

    /// Decodes lazily kept animation frames when `.backgroundDecode` asks for it.
    private func finishDecoding(_ image: Image, options: HalcyonParsedOptionsInfo) async throws(HalcyonError) -> Image {
        guard options.backgroundDecode, image.isLazilyDecoded else { return image }
        return try await onProcessingQueue(options) { () throws(HalcyonError) -> Image in try image.decodedInMemory() }
    }

    /// Runs `body` on the options' processing queue, or on the manager's own.
    ///
    /// Cancelling the calling task stops the libvips work in `body` (see
    /// ``RenderCancellation``); this returns only once `body` has returned.
    private func onProcessingQueue<T: Sendable>(
        _ options: HalcyonParsedOptionsInfo,
        _ body: @escaping @Sendable () throws(HalcyonError) -> T
    ) async throws(HalcyonError) -> T {
        try await RenderCancellation.perform(on: options.processingQueue ?? .dispatch(processingQueue), body)
    }

    // MARK: - Storing

    /// Stores a result in the caches; a cancelled task stores nothing and throws `taskCancelled`.
    private func store(_ image: Image, original: Data?, response: ImageDownloadResponse?, context: AttemptContext) async throws(HalcyonError) {
        try context.checkNotCancelled()
        let options = context.options
        let processorID = context.cacheIdentifier
        let metadata = CacheEntryMetadata(
            originalKey: context.key,
            contentType: response?.value(forHTTPHeaderField: "content-type"),
            etag: response?.value(forHTTPHeaderField: "etag"),
            lastModified: response?.value(forHTTPHeaderField: "last-modified"),
            cacheControl: response?.value(forHTTPHeaderField: "cache-control"))
        let target = context.targetCache
        let toDisk = !options.cacheMemoryOnly
        let storeOriginal = options.cacheOriginalImage && !options.processor.identifier.isEmpty && toDisk && original != nil
        if options.waitForCache {
            try await target.store(image, original: original, forKey: context.key, processorIdentifier: processorID,
                                   cacheSerializer: options.cacheSerializer, toDisk: toDisk,
                                   memoryExpiration: options.memoryCacheExpiration, diskExpiration: options.diskCacheExpiration,
                                   metadata: metadata, forcedExtension: options.forcedExtension,
                                   syncsWrites: options.diskStoreWriteOptions.contains(.syncsWrites))
            if storeOriginal, let original {
                try await context.originalCache.storeToDisk(original, forKey: context.key, expiration: options.diskCacheExpiration,
                                                            metadata: metadata, forcedExtension: options.forcedExtension)
            }
            return
        }
        target.store(image, original: original, forKey: context.key, processorIdentifier: processorID,
                     cacheSerializer: options.cacheSerializer, toDisk: toDisk,
                     memoryExpiration: options.memoryCacheExpiration, diskExpiration: options.diskCacheExpiration,
                     metadata: metadata, forcedExtension: options.forcedExtension,
                     syncsWrites: options.diskStoreWriteOptions.contains(.syncsWrites), callbackQueue: nil, completionHandler: nil)
        if storeOriginal, let original {
            context.originalCache.storeToDisk(original, forKey: context.key, expiration: options.diskCacheExpiration,
                                              metadata: metadata, forcedExtension: options.forcedExtension,
                                              callbackQueue: nil, completionHandler: nil)
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
    let originalCache: ImageCache
    /// The processor-and-frame-choice part of the cache key (``ImageCache/processorIdentifier(for:)``).
    let cacheIdentifier: String

    init(manager: HalcyonManager, source: Source, originalSource: Source, key: String, options: HalcyonParsedOptionsInfo) {
        self.source = source
        self.originalSource = originalSource
        self.key = key
        self.options = options
        targetCache = options.targetCache ?? manager.cache
        originalCache = options.originalCache ?? targetCache
        cacheIdentifier = ImageCache.processorIdentifier(for: options)
    }

    /// Throws `requestError(.taskCancelled)` when the current task is cancelled.
    func checkNotCancelled() throws(HalcyonError) {
        if Task.isCancelled { throw .requestError(reason: .taskCancelled(url: source.url)) }
    }

    var isNetwork: Bool {
        if case .network = source { return true }
        return false
    }

    /// The result for `image`, with the options' modifier applied (never cached).
    func result(_ image: Image, cacheType: CacheType, data: Data? = nil, metrics: NetworkMetrics? = nil) -> RetrieveImageResult {
        let modified = options.imageModifier?.modify(image) ?? image
        return RetrieveImageResult(image: modified, cacheType: cacheType, source: source, originalSource: originalSource,
                                   data: data, metrics: metrics)
    }
}

extension HalcyonError {
    /// Whether this error reports a cancelled task.
    public var isTaskCancelled: Bool {
        if case .requestError(reason: .taskCancelled) = self { return true }
        return false
    }
}
