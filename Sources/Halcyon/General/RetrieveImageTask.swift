import Foundation

/// A running retrieval started with a completion handler; cancel it to stop it.
///
/// Cancelling stops the retrieval and its retries; a download shared with
/// other callers goes on for them. The completion handler is then called once
/// with `requestError(.taskCancelled)`.
public final class RetrieveImageTask: Sendable {
    private let task: Task<Void, Never>

    init(task: Task<Void, Never>) {
        self.task = task
    }

    /// Cancels the retrieval.
    public func cancel() {
        task.cancel()
    }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { task.isCancelled }
}
