import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization

/// Downloads images over HTTP(S) with AsyncHTTPClient.
///
/// Kingfisher's `ImageDownloader`. Concurrent requests for the same URL (after
/// the request modifier) share one HTTP request; each caller gets its own
/// ``CancelToken`` and the request stops when the last caller leaves. Bytes
/// are decoded once per distinct processor (and decoding options) and the
/// result fans out, on the bounded decode queue of ``PipelineQueues/shared`` rather
/// than the Swift concurrency pool. At most ``maxConcurrentDownloads`` requests run at once;
/// the others wait, highest priority first, then in ``executionOrder``.
///
/// Every property is thread-safe. Settings are read when a request starts, so
/// a change applies to requests that have not started yet. An instance owns an
/// HTTP client: call ``shutdown()`` when done with it (``default`` lives for
/// the whole process); one dropped without it shuts its client down when
/// released.
public final class ImageDownloader: Sendable, SessionDataTaskOwner {
    /// The order in which waiting requests start.
    public enum ExecutionOrder: Sendable {
        /// First in, first out (the default).
        case fifo
        /// Last in, first out: the newest request starts first (for scrolling lists).
        case lifo
    }

    /// The shared downloader, named "default", with the default settings.
    public static let `default` = ImageDownloader(name: "default")

    /// The name, for logs.
    public let name: String

    private let state: Locked<State>
    private let config: Locked<Config>
    /// Whether `httpHeaders` is not empty, written under `config`'s lock: a request reads the headers only then.
    private let hasHeaders = Atomic<Bool>(false)
    private let resumable = ResumableDataStore()

    /// Whether a partial body of `url` is kept for resuming (tests wait on it: it is stored after the caller was told).
    func hasResumableData(for url: URL) -> Bool { resumable.contains(url) }
    private let idleMonitor = IdleMonitor()
    /// Decoding for ``downloadImage(with:options:)`` callers: the shared pipeline's bounded decode queue.
    private let processingQueue = PipelineQueues.shared.decode

    /// The requests: registered, running and waiting.
    private struct State {
        var maxConcurrentDownloads = 6
        var isShutDown = false
        var tasks: [String: SessionDataTask] = [:]
        var running = 0
        var waiting = DownloadWaitingQueue()
    }

    /// The settings each request reads and the HTTP client, under a lock of their own so that reading
    /// them does not wait behind the requests' bookkeeping.
    private struct Config {
        var downloadTimeout: TimeInterval = 15
        /// A copy of `State.maxConcurrentDownloads`, for sizing the client's pool.
        var maxConcurrentDownloads = 6
        var maxResponseBytes = 50 * 1024 * 1024
        var maxRedirects = 10
        var httpHeaders: [String: String] = [:] {
            didSet { headerFields = httpHeaders.sorted { $0.key < $1.key } }
        }
        /// `httpHeaders` sorted by name, as each request applies them.
        private(set) var headerFields: [(key: String, value: String)] = []
        var credentials: [String: HTTPCredential] = [:]
        weak var delegate: (any ImageDownloaderDelegate)?
        var connectionGate: (any ImageDownloaderConnectionGate)?
        var client: HTTPClient?
        /// A copy of `State.isShutDown`, set in the same shutdown step: a fetch reads it with the settings and
        /// makes no client once it is set, and a failed fetch reads it to report `downloaderShutDown`.
        var isShutDown = false
    }

    /// Makes a downloader; its HTTP client is created on the first request.
    public init(name: String) {
        self.name = name
        self.state = Locked(State())
        self.config = Locked(Config())
    }

    deinit {
        let client = config.withLock { $0.client }
        client?.shutdown { _ in }
    }

    // MARK: - Settings

    /// Idle timeout in seconds: a download fails with `.timedOut` when nothing arrives for this long. Default 15.
    public var downloadTimeout: TimeInterval {
        get { config.withLock { $0.downloadTimeout } }
        set { config.withLock { $0.downloadTimeout = newValue } }
    }

    /// How many HTTP requests run at once; others wait. Default 6, at least 1.
    ///
    /// The HTTP client's per-host connection pool is sized when the first
    /// request starts (the larger of 16 and this value); raising the limit
    /// beyond that later queues the extra requests inside the client.
    public var maxConcurrentDownloads: Int {
        get { state.withLock { $0.maxConcurrentDownloads } }
        set {
            let ready = state.withLock { state -> ReadyTasks in
                state.maxConcurrentDownloads = max(1, newValue)
                // Under the registry's lock, so concurrent setters leave both copies alike (nothing takes them the other way round).
                config.withLock { $0.maxConcurrentDownloads = state.maxConcurrentDownloads }
                return Self.dequeueReady(&state)
            }
            ready.forEach(launch)
        }
    }

    /// The order in which waiting requests of equal priority start. Default ``ExecutionOrder/fifo``.
    public var executionOrder: ExecutionOrder {
        get { state.withLock { $0.waiting.lifo ? .lifo : .fifo } }
        set { state.withLock { $0.waiting.setLIFO(newValue == .lifo) } }
    }

    /// Largest body accepted, in bytes; checked on Content-Length and while streaming. Default 50 MB.
    ///
    /// A compressed body is inflated at most to the value this has when the first download makes the HTTP client:
    /// set it before downloading.
    public var maxResponseBytes: Int {
        get { config.withLock { $0.maxResponseBytes } }
        set { config.withLock { $0.maxResponseBytes = newValue } }
    }

    /// Most redirects followed for one request. Default 10.
    public var maxRedirects: Int {
        get { config.withLock { $0.maxRedirects } }
        set { config.withLock { $0.maxRedirects = max(0, newValue) } }
    }

    /// Header fields added to every request before the request modifier runs. Default none.
    public var httpHeaders: [String: String] {
        get { config.withLock { $0.httpHeaders } }
        set {
            config.withLock { config in
                config.httpHeaders = newValue
                hasHeaders.store(!newValue.isEmpty, ordering: .releasing)
            }
        }
    }

    /// Observes and steers downloads; held weakly. Default nil.
    public var delegate: (any ImageDownloaderDelegate)? {
        get { config.withLock { $0.delegate } }
        set { config.withLock { $0.delegate = newValue } }
    }

    /// Vets each hop (first request and redirects) before it connects, and gives the client and the URL
    /// (for example with a canonical host) the hop is sent with; nil (the default) connects anywhere.
    public var connectionGate: (any ImageDownloaderConnectionGate)? {
        get { config.withLock { $0.connectionGate } }
        set { config.withLock { $0.connectionGate = newValue } }
    }

    /// Sets (or with nil removes) the credential sent to `host` (case-insensitive).
    public func setCredential(_ credential: HTTPCredential?, forHost host: String) {
        config.withLock { $0.credentials[host.lowercased()] = credential }
    }

    /// Cancels every caller waiting for `url` (after the request modifier), whatever their other headers; each gets `.taskCancelled`.
    public func cancel(url: URL) {
        let tasks = state.withLock { $0.tasks.values.filter { $0.url == url } }
        tasks.forEach { $0.cancelAll() }
    }

    /// Cancels every running and waiting download of this downloader.
    public func cancelAll() {
        let tasks = state.withLock { Array($0.tasks.values) }
        tasks.forEach { $0.cancelAll() }
    }

    /// How many distinct HTTP requests are running or waiting.
    public var activeRequestCount: Int { state.withLock { $0.tasks.count } }

    /// Stops accepting requests and shuts the HTTP client down; running requests fail.
    public func shutdown() async {
        state.withLock { $0.isShutDown = true }
        let client = config.withLock { config -> HTTPClient? in
            config.isShutDown = true
            defer { config.client = nil }
            return config.client
        }
        try? await client?.shutdown()
    }

    // MARK: - Downloading

    /// Downloads and decodes the image at `url`, calling `completionHandler` once on `options.callbackQueue`.
    ///
    /// The request modifier sees `url` as given, and only the URL of the
    /// request it returns must be an http(s) URL (`requestError(.invalidURL)`
    /// otherwise); a modifier that returns nil fails with `requestError(.emptyRequest)`.
    /// Always returns the call's task, as Kingfisher does, also when the request
    /// failed before it was sent: the handler then gets the error (its ``DownloadTask/sessionTask``
    /// stays nil). Errors are `HalcyonError` request, response or processor errors.
    @discardableResult
    public func downloadImage(
        with url: URL,
        options: DownloadOptions = .default,
        completionHandler: (@Sendable (Result<ImageLoadingResult, HalcyonError>) -> Void)? = nil
    ) -> DownloadTask? {
        let task = DownloadTask(url: url)
        start(url: url, options: options, decode: true, downloadTask: task) { result in
            completionHandler?(result.flatMap(ImageLoadingResult.make))
        }
        return task
    }

    /// Downloads and decodes the image at `url`; cancelling the calling task cancels this caller's download.
    public func downloadImage(with url: URL, options: DownloadOptions = .default) async throws(HalcyonError) -> ImageLoadingResult {
        let payload = try await download(url: url, options: options, decode: true)
        return try ImageLoadingResult.make(payload).get()
    }

    /// Downloads the bytes at `url` without decoding them, calling `completionHandler` once on `options.callbackQueue`.
    ///
    /// Coalesces with image downloads of the same URL; always returns the call's
    /// task, also when the request cannot be made (the handler then gets the error).
    @discardableResult
    public func downloadData(
        with url: URL,
        options: DownloadOptions = .default,
        completionHandler: @escaping @Sendable (Result<ImageDataLoadingResult, HalcyonError>) -> Void
    ) -> DownloadTask? {
        let task = DownloadTask(url: url)
        start(url: url, options: options, decode: false, downloadTask: task) { result in
            completionHandler(result.map(ImageDataLoadingResult.init))
        }
        return task
    }

    /// Downloads the bytes at `url` without decoding them; coalesces with image downloads of the same URL.
    public func downloadData(with url: URL, options: DownloadOptions = .default) async throws(HalcyonError) -> ImageDataLoadingResult {
        return ImageDataLoadingResult(try await download(url: url, options: options, decode: false))
    }

    func download(
        url: URL, options: DownloadOptions, decode: Bool, task: DownloadTask? = nil
    ) async throws(HalcyonError) -> DownloadPayload {
        let task = task ?? DownloadTask(url: url)
        let result = await withTaskCancellationHandler {
            await awaitDelivery { (deliver: @escaping @Sendable (Result<DownloadPayload, HalcyonError>) -> Void) in
                _ = self.start(url: url, options: options, queue: .untouch, decode: decode, downloadTask: task, completion: deliver)
            }
        } onCancel: {
            task.cancel()
        }
        return try result.get()
    }

    // MARK: - Registration

    /// Prepares the request and registers it; false when it failed at once (the handler was called).
    ///
    /// The request modifier runs first, on the URL as given (so it may turn a
    /// placeholder into a real URL); only the URL of the request it returns
    /// must be fetchable. A modifier that returns nil fails with `requestError(.emptyRequest)`.
    /// `queue`, when given, replaces `options.callbackQueue` (the async methods pass `.untouch`).
    @discardableResult
    private func start(
        url: URL,
        options: DownloadOptions,
        queue: CallbackQueue? = nil,
        decode: Bool,
        downloadTask: DownloadTask,
        completion: @escaping @Sendable (Result<DownloadPayload, HalcyonError>) -> Void
    ) -> Bool {
        let queue = queue ?? options.callbackQueue
        let fail: @Sendable (HalcyonError) -> Void = { error in queue.execute { completion(.failure(error)) } }
        var request = ImageDownloadRequest(url: url)
        let headerFields = hasHeaders.load(ordering: .acquiring) ? config.withLock { $0.headerFields } : []
        for (name, value) in headerFields {
            request.setValue(value, forHTTPHeaderField: name)
        }
        let callback = SessionDataTask.Callback(options: options, queue: queue, decode: decode, completion: completion)

        guard let modifier = options.requestModifier else {
            return registerIfFetchable(request, callback: callback, downloadTask: downloadTask, fail: fail)
        }
        if let syncModifier = modifier as? any ImageDownloadRequestModifier {
            let modify: (ImageDownloadRequest) -> ImageDownloadRequest? = syncModifier.modified(for:)
            guard let modified = modify(request) else {
                fail(.requestError(reason: .emptyRequest))
                return false
            }
            return registerIfFetchable(modified, callback: callback, downloadTask: downloadTask, fail: fail)
        }
        Task {
            guard let modified = await modifier.modified(for: request) else {
                return fail(.requestError(reason: .emptyRequest))
            }
            _ = self.registerIfFetchable(modified, callback: callback, downloadTask: downloadTask, fail: fail)
        }
        return true
    }

    /// Registers `request` when its URL is an http(s) URL with a host; otherwise fails with `invalidURL` and returns false.
    private func registerIfFetchable(
        _ request: ImageDownloadRequest, callback: SessionDataTask.Callback, downloadTask: DownloadTask,
        fail: (HalcyonError) -> Void
    ) -> Bool {
        guard Self.isFetchable(request.url) else {
            fail(.requestError(reason: .invalidURL(url: request.url)))
            return false
        }
        register(request, callback: callback, downloadTask: downloadTask)
        return true
    }

    /// Joins the running task for the request's URL, or makes and queues a new one.
    private func register(_ request: ImageDownloadRequest, callback: SessionDataTask.Callback, downloadTask: DownloadTask) {
        if downloadTask.isCancelled {
            return callback.deliver(.failure(.requestError(reason: .taskCancelled(task: nil, token: nil))))
        }
        let key = request.coalescingKey
        let registration = state.withLock { state -> (SessionDataTask, CancelToken, ReadyTasks)? in
            guard !state.isShutDown else { return nil }
            if let existing = state.tasks[key], let token = existing.add(callback) {
                state.waiting.setPriority(existing.priority, for: existing)
                return (existing, token, ReadyTasks())
            }
            let task = SessionDataTask(
                request: request, key: key, redirectHandler: callback.options.redirectHandler,
                owner: self)
            guard let token = task.add(callback) else { return nil }
            state.tasks[key] = task
            state.waiting.append(task, priority: callback.options.downloadPriority)
            return (task, token, Self.dequeueReady(&state))
        }
        guard let (task, token, ready) = registration else {
            return callback.deliver(.failure(.requestError(reason: .downloaderShutDown(url: request.url))))
        }
        ready.forEach(launch)
        downloadTask.link(task, token: token)
    }

    /// Forgets a task whose last caller cancelled.
    func sessionDataTaskWasAbandoned(_ task: SessionDataTask) {
        state.withLock { state in
            Self.forget(task, in: &state)
            state.waiting.remove(task)
        }
    }

    /// Moves a waiting task to the highest priority of the callers it still has.
    func sessionDataTaskPriorityDidChange(_ task: SessionDataTask) {
        state.withLock { state in
            state.waiting.setPriority(task.priority, for: task)
        }
    }

    /// Removes `task` from the running tasks when its key still names it; the key is hashed once.
    private static func forget(_ task: SessionDataTask, in state: inout State) {
        if let index = state.tasks.index(forKey: task.key), state.tasks.values[index] === task {
            state.tasks.remove(at: index)
        }
    }

    // MARK: - Scheduling

    /// Takes waiting tasks while slots are free: highest priority first, then by execution order.
    private static func dequeueReady(_ state: inout State) -> ReadyTasks {
        var ready = ReadyTasks()
        while state.running < state.maxConcurrentDownloads, let task = state.waiting.popFirst() {
            guard !task.isSealed else { continue }
            ready.append(task)
            state.running += 1
        }
        return ready
    }

    /// Starts the HTTP request of `task` on a new worker task, which goes on with waiting requests as its slot frees.
    ///
    /// A worker runs one request at a time and is each one's cancellation
    /// handle while it runs (cancelling a request cancels its worker). A
    /// worker whose request saw a cancellation decided (delivered or not yet)
    /// stops and hands its next request to a new worker, so a mass submission
    /// makes about one task per slot, not one per download. Without a delegate
    /// the next request starts once this one's inline callbacks returned; with
    /// one, it starts on a new worker before the delegate's hooks run.
    private func launch(_ task: SessionDataTask) {
        // The worker learns its own handle from the completion of a request it was attached to, so it
        // cannot go on with another request unless it was attached to this one first.
        task.attach(Task { await self.work(from: task) })
    }

    /// Runs `first`, then each request this worker took when the previous one freed its slot.
    ///
    /// Yields every `Self.workerBatch` requests, so one that fails at once in a long queue (after shutdown,
    /// say) does not hold a thread of the cooperative pool until the queue is empty.
    private func work(from first: SessionDataTask) async {
        var current = first
        var count = 0
        while let (next, cancelIssued, worker) = await run(current) {
            // A cancelled task stays cancelled, and one decided for the request that ended may still arrive.
            guard !cancelIssued, !Task.isCancelled, let worker else { return launch(next) }
            next.attach(worker)
            current = next
            count += 1
            if count.isMultiple(of: Self.workerBatch) { await Task.yield() }
        }
    }

    /// How many requests a worker runs back to back before it yields its thread.
    private static let workerBatch = 32

    /// Runs one HTTP request, frees its slot, applies the delegate's data hook, reports the end, then decodes and delivers.
    ///
    /// Returns the waiting request that took the freed slot, for this worker to
    /// run next (none when a delegate is set), whether a cancellation of this worker was
    /// decided while the request ran, and the worker's handle as attached to the request;
    /// any other requests the slot change made ready start on new workers.
    /// The did-finish event comes once per request, after the data hook, so it
    /// carries the hook's rejection as well as request and response failures.
    private func run(_ task: SessionDataTask) async -> (next: SessionDataTask, cancelIssued: Bool, worker: Task<Void, Never>?)? {
        let (fetched, delegate) = await fetch(task)
        let completion = task.complete()
        let callbacks = completion.callbacks
        let ready = state.withLock { state -> ReadyTasks in
            Self.forget(task, in: &state)
            state.running -= 1
            return Self.dequeueReady(&state)
        }
        // A delegate's hooks below are user code of unknown cost: with one, the next request starts on a worker of its own now.
        let next = delegate == nil ? ready.first : nil
        if next == nil { ready.forEach(launch) } else { ready.others.forEach(launch) }

        let result = fetched.flatMap { outcome in self.modifyData(outcome, url: task.url, delegate: delegate) }
        delegate?.imageDownloader(
            self, didFinishDownloadingImageForURL: task.url, with: try? fetched.get().response,
            error: result.failure)
        if callbacks.contains(where: \.decode), case .success = result {
            // Decoding blocks a thread; keep it off the cooperative pool so network tasks keep flowing.
            processingQueue.execute {
                self.deliver(result, to: callbacks, url: task.url, delegate: delegate)
            }
        } else {
            deliver(result, to: callbacks, url: task.url, delegate: delegate)
        }
        return next.map { ($0, completion.cancelIssued, completion.worker) }
    }

    /// Sends the HTTP request of `task`, telling the delegate first; a failure once shut down is `downloaderShutDown`.
    ///
    /// Returns the outcome and the delegate the request ran with (read once, with the other settings).
    private func fetch(_ task: SessionDataTask) async -> (Result<FetchOutcome, HalcyonError>, (any ImageDownloaderDelegate)?) {
        let (client, settings) = config.withLock { config -> (HTTPClient?, FetchSettings) in
            let settings = FetchSettings(
                timeout: config.downloadTimeout, maxResponseBytes: config.maxResponseBytes,
                maxRedirects: config.maxRedirects, credentials: config.credentials,
                connectionGate: config.connectionGate, delegate: config.delegate)
            guard !config.isShutDown else { return (nil, settings) }
            let client = config.client
                ?? Self.makeClient(poolSize: max(16, config.maxConcurrentDownloads), maxInflatedBytes: config.maxResponseBytes)
            config.client = client
            return (client, settings)
        }
        let delegate = settings.delegate
        guard let client else {
            return (.failure(.requestError(reason: .downloaderShutDown(url: task.url))), delegate)
        }
        delegate?.imageDownloader(self, willDownloadImageForURL: task.url, with: task.request)
        let transport = HTTPTransport(
            client: client, downloader: self, settings: settings, resumable: resumable, idleMonitor: idleMonitor)
        let fetched = await transport.fetch(task)
        if case .failure = fetched, config.withLock({ $0.isShutDown }) {
            return (.failure(.requestError(reason: .downloaderShutDown(url: task.url))), delegate)
        }
        return (fetched, delegate)
    }

    /// The outcome with the delegate's data hook applied; nil or empty data from the hook fails with `responseError(.rejected)`.
    private func modifyData(
        _ outcome: FetchOutcome, url: URL, delegate: (any ImageDownloaderDelegate)?
    ) -> Result<FetchOutcome, HalcyonError> {
        guard let delegate else { return .success(outcome) }
        guard let rewritten = delegate.imageDownloader(self, didDownload: outcome.data, for: url), !rewritten.isEmpty else {
            return .failure(.responseError(reason: .rejected(url: url, message: "the delegate rejected the downloaded data")))
        }
        var modified = outcome
        modified.data = rewritten
        return .success(modified)
    }

    /// The downloader's HTTP client: `poolSize` connections per host; a compressed body inflates to at most
    /// `maxInflatedBytes` (and one inflated piece, 128 KiB at most, past it).
    private static func makeClient(poolSize: Int, maxInflatedBytes: Int) -> HTTPClient {
        var pool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: poolSize)
        pool.retryConnectionEstablishment = false
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(30)),
            connectionPool: pool,
            // A size limit, not a ratio: a flat image shrinks far more than any ratio that stops a bomb early. NIO
            // inflates a whole received piece before the transport counts it, so it must stop at the size itself.
            decompression: .enabled(limit: .size(maxInflatedBytes)))
        configuration.guardResponseStatus()
        // HTTPTransport makes each request's client span itself, in the fetching task's trace (AsyncHTTPClient's
        // delegate API would start one outside it, as a trace of its own).
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    // MARK: - Delivery

    /// Hands the outcome (its data already through the delegate's hook) to every callback, decoding once per processor.
    private func deliver(
        _ result: Result<FetchOutcome, HalcyonError>,
        to callbacks: [SessionDataTask.Callback],
        url: URL,
        delegate: (any ImageDownloaderDelegate)?
    ) {
        guard !callbacks.isEmpty else { return }
        let outcome: FetchOutcome
        switch result {
        case .failure(let error):
            callbacks.forEach { $0.deliver(.failure(error)) }
            return
        case .success(let value):
            outcome = value
        }
        let data = outcome.data
        let payload = DownloadPayload(image: nil, data: data, response: outcome.response, metrics: outcome.metrics)

        var groups: [DecodeKey: [SessionDataTask.Callback]] = [:]
        var order: [DecodeKey] = []
        for callback in callbacks {
            guard callback.decode else {
                callback.deliver(.success(payload))
                continue
            }
            let key = DecodeKey(callback.options)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(callback)
        }
        for key in order {
            guard let group = groups[key], let first = group.first else { continue }
            let decoded: Result<DownloadPayload, HalcyonError>
            do throws(HalcyonError) {
                let image = try first.options.processor.processAttributingFailure(item: .data(data), options: first.options.processingOptions)
                delegate?.imageDownloader(self, didDownload: image, for: url, with: outcome.response)
                var withImage = payload
                withImage.image = image
                decoded = .success(withImage)
            } catch {
                decoded = .failure(error)
            }
            group.forEach { $0.deliver(decoded) }
        }
    }

    /// What makes two decodes of the same bytes identical.
    private struct DecodeKey: Hashable {
        let processor: String
        let decoding: ImageDecodingOptions

        init(_ options: DownloadOptions) {
            processor = options.processor.identifier
            decoding = options.processingOptions.decodingOptions
        }
    }
}

extension ImageLoadingResult {
    /// The result for a decoding callback; `deliver` always sets the image for those.
    static func make(_ payload: DownloadPayload) -> Result<ImageLoadingResult, HalcyonError> {
        guard let image = payload.image else {
            return .failure(.processorError(reason: .operationFailed(operation: "download", message: "no image was decoded")))
        }
        return .success(ImageLoadingResult(
            image: image, url: payload.metrics.originalURL, originalData: payload.data, response: payload.response, metrics: payload.metrics))
    }
}

extension ImageDataLoadingResult {
    init(_ payload: DownloadPayload) {
        self.init(url: payload.metrics.originalURL, data: payload.data, response: payload.response, metrics: payload.metrics)
    }
}

extension Result {
    /// The error, or nil on success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
