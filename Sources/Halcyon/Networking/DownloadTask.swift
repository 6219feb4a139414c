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

    /// Records where this call was registered; cancels at once if ``cancel()`` came first.
    func link(_ task: SessionDataTask, token: CancelToken) {
        let cancelNow = state.withLock { state -> Bool in
            state.sessionTask = task
            state.token = token
            return state.cancelled
        }
        if cancelNow { token.cancel() }
    }
}
