import Foundation

/// Kingfisher's `KF` builder for Halcyon: `HC.url(url).placeholder(p).retry(maxCount: 3).set(to: target)`.
///
/// Each modifier returns a changed copy; nothing loads until ``HC/Builder/set(to:)``, which runs
/// `target.hc.setImage` with the collected source, placeholder, options and callbacks.
public enum HC {
    /// Starts a builder for a network URL (nil shows the placeholder and fails with `emptySource`).
    public static func url(_ url: URL?, cacheKey: String? = nil) -> Builder {
        Builder(source: url.map { .network(ImageResource(downloadURL: $0, cacheKey: cacheKey)) })
    }

    /// Starts a builder for any source.
    public static func source(_ source: Source?) -> Builder { Builder(source: source) }

    /// Starts a builder for a resource.
    public static func resource(_ resource: (any Resource)?) -> Builder { Builder(source: resource?.convertToSource()) }

    /// Starts a builder for a data provider.
    public static func dataProvider(_ provider: (any ImageDataProvider)?) -> Builder { Builder(source: provider.map { .provider($0) }) }

    /// The collected settings of one `setImage`.
    public struct Builder: Sendable {
        /// The source to load.
        public let source: Source?
        /// The options collected so far.
        public private(set) var options: HalcyonOptionsInfo = []
        private var placeholder: (any Placeholder)?
        private var manager: HalcyonManager = .shared
        private var processors: [any ImageProcessor] = []
        private var progress: DownloadProgressBlock?
        private var success: (@Sendable (RetrieveImageResult) -> Void)?
        private var failure: (@Sendable (HalcyonError) -> Void)?

        init(source: Source?) { self.source = source }

        /// Loads the source and shows it on `target`; see `setImage(with:placeholder:options:…)`.
        @discardableResult
        public func set(to target: some ImageSettable) -> RetrieveImageTask? {
            var options = self.options
            if let first = processors.first {
                options.append(.processor(processors.dropFirst().reduce(first) { $0 |> $1 }))
            }
            let (success, failure) = (self.success, self.failure)
            return target.hc.setImage(with: source, placeholder: placeholder, options: options, manager: manager, progressBlock: progress) {
                switch $0 {
                case .success(let value): success?(value)
                case .failure(let error): failure?(error)
                }
            }
        }

        /// A copy with `item` appended to the options.
        public func option(_ item: HalcyonOptionsInfoItem) -> Builder { changed { $0.options.append(item) } }

        private func changed(_ change: (inout Builder) -> Void) -> Builder {
            var copy = self
            change(&copy)
            return copy
        }
    }
}

// MARK: - Modifiers

extension HC.Builder {
    /// Shown while loading.
    public func placeholder(_ placeholder: (any Placeholder)?) -> HC.Builder { changed { $0.placeholder = placeholder } }
    /// The manager that loads (default ``HalcyonManager/shared``).
    public func manager(_ manager: HalcyonManager) -> HC.Builder { changed { $0.manager = manager } }
    /// Replaces the processors with `processor`.
    public func setProcessor(_ processor: any ImageProcessor) -> HC.Builder { changed { $0.processors = [processor] } }
    /// Adds `processor` after the ones set so far.
    public func appendProcessor(_ processor: any ImageProcessor) -> HC.Builder { changed { $0.processors.append(processor) } }
    /// Called with download progress, on the callback queue.
    public func onProgress(_ block: DownloadProgressBlock?) -> HC.Builder { changed { $0.progress = block } }
    /// Called with the result when the image is set.
    public func onSuccess(_ block: (@Sendable (RetrieveImageResult) -> Void)?) -> HC.Builder { changed { $0.success = block } }
    /// Called with the error when loading fails.
    public func onFailure(_ block: (@Sendable (HalcyonError) -> Void)?) -> HC.Builder { changed { $0.failure = block } }

    /// Retries up to `maxCount` times, `interval` apart (a ``DelayRetryStrategy``).
    public func retry(maxCount: Int, interval: DelayRetryStrategy.Interval = .seconds(3)) -> HC.Builder {
        option(.retryStrategy(DelayRetryStrategy(maxRetryCount: maxCount, retryInterval: interval)))
    }
    /// Retries as `strategy` decides.
    public func retry(_ strategy: any RetryStrategy) -> HC.Builder { option(.retryStrategy(strategy)) }
    /// Fades images loaded from the source in over `duration` seconds.
    public func fade(duration: TimeInterval) -> HC.Builder { option(.transition(.fade(duration))) }
    /// The transition for images loaded from the source.
    public func transition(_ transition: ImageTransition) -> HC.Builder { option(.transition(transition)) }
    /// Skips the caches.
    public func forceRefresh(_ enabled: Bool = true) -> HC.Builder { enabled ? option(.forceRefresh) : self }
    /// Stores in memory only.
    public func cacheMemoryOnly(_ enabled: Bool = true) -> HC.Builder { enabled ? option(.cacheMemoryOnly) : self }
    /// Also stores the original.
    public func cacheOriginalImage(_ enabled: Bool = true) -> HC.Builder { enabled ? option(.cacheOriginalImage) : self }
    /// Reads the disk cache on the calling thread.
    public func loadDiskFileSynchronously(_ enabled: Bool = true) -> HC.Builder { enabled ? option(.loadDiskFileSynchronously) : self }
    /// Only reads the caches.
    public func onlyFromCache(_ enabled: Bool = true) -> HC.Builder { enabled ? option(.onlyFromCache) : self }
    /// Calls back after the cache write.
    public func waitForCache(_ enabled: Bool = true) -> HC.Builder { enabled ? option(.waitForCache) : self }
    /// Keeps the current image instead of the placeholder while loading.
    public func keepCurrentImageWhileLoading(_ enabled: Bool = true) -> HC.Builder { enabled ? option(.keepCurrentImageWhileLoading) : self }
    /// Decodes only the first frame of animations.
    public func onlyLoadFirstFrame(_ enabled: Bool = true) -> HC.Builder { enabled ? option(.onlyLoadFirstFrame) : self }
    /// Decodes fully off the caller's thread.
    public func backgroundDecode(_ enabled: Bool = true) -> HC.Builder { enabled ? option(.backgroundDecode) : self }
    /// Where callbacks run.
    public func callbackQueue(_ queue: CallbackQueue) -> HC.Builder { option(.callbackQueue(queue)) }
    /// The download's priority, 0...1.
    public func downloadPriority(_ priority: Float) -> HC.Builder { option(.downloadPriority(priority)) }
    /// The cache results go to.
    public func targetCache(_ cache: ImageCache) -> HC.Builder { option(.targetCache(cache)) }
    /// The downloader for network sources.
    public func downloader(_ downloader: ImageDownloader) -> HC.Builder { option(.downloader(downloader)) }
    /// Changes each download request.
    public func requestModifier(_ modifier: any AsyncImageDownloadRequestModifier) -> HC.Builder { option(.requestModifier(modifier)) }
    /// Sources tried when the main one fails.
    public func alternativeSources(_ sources: [Source]?) -> HC.Builder { option(.alternativeSources(sources ?? [])) }
    /// The source used in low-data mode.
    public func lowDataModeSource(_ source: Source?) -> HC.Builder { option(.lowDataMode(source)) }
    /// Shown when loading fails.
    public func onFailureImage(_ image: Image?) -> HC.Builder { option(.onFailureImage(image)) }
    /// Pixels per point.
    public func scaleFactor(_ factor: CGFloat) -> HC.Builder { option(.scaleFactor(factor)) }
    /// Expiration of the memory entry.
    public func memoryCacheExpiration(_ expiration: StorageExpiration?) -> HC.Builder { expiration.map { option(.memoryCacheExpiration($0)) } ?? self }
    /// Expiration of the disk entry.
    public func diskCacheExpiration(_ expiration: StorageExpiration?) -> HC.Builder { expiration.map { option(.diskCacheExpiration($0)) } ?? self }
    /// How images become cache data and back.
    public func serialize(by serializer: any CacheSerializer) -> HC.Builder { option(.cacheSerializer(serializer)) }
}
