import Foundation
import Tracing

/// One retrieve attempt as the pipeline sees it: the caller's options parsed once into narrow parts.
///
/// Processors and serializers get ``processing``, a copy of the options with
/// only the decoding fields and the processor set, so nothing outside the
/// stage keys can change what they produce; the cache gets a
/// ``CacheLookup`` and a ``CacheWritePolicy``; the loader gets a
/// ``DataLoadingRequest``.
struct PipelineRequest: Sendable {
    let source: Source
    /// The source's cache key (after `cacheKeyFilter`).
    let key: String
    let processor: any ImageProcessor
    /// The processor-and-frame part of the memory key.
    let processorIdentifier: String
    /// The same part of the disk key: without the frame choice when there is no processor, so both frame
    /// choices share the entry of the source's bytes (``ImageCache/diskProcessorIdentifier(for:)``).
    let diskProcessorIdentifier: String
    /// What processors and serializers are given.
    let processing: HalcyonParsedOptionsInfo
    /// What the read of a kept original is given: ``processing`` with the serializer and the forced extension.
    let originalRead: HalcyonParsedOptionsInfo
    let targetCache: ImageCache
    let originalCache: ImageCache
    let writePolicy: CacheWritePolicy
    let reads: CacheReadPolicy
    let memoryExpiration: StorageExpiration?
    let loader: any DataLoading
    let requestModifier: (any AsyncImageDownloadRequestModifier)?
    let redirectHandler: (any ImageDownloadRedirectHandler)?
    let progressBlock: DownloadProgressBlock?
    /// `.onDataReceived`'s side effects.
    let dataReceivers: [any DataReceivingSideEffect]
    /// The caller's queue for processing (`.processingQueue`), or nil for the pipeline's bounded queues.
    let processingQueue: CallbackQueue?
    let dataKey: FetchDataKey
    let priority: LoadPriority
    /// The caller's trace context when the attempt began: the parent of the stages' spans (a coalesced stage
    /// belongs to the attempt that started it).
    let serviceContext: ServiceContext

    init(source: Source, key: String, options: HalcyonParsedOptionsInfo, cache: ImageCache, loader: any DataLoading,
         progressBlock: DownloadProgressBlock?, exclusiveID: () -> UInt64) {
        self.source = source
        self.key = key
        processor = options.processor
        processorIdentifier = ImageCache.processorIdentifier(for: options)
        diskProcessorIdentifier = ImageCache.diskProcessorIdentifier(for: options)
        processing = options.processingContext
        var originalRead = processing
        originalRead.cacheSerializer = options.cacheSerializer
        originalRead.forcedExtension = options.forcedExtension
        self.originalRead = originalRead
        targetCache = options.targetCache ?? cache
        originalCache = options.originalCache ?? targetCache
        writePolicy = CacheWritePolicy(options)
        let isNetwork = source.isNetwork
        reads = CacheReadPolicy(
            skipsCache: options.forceRefresh, readsDisk: !options.fromMemoryCacheOrRefresh,
            onlyFromCache: options.onlyFromCache, revalidates: isNetwork,
            forcesRevalidation: isNetwork && options.refreshCached,
            memoryExtending: options.memoryCacheAccessExtendingExpiration,
            diskExtending: options.diskCacheAccessExtendingExpiration)
        memoryExpiration = options.memoryCacheExpiration
        self.loader = options.downloader ?? loader
        requestModifier = options.requestModifier
        redirectHandler = options.redirectHandler
        self.progressBlock = progressBlock
        dataReceivers = options.onDataReceived ?? []
        processingQueue = options.processingQueue
        let exclusive = progressBlock != nil || !dataReceivers.isEmpty || options.requestModifier != nil || options.redirectHandler != nil
        dataKey = FetchDataKey(
            origin: source.fetchOrigin, loader: ObjectIdentifier(self.loader), retryFailed: options.retryFailed,
            validators: nil, exclusive: exclusive ? exclusiveID() : nil)
        priority = LoadPriority(options.downloadPriority)
        serviceContext = ServiceContext.current ?? .topLevel
    }

    /// The key of the whole attempt.
    var loadKey: LoadImageKey {
        LoadImageKey(image: imageKey(validators: nil), cacheKey: key, targetCache: ObjectIdentifier(targetCache),
                     originalCache: ObjectIdentifier(originalCache), writePolicy: writePolicy, reads: reads)
    }

    /// The key of the fetch and decode, conditional on `validators` when revalidating.
    func imageKey(validators: CacheValidators?) -> FetchImageKey {
        FetchImageKey(data: dataKey(validators: validators), processorIdentifier: processorIdentifier,
                      decoding: processing.decodingOptions, backgroundDecode: processing.backgroundDecode)
    }

    func dataKey(validators: CacheValidators?) -> FetchDataKey {
        FetchDataKey(origin: dataKey.origin, loader: dataKey.loader, retryFailed: dataKey.retryFailed,
                     validators: validators, exclusive: dataKey.exclusive)
    }

    /// The one cache read of this attempt.
    ///
    /// Memory is read again (one dictionary lookup): an equal load that ended
    /// between the caller's memory miss and this stage may have stored it. An
    /// entry about to be revalidated is not given a longer life by the read.
    var lookup: CacheLookup {
        CacheLookup(
            key: key, processorIdentifier: processorIdentifier, decoding: processing, serializer: writePolicy.serializer,
            forcedExtension: writePolicy.forcedExtension, memoryExpiration: memoryExpiration,
            memoryExtending: reads.memoryExtending, diskExtending: reads.forcesRevalidation ? .none : reads.diskExtending,
            readsMemory: true, readsDisk: reads.readsDisk, revalidates: reads.revalidates,
            forcesRevalidation: reads.forcesRevalidation)
    }

    /// `requestError(.taskCancelled)` for this request's source.
    var cancelled: HalcyonError { .requestError(reason: .taskCancelled(task: nil, token: nil)) }
}

extension Source {
    var isNetwork: Bool {
        if case .network = self { return true }
        return false
    }

    var fetchOrigin: FetchDataKey.Origin {
        switch self {
        case .network(let resource): return .network(resource.downloadURL)
        case .provider(let provider): return .provider(provider.cacheKey)
        }
    }
}

extension HalcyonParsedOptionsInfo {
    /// These options with only what processors and serializers may use: the
    /// processor, scale, frame choice, preloading, background decoding, the limits and the strictness.
    var processingContext: HalcyonParsedOptionsInfo {
        var context = HalcyonParsedOptionsInfo(nil)
        context.processor = processor
        context.scaleFactor = scaleFactor
        context.onlyLoadFirstFrame = onlyLoadFirstFrame
        context.preloadAllAnimationData = preloadAllAnimationData
        context.backgroundDecode = backgroundDecode
        context.maxPixelCount = maxPixelCount
        context.maxFrameCount = maxFrameCount
        context.decodingStrictness = decodingStrictness
        return context
    }
}
