import Foundation

/// Loads images into the cache ahead of need, a few at a time.
///
/// Each source already in the cache is skipped (with `.alsoPrefetchToMemory`,
/// a disk hit is also read into memory); the others are retrieved through the
/// manager with the prefetcher's options, so processors, retry strategy and
/// caches apply. `progressBlock` runs after each item, `completionHandler`
/// once at the end, both with the skipped, failed and completed lists.
/// After ``stop()`` no new retrieval starts, in-flight ones are cancelled,
/// and the completion handler runs with every unfinished source (in flight
/// or never started) among the failed, as in Kingfisher. Thread-safe.
public final class ImagePrefetcher: Sendable {
    /// Progress with the resources skipped, failed and completed so far.
    public typealias PrefetcherProgressBlock = @Sendable (_ skipped: [any Resource], _ failed: [any Resource], _ completed: [any Resource]) -> Void
    /// Completion with the resources skipped, failed and completed.
    public typealias PrefetcherCompletionHandler = @Sendable (_ skipped: [any Resource], _ failed: [any Resource], _ completed: [any Resource]) -> Void
    /// Progress with the sources skipped, failed and completed so far.
    public typealias PrefetcherSourceProgressBlock = @Sendable (_ skipped: [Source], _ failed: [Source], _ completed: [Source]) -> Void
    /// Completion with the sources skipped, failed and completed.
    public typealias PrefetcherSourceCompletionHandler = @Sendable (_ skipped: [Source], _ failed: [Source], _ completed: [Source]) -> Void

    /// What happened to one item.
    public enum ItemOutcome: Sendable {
        /// Already cached (`.memory` or `.disk`); not loaded again.
        case skipped(CacheType)
        /// Retrieving failed, or was cancelled or never started because of ``stop()`` (`requestError(.taskCancelled)`).
        case failed(HalcyonError)
        /// Retrieved and cached.
        case completed(RetrieveImageResult)
    }

    /// Called after each item with its source and outcome, before the progress block.
    public typealias ItemHandler = @Sendable (_ source: Source, _ outcome: ItemOutcome) -> Void

    /// The default number of retrievals at once.
    public static let defaultMaxConcurrentDownloads = 5

    private struct State {
        var maxConcurrentDownloads = ImagePrefetcher.defaultMaxConcurrentDownloads
        var itemHandler: ItemHandler?
        var next = 0
        var started = false
        var stopped = false
        var finished = false
        var running: [Int: Task<Void, Never>] = [:]
        var workers = 0
        var skipped: [Int] = []
        var failed: [Int] = []
        var completed: [Int] = []
    }

    private let sources: [Source]
    private let resources: [any Resource]?
    private let options: HalcyonOptionsInfo
    private let manager: HalcyonManager
    private let sourceProgress: PrefetcherSourceProgressBlock?
    private let sourceCompletion: PrefetcherSourceCompletionHandler?
    private let resourceProgress: PrefetcherProgressBlock?
    private let resourceCompletion: PrefetcherCompletionHandler?
    private let state = Locked(State())

    // MARK: - Making a prefetcher

    /// Prefetches URLs (a file URL is read from disk).
    public convenience init(
        urls: [URL],
        options: HalcyonOptionsInfo? = nil,
        manager: HalcyonManager = .shared,
        progressBlock: PrefetcherProgressBlock? = nil,
        completionHandler: PrefetcherCompletionHandler? = nil
    ) {
        self.init(resources: urls, options: options, manager: manager, progressBlock: progressBlock, completionHandler: completionHandler)
    }

    /// Prefetches resources; the progress and completion lists hold resources.
    public init(
        resources: [any Resource],
        options: HalcyonOptionsInfo? = nil,
        manager: HalcyonManager = .shared,
        progressBlock: PrefetcherProgressBlock? = nil,
        completionHandler: PrefetcherCompletionHandler? = nil
    ) {
        sources = resources.map { $0.convertToSource() }
        self.resources = resources
        self.options = options ?? []
        self.manager = manager
        resourceProgress = progressBlock
        resourceCompletion = completionHandler
        sourceProgress = nil
        sourceCompletion = nil
    }

    /// Prefetches sources; the progress and completion lists hold sources.
    public init(
        sources: [Source],
        options: HalcyonOptionsInfo? = nil,
        manager: HalcyonManager = .shared,
        progressBlock: PrefetcherSourceProgressBlock? = nil,
        completionHandler: PrefetcherSourceCompletionHandler? = nil
    ) {
        self.sources = sources
        resources = nil
        self.options = options ?? []
        self.manager = manager
        sourceProgress = progressBlock
        sourceCompletion = completionHandler
        resourceProgress = nil
        resourceCompletion = nil
    }

    /// How many retrievals run at once (at least 1); set it before ``start()``.
    public var maxConcurrentDownloads: Int {
        get { state.withLock { $0.maxConcurrentDownloads } }
        set { state.withLock { $0.maxConcurrentDownloads = max(1, newValue) } }
    }

    /// Called after each item with its outcome (for logs and byte counts); set it before ``start()``.
    public var itemHandler: ItemHandler? {
        get { state.withLock { $0.itemHandler } }
        set { state.withLock { $0.itemHandler = newValue } }
    }

    // MARK: - Running

    /// Starts prefetching; later calls do nothing.
    public func start() {
        let workers = state.withLock { state -> Int in
            guard !state.started, !state.stopped else { return -1 }
            state.started = true
            state.workers = min(state.maxConcurrentDownloads, sources.count)
            return state.workers
        }
        if workers == 0 { finish() }
        guard workers > 0 else { return }
        for _ in 0..<workers {
            Task { await self.work() }
        }
    }

    /// Stops: nothing new starts, in-flight retrievals are cancelled, and the completion handler runs.
    ///
    /// Every source that had not finished, in flight or never started, is
    /// reported as failed (to ``itemHandler`` with `requestError(.taskCancelled)`,
    /// and in the completion's failed list); the progress block is not called for those never started.
    public func stop() {
        let (running, finishNow) = state.withLock { state -> ([Task<Void, Never>], Bool) in
            state.stopped = true
            return (Array(state.running.values), state.running.isEmpty && state.workers == 0)
        }
        running.forEach { $0.cancel() }
        if finishNow { finish() }
    }

    /// Starts prefetching and waits for the end; returns the counts of skipped, failed and completed items.
    public func prefetch() async -> (skipped: Int, failed: Int, completed: Int) {
        start()
        while true {
            let done = state.withLock { $0.finished }
            if done { break }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return state.withLock { ($0.skipped.count, $0.failed.count, $0.completed.count) }
    }

    // MARK: - Workers

    private func work() async {
        while let index = takeNext() {
            let task = Task { await self.prefetch(index) }
            let registered = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.running[index] = task
                return true
            }
            if !registered { task.cancel() }
            await task.value
            state.withLock { _ = $0.running.removeValue(forKey: index) }
        }
        let last = state.withLock { state -> Bool in
            state.workers -= 1
            return state.workers == 0
        }
        if last { finish() }
    }

    private func takeNext() -> Int? {
        state.withLock { state -> Int? in
            guard !state.stopped, state.next < sources.count else { return nil }
            defer { state.next += 1 }
            return state.next
        }
    }

    private func prefetch(_ index: Int) async {
        let source = sources[index]
        let parsed = manager.parsedOptions(options)
        let outcome: ItemOutcome
        if Task.isCancelled {
            outcome = .failed(.requestError(reason: .taskCancelled(task: nil, token: nil)))
        } else if !parsed.forceRefresh, case let cached = cachedType(source, options: parsed), cached != .none {
            if cached == .disk && parsed.alsoPrefetchToMemory {
                _ = try? await manager.retrieveImage(with: source, options: options)
            }
            outcome = .skipped(cached)
        } else {
            do throws(HalcyonError) {
                outcome = .completed(try await manager.retrieveImage(with: source, options: options))
            } catch {
                outcome = .failed(error)
            }
        }
        state.withLock { $0.itemHandler }?(source, outcome)
        record(outcome, index: index)
    }

    /// Where the image the options ask for is cached: its memory entry, or the disk entry it would be read from
    /// (shared by both frame choices of an unprocessed image, see ``ImageCache/diskProcessorIdentifier(for:)``).
    private func cachedType(_ source: Source, options: HalcyonParsedOptionsInfo) -> CacheType {
        let cache = options.targetCache ?? manager.cache
        let key = manager.cacheKey(for: source, options: options)
        let memoryKey = ImageCache.computedKey(key, processorIdentifier: ImageCache.processorIdentifier(for: options))
        if cache.memoryStorage.isCached(forKey: memoryKey) { return .memory }
        let diskKey = ImageCache.computedKey(key, processorIdentifier: ImageCache.diskProcessorIdentifier(for: options))
        return cache.diskStorage.isCached(forKey: diskKey, forcedExtension: options.forcedExtension, extensionKey: key) ? .disk : .none
    }

    // MARK: - Reporting

    private func record(_ outcome: ItemOutcome, index: Int) {
        let lists = state.withLock { state -> ([Int], [Int], [Int]) in
            switch outcome {
            case .skipped: state.skipped.append(index)
            case .failed: state.failed.append(index)
            case .completed: state.completed.append(index)
            }
            return (state.skipped, state.failed, state.completed)
        }
        report(lists, progress: true)
    }

    /// Reports the end once; after ``stop()``, every source without an outcome is counted as failed first.
    private func finish() {
        let outcome = state.withLock { state -> (lists: ([Int], [Int], [Int]), unstarted: [Int])? in
            guard !state.finished else { return nil }
            state.finished = true
            var unstarted: [Int] = []
            if state.stopped {
                let recorded = Set(state.skipped + state.failed + state.completed)
                unstarted = sources.indices.filter { !recorded.contains($0) }
                state.failed += unstarted
            }
            return (lists: (state.skipped, state.failed, state.completed), unstarted: unstarted)
        }
        guard let outcome else { return }
        if let itemHandler = state.withLock({ $0.itemHandler }) {
            for index in outcome.unstarted {
                itemHandler(sources[index], .failed(.requestError(reason: .taskCancelled(task: nil, token: nil))))
            }
        }
        report(outcome.lists, progress: false)
    }

    private func report(_ lists: ([Int], [Int], [Int]), progress: Bool) {
        if let resources {
            let pick = { (indices: [Int]) in indices.map { resources[$0] } }
            let block = progress ? resourceProgress : resourceCompletion
            block?(pick(lists.0), pick(lists.1), pick(lists.2))
        } else {
            let pick = { (indices: [Int]) in indices.map { self.sources[$0] } }
            let block = progress ? sourceProgress : sourceCompletion
            block?(pick(lists.0), pick(lists.1), pick(lists.2))
        }
    }
}
