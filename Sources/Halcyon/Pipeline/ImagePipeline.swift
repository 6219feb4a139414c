import Foundation

/// An image as a retrieve attempt produced it, before the caller's image modifier.
struct LoadedImage: Sendable {
    let image: Image
    let cacheType: CacheType
    let data: Data?
    let metrics: NetworkMetrics?
}

/// The retrieve path behind ``HalcyonManager``: three stages, each coalesced by its typed key.
///
/// - *Load image* (``LoadImageKey``): one cache lookup (memory was read by
///   the caller; disk processed: fresh, stale with validators, or miss), then
///   the original on disk processed, then a fetch; stores the result under
///   the request's write policy.
/// - *Fetch original image* (``FetchImageKey``): the bytes decoded (and run
///   through the processor, which may shrink on load) once for every request
///   with the same processor and decoding options.
/// - *Fetch original data* (``FetchDataKey``): network or provider bytes,
///   conditional when revalidating (304 is a value), the failed-URL blocklist.
///
/// A stage's work is cancelled when its last subscriber leaves, and its
/// priority follows its subscribers (see ``PipelineStage``). CPU work runs on
/// the bounded ``PipelineQueues``, under a ``RenderCancellation`` so that
/// cancelling stops libvips. Thread-safe.
final class ImagePipeline: Sendable {
    let queues: PipelineQueues
    let failedURLs: FailedURLBlocklist
    let loadImageStage = PipelineStage<LoadImageKey, LoadedImage>()
    let fetchImageStage = PipelineStage<FetchImageKey, FetchedImage>()
    let fetchDataStage = PipelineStage<FetchDataKey, FetchedDataResult>()
    private let exclusiveCounter = Locked<UInt64>(0)

    init(queues: PipelineQueues, failedURLs: FailedURLBlocklist) {
        self.queues = queues
        self.failedURLs = failedURLs
    }

    /// A number for a load that must not be shared.
    func nextExclusiveID() -> UInt64 {
        exclusiveCounter.withLock { value in
            value &+= 1
            return value
        }
    }

    /// How many stage entries run, all stages together (0 when idle).
    var inFlightCount: Int {
        loadImageStage.inFlightCount + fetchImageStage.inFlightCount + fetchDataStage.inFlightCount
    }

    // MARK: - Load image

    /// Runs the attempt `request`, sharing it with equal attempts in flight.
    func loadImage(_ request: PipelineRequest) async throws(HalcyonError) -> LoadedImage {
        try await Self.mapped(request) {
            try await self.loadImageStage.value(forKey: request.loadKey, priority: request.priority) { priority in
                try await self.runLoadImage(request, priority: priority)
            }
        }
    }

    private func runLoadImage(_ request: PipelineRequest, priority: LoadPriority) async throws(HalcyonError) -> LoadedImage {
        var stale: StaleCacheEntry?
        if !request.reads.skipsCache {
            switch try await lookup(request) {
            case .hit(let image, let cacheType):
                return LoadedImage(image: try await finishDecoding(image, request), cacheType: cacheType, data: nil, metrics: nil)
            case .stale(let entry):
                stale = entry
            case .miss:
                break
            }
            // An original kept on disk is used before a stale processed entry is revalidated.
            if let image = try await processedOriginal(request) {
                return LoadedImage(image: image, cacheType: .disk, data: nil, metrics: nil)
            }
        }
        if request.reads.onlyFromCache { throw .cacheError(reason: .imageNotExisting(key: request.key)) }
        switch try await fetchImage(request, validators: stale?.validators, priority: priority) {
        case .notModified:
            guard let stale else { throw .responseError(reason: .notModified(url: request.source.url ?? Self.placeholderURL)) }
            return LoadedImage(image: try await revalidated(stale, request), cacheType: .disk, data: nil, metrics: nil)
        case .image(let fetched):
            try await store(fetched.image, original: fetched.data.data, response: fetched.data.response, request)
            return LoadedImage(image: fetched.image, cacheType: .none, data: fetched.data.data, metrics: fetched.data.metrics)
        }
    }

    /// The attempt's one cache read; with `.refreshCached`, an unreadable entry is a miss (the server is asked anyway).
    private func lookup(_ request: PipelineRequest) async throws(HalcyonError) -> CacheLookupResult {
        do throws(HalcyonError) {
            return try await request.targetCache.lookup(request.lookup)
        } catch {
            guard request.reads.forcesRevalidation, case .cacheError = error else { throw error }
            return .miss
        }
    }

    /// A 304 answer: the entry is re-dated, and the bytes the lookup read are decoded and put into memory.
    private func revalidated(_ stale: StaleCacheEntry, _ request: PipelineRequest) async throws(HalcyonError) -> Image {
        let lookup = request.lookup
        try await request.targetCache.extendDiskExpiration(
            forKey: request.key, processorIdentifier: request.diskProcessorIdentifier,
            forcedExtension: lookup.forcedExtension, to: request.writePolicy.diskExpiration)
        let serializer = lookup.serializer
        let decoding = lookup.decoding
        let processed = !request.processor.identifier.isEmpty
        let image = try await runCPU(on: queues.decode, request) { () throws(HalcyonError) -> Image in
            try ImageCache.reprocessed(try serializer.image(with: stale.data, options: decoding), underProcessedKey: processed,
                                       serializer: serializer, decoding: decoding)
        }
        if Task.isCancelled { throw request.cancelled }
        request.targetCache.storeRevalidated(image, lookup: lookup)
        return image
    }

    /// The unprocessed original (from memory, else from disk), processed and stored; nil without a processor or an original.
    ///
    /// Memory comes first, as in Kingfisher: an original retrieved a moment ago
    /// is there at once, while its disk write may still be under way.
    private func processedOriginal(_ request: PipelineRequest) async throws(HalcyonError) -> Image? {
        guard !request.processor.identifier.isEmpty, request.reads.readsDisk, !request.reads.forcesRevalidation else { return nil }
        guard let original = try await unprocessedOriginal(request) else { return nil }
        let processor = request.processor
        let context = request.processing
        let image = try await runCPU(on: queues.process, request) { () throws(HalcyonError) -> Image in
            let image = try processor.processAttributingFailure(item: .image(original), options: context)
            return context.backgroundDecode ? try image.decodedInMemory() : image
        }
        try await store(image, original: nil, response: nil, request)
        return image
    }

    /// The request's source decoded without its processor: the memory entry, else the original kept on disk.
    private func unprocessedOriginal(_ request: PipelineRequest) async throws(HalcyonError) -> Image? {
        var unprocessed = request.originalRead
        unprocessed.processor = DefaultImageProcessor.default
        if let image = request.originalCache.retrieveImageInMemoryCache(
            forKey: request.key, processorIdentifier: ImageCache.processorIdentifier(for: unprocessed),
            extendingExpiration: request.reads.memoryExtending) {
            return image
        }
        return try await request.originalCache.retrieveOriginalImageInDiskCache(
            forKey: request.key, options: request.originalRead, extendingExpiration: request.reads.diskExtending)
    }

    /// Decodes lazily kept animation frames when `.backgroundDecode` asks for it.
    private func finishDecoding(_ image: Image, _ request: PipelineRequest) async throws(HalcyonError) -> Image {
        guard request.processing.backgroundDecode, image.isLazilyDecoded else { return image }
        return try await runCPU(on: queues.decode, request) { () throws(HalcyonError) -> Image in try image.decodedInMemory() }
    }

    // MARK: - Storing

    /// Stores a result under the request's write policy; a cancelled load stores nothing and throws `taskCancelled`.
    private func store(_ image: Image, original: Data?, response: ImageDownloadResponse?, _ request: PipelineRequest) async throws(HalcyonError) {
        if Task.isCancelled { throw request.cancelled }
        let metadata = CacheEntryMetadata(
            originalKey: request.key,
            contentType: response?.value(forHTTPHeaderField: "content-type"),
            etag: response?.value(forHTTPHeaderField: "etag"),
            lastModified: response?.value(forHTTPHeaderField: "last-modified"),
            cacheControl: response?.value(forHTTPHeaderField: "cache-control"))
        let policy = request.writePolicy
        try await request.targetCache.store(image, original: original, forKey: request.key,
                                            memoryIdentifier: request.processorIdentifier,
                                            diskIdentifier: request.diskProcessorIdentifier, policy: policy, metadata: metadata)
        if policy.storesOriginal, !request.processor.identifier.isEmpty, let original {
            if Task.isCancelled { throw request.cancelled }
            try await request.originalCache.storeOriginal(original, forKey: request.key, policy: policy, metadata: metadata)
        }
    }

    // MARK: - Running

    /// Runs `body` on `queue` (or the request's own processing queue) so that cancelling the task stops it.
    func runCPU<T: Sendable>(
        on queue: WorkQueue, _ request: PipelineRequest, _ body: @escaping @Sendable () throws(HalcyonError) -> T
    ) async throws(HalcyonError) -> T {
        try await runCPU(on: queue, processingQueue: request.processingQueue, url: request.source.url, body)
    }

    /// Runs `body` on `processingQueue` when given, else on `queue`; a cancellation throws `taskCancelled` for `url`.
    func runCPU<T: Sendable>(
        on queue: WorkQueue, processingQueue: CallbackQueue?, url: URL?, _ body: @escaping @Sendable () throws(HalcyonError) -> T
    ) async throws(HalcyonError) -> T {
        do throws(HalcyonError) {
            if let processingQueue { return try await RenderCancellation.perform(on: processingQueue, body) }
            return try await RenderCancellation.perform(on: queue, body)
        } catch {
            throw error.isTaskCancelled ? .requestError(reason: .taskCancelled(task: nil, token: nil)) : error
        }
    }

    /// The stage call `body` with its errors as `HalcyonError` (a cancelled subscriber: `taskCancelled`).
    static func mapped<T>(_ request: PipelineRequest, _ body: () async throws -> T) async throws(HalcyonError) -> T {
        do {
            return try await body()
        } catch let error as HalcyonError {
            throw error.isTaskCancelled ? request.cancelled : error
        } catch {
            throw request.cancelled
        }
    }

    static let placeholderURL = URL(fileURLWithPath: "/")
}
