import Foundation

/// A handle on one call to ``ImageDownloader/downloadImage(with:options:completionHandler:)``.
///
/// It exists before the request is registered (an async request modifier may
/// still be running); cancelling then stops the call as soon as it registers.
/// Thread-safe; cancelling is idempotent.
public final class DownloadTask: Sendable {
    /// The URL the caller asked for (before the request modifier).
    public let url: URL
    private let state = Locked(State())

    private struct State {
        var cancelled = false
        var sessionTask: SessionDataTask?
        var token: CancelToken?
        var priority: Float?
        var live: LoadPriority?
    }

    init(url: URL) {
        self.url = url
    }

    /// The coalesced HTTP task this call joined, once registered.
    public var sessionTask: SessionDataTask? { state.withLock { $0.sessionTask } }

    /// This call's token in ``sessionTask``, once registered.
    public var cancelToken: CancelToken? { state.withLock { $0.token } }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancels this call: its completion handler gets `.requestError(.taskCancelled)`.
    ///
    /// Other callers sharing the HTTP request are not affected.
    public func cancel() {
        let token = state.withLock { state -> CancelToken? in
            state.cancelled = true
            return state.token
        }
        token?.cancel()
    }

    /// Changes this call's priority (0...1) in the downloader's waiting queue.
    ///
    /// The shared request waits with the highest priority of its callers, so
    /// lowering the only high one lets other waiting requests start first.
    /// Applied when the call registers if it has not yet.
    public func setPriority(_ priority: Float) {
        let linked = state.withLock { state -> (SessionDataTask, CancelToken)? in
            state.priority = priority
            guard let task = state.sessionTask, let token = state.token else { return nil }
            return (task, token)
        }
        if let (task, token) = linked { task.setPriority(priority, token: token) }
    }

    /// Makes this call's priority follow `live` (the pipeline's stage priority); call before the call registers.
    func follow(_ live: LoadPriority) {
        state.withLock { $0.live = live }
    }

    /// Tells the shared request that the followed priority changed.
    func priorityDidChange() {
        state.withLock { $0.sessionTask }?.priorityDidChange()
    }

    /// Records where this call was registered; cancels at once if ``cancel()`` came first.
    func link(_ task: SessionDataTask, token: CancelToken) {
        let (cancelNow, priority, live) = state.withLock { state -> (Bool, Float?, LoadPriority?) in
            state.sessionTask = task
            state.token = token
            return (state.cancelled, state.priority, state.live)
        }
        if cancelNow { return token.cancel() }
        if let priority { task.setPriority(priority, token: token) }
        if let live { task.follow(live, token: token) }
    }
}
