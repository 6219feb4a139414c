import Foundation
import Synchronization

/// Carries what a downloaded HTTP body became for one callback.
struct DownloadPayload: Sendable {
    var image: Image?
    var data: Data
    var response: ImageDownloadResponse
    var metrics: NetworkMetrics
}

/// What a ``SessionDataTask`` tells the downloader that queues it.
protocol SessionDataTaskOwner: AnyObject, Sendable {
    /// The last caller left before the request ended: forget the task and drop it from the queue.
    func sessionDataTaskWasAbandoned(_ task: SessionDataTask)
    /// A caller's priority changed: reorder the waiting queue.
    func sessionDataTaskPriorityDidChange(_ task: SessionDataTask)
}

/// One HTTP request shared by every caller that asked for the same URL at the same time.
///
/// Kingfisher's `SessionDataTask`. Each caller adds a callback and gets a
/// ``CancelToken``. Once the request ends the task is sealed: every callback
/// still attached is taken exactly once and no new one can join, so a
/// callback is never lost nor called twice. When the last callback is
/// cancelled, the task is sealed and its HTTP request cancelled.
public final class SessionDataTask: Sendable {
    /// The URL of the request (after the request modifier); the coalescing key.
    public let url: URL
    /// The request as the first caller's modifier left it.
    public let request: ImageDownloadRequest
    /// The request's ``ImageDownloadRequest/coalescingKey``, made once: the downloader's key for this task.
    let key: String
    let redirectHandler: (any ImageDownloadRedirectHandler)?
    let enqueuedAt = ContinuousClock.now
    /// The downloader that queues this task, told when it is abandoned or its priority changes; held weakly.
    private weak let owner: (any SessionDataTaskOwner)?
    private let state = Locked(State())
    /// Which per-chunk work any caller ever asked for (``Observers``); read per body chunk without the lock.
    private let observers = Atomic<UInt8>(0)
    /// When the running request last saw activity (monotonic nanoseconds), for the downloader's ``IdleMonitor``.
    private let activity = Atomic<UInt64>(0)

    /// Bits of ``observers``: a set bit stays set once a caller that wants it joined.
    private enum Observers {
        static let progress: UInt8 = 1
        static let data: UInt8 = 2
    }

    /// One caller's options and completion; a class, so the lists that hold it copy one reference, not the options.
    final class Callback: Sendable {
        let options: DownloadOptions
        /// Where the completion and progress run: `options.callbackQueue`, or `.untouch` for the async methods.
        let queue: CallbackQueue
        let decode: Bool
        let completion: @Sendable (Result<DownloadPayload, HalcyonError>) -> Void

        init(
            options: DownloadOptions, queue: CallbackQueue, decode: Bool,
            completion: @escaping @Sendable (Result<DownloadPayload, HalcyonError>) -> Void
        ) {
            self.options = options
            self.queue = queue
            self.decode = decode
            self.completion = completion
        }

        func deliver(_ result: Result<DownloadPayload, HalcyonError>) {
            let completion = self.completion
            queue.execute { completion(result) }
        }
    }

    private struct State {
        var callbacks: [(id: Int, callback: Callback, priority: Float, live: LoadPriority?)] = []
        var nextID = 0
        var sealed = false
        var cancelRequested = false
        /// Set by ``complete()``: the request ended and its task may be running another request.
        var completed = false
        var handle: Task<Void, Never>?
    }

    /// What ``complete()`` took: the callbacks, whether any cancellation of the running task was decided
    /// before it (delivered or not yet), so that task must not go on with another request, and that task
    /// (nil when it was not attached before the request ended).
    struct Completion {
        let callbacks: [Callback]
        let cancelIssued: Bool
        let worker: Task<Void, Never>?
    }

    /// A task for `request`; `key` is its coalescing key when the caller has made it already.
    init(
        request: ImageDownloadRequest,
        key: String? = nil,
        redirectHandler: (any ImageDownloadRedirectHandler)?,
        owner: (any SessionDataTaskOwner)?
    ) {
        self.url = request.url
        self.request = request
        self.key = key ?? request.coalescingKey
        self.redirectHandler = redirectHandler
        self.owner = owner
    }

    // MARK: - Public state

    /// How many callers are still waiting for this request.
    public var callbackCount: Int { state.withLock { $0.callbacks.count } }

    /// Whether the request has ended or was abandoned; no caller can join any more.
    public var isSealed: Bool { state.withLock { $0.sealed } }

    /// The highest priority among the waiting callers (0.5 when none); it falls when the highest leaves.
    public var priority: Float {
        state.withLock { state in
            var highest: Float?
            for entry in state.callbacks {
                let value = entry.live?.value ?? entry.priority
                highest = max(highest ?? value, value)
            }
            return highest ?? 0.5
        }
    }

    /// Makes the caller holding `token` follow `live`: its priority is read from it whenever the queue is ordered.
    func follow(_ live: LoadPriority, token: CancelToken) {
        let changed = state.withLock { state -> Bool in
            guard let index = state.callbacks.firstIndex(where: { $0.id == token.id }) else { return false }
            state.callbacks[index].live = live
            return !state.sealed
        }
        if changed { owner?.sessionDataTaskPriorityDidChange(self) }
    }

    /// Asks the downloader to reorder its queue after a followed priority changed.
    func priorityDidChange() {
        if !isSealed { owner?.sessionDataTaskPriorityDidChange(self) }
    }

    /// Changes the priority of the caller holding `token` (it stops following a live one); the downloader reorders its queue.
    public func setPriority(_ priority: Float, token: CancelToken) {
        let changed = state.withLock { state -> Bool in
            guard let index = state.callbacks.firstIndex(where: { $0.id == token.id }),
                  state.callbacks[index].priority != priority || state.callbacks[index].live != nil else { return false }
            state.callbacks[index].priority = priority
            state.callbacks[index].live = nil
            return !state.sealed
        }
        if changed { owner?.sessionDataTaskPriorityDidChange(self) }
    }

    // MARK: - Callbacks

    /// Adds a callback; nil when the task is already sealed.
    func add(_ callback: Callback) -> CancelToken? {
        state.withLock { state -> CancelToken? in
            guard !state.sealed else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.callbacks.append((id, callback, callback.options.downloadPriority, nil))
            var wanted: UInt8 = 0
            if callback.options.progressBlock != nil { wanted |= Observers.progress }
            if !callback.options.dataReceivers.isEmpty { wanted |= Observers.data }
            if wanted != 0 { observers.bitwiseOr(wanted, ordering: .relaxed) }
            return CancelToken(id: id, task: self)
        }
    }

    /// Removes the callback of `token` and calls it with a cancellation error.
    ///
    /// When it was the last one, the HTTP request is cancelled as well.
    public func cancel(token: CancelToken) {
        let (removed, abandoned, handle) = state.withLock { state -> (Callback?, Bool, Task<Void, Never>?) in
            guard let index = state.callbacks.firstIndex(where: { $0.id == token.id }) else { return (nil, false, nil) }
            let callback = state.callbacks.remove(at: index).callback
            guard state.callbacks.isEmpty, !state.sealed else { return (callback, false, nil) }
            state.sealed = true
            return (callback, true, state.handle)
        }
        guard let removed else { return }
        if abandoned {
            handle?.cancel()
            owner?.sessionDataTaskWasAbandoned(self)
        } else {
            owner?.sessionDataTaskPriorityDidChange(self)
        }
        removed.deliver(.failure(.requestError(reason: .taskCancelled(task: self, token: token))))
    }

    /// Cancels every caller: each callback gets a cancellation error and the HTTP request stops.
    public func cancelAll() {
        let (callbacks, handle, abandoned) = state.withLock { state -> ([(id: Int, callback: Callback)], Task<Void, Never>?, Bool) in
            let taken = state.callbacks.map { (id: $0.id, callback: $0.callback) }
            state.callbacks = []
            let wasSealed = state.sealed
            state.sealed = true
            return (taken, wasSealed ? nil : state.handle, !wasSealed)
        }
        guard abandoned else { return }
        handle?.cancel()
        owner?.sessionDataTaskWasAbandoned(self)
        for entry in callbacks {
            let token = CancelToken(id: entry.id, task: self)
            entry.callback.deliver(.failure(.requestError(reason: .taskCancelled(task: self, token: token))))
        }
    }

    /// Records the task running the request (a downloader worker); cancels it at once if the task was already abandoned.
    ///
    /// Nothing once the request completed: its worker may have gone on with another request.
    func attach(_ handle: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            guard !state.completed else { return false }
            state.handle = handle
            return state.sealed || state.cancelRequested
        }
        if cancelNow { handle.cancel() }
    }

    /// Cancels the running HTTP request without sealing (the idle timeout uses it); nothing once the request ended,
    /// when the task that ran it may be running another request.
    func cancelRunningRequest() {
        let handle = state.withLock { state -> Task<Void, Never>? in
            guard !state.sealed else { return nil }
            state.cancelRequested = true
            return state.handle
        }
        handle?.cancel()
    }

    /// Seals the task and takes every callback still attached.
    ///
    /// Every cancellation of the running task is decided under this task's lock (an abandon seals it, the idle
    /// timeout sets `cancelRequested`, `attach` cancels when either was set), so the completion reports one that
    /// was decided even when its `cancel()` has not reached the task yet; none can be decided after it.
    func complete() -> Completion {
        state.withLock { state in
            let cancelIssued = state.sealed || state.cancelRequested
            state.sealed = true
            state.completed = true
            let taken = state.callbacks.map(\.callback)
            state.callbacks = []
            return Completion(callbacks: taken, cancelIssued: cancelIssued, worker: state.handle)
        }
    }

    /// Whether any caller has `.onDataReceived` side effects (the transport copies chunks only then).
    var hasDataReceivers: Bool {
        guard observers.load(ordering: .relaxed) & Observers.data != 0 else { return false }
        return state.withLock { $0.callbacks.contains { !$0.callback.options.dataReceivers.isEmpty } }
    }

    /// Gives a body chunk to every caller's side effects that want it now.
    func reportData(_ chunk: Data) {
        let receivers = state.withLock { state in state.callbacks.flatMap { $0.callback.options.dataReceivers } }
        for receiver in receivers where receiver.onShouldApply() {
            receiver.onDataReceived(task: self, data: chunk)
        }
    }

    /// Sends progress to every caller that asked for it.
    func reportProgress(received: Int, expected: Int?) {
        guard observers.load(ordering: .relaxed) & Observers.progress != 0 else { return }
        let blocks = state.withLock { state in
            state.callbacks.compactMap { entry -> (DownloadProgressBlock, CallbackQueue)? in
                guard let block = entry.callback.options.progressBlock else { return nil }
                return (block, entry.callback.queue)
            }
        }
        guard !blocks.isEmpty else { return }
        let total = Int64(expected ?? -1)
        for (block, queue) in blocks {
            queue.execute { block(Int64(received), total) }
        }
    }
}

// MARK: - Idle timeout

extension SessionDataTask: IdleWatched {
    var lastActivity: UInt64 { activity.load(ordering: .relaxed) }

    func recordActivity(at time: UInt64) {
        activity.store(time, ordering: .relaxed)
    }

    /// Cancels the running request without sealing (see ``cancelRunningRequest()``).
    func idleTimeoutFired() {
        cancelRunningRequest()
    }
}
