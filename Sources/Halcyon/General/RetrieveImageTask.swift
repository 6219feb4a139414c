import Foundation

/// A running retrieval started with a completion handler; cancel it to stop it.
///
/// Cancelling stops the retrieval and its retries; a download shared with
/// other callers goes on for them. The completion handler is then called once
/// with `requestError(.taskCancelled)`.
///
/// `downloadTaskUpdated` hands one for each later attempt (a retry or an
/// alternative source); cancelling that one stops that attempt.
public final class RetrieveImageTask: Sendable {
    private let cancelTask: @Sendable () -> Void
    private let cancelled: @Sendable () -> Bool
    /// The source this task loads: the retrieval's own for the task `retrieveImage` returns, the retried or
    /// alternative source for the ones `downloadTaskUpdated` gets.
    public let source: Source?

    init<Success: Sendable>(cancelling task: Task<Success, Never>, source: Source? = nil) {
        cancelTask = { task.cancel() }
        cancelled = { task.isCancelled }
        self.source = source
    }

    /// Cancels the retrieval (or, for an attempt's task, that attempt).
    public func cancel() {
        cancelTask()
    }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { cancelled() }
}
