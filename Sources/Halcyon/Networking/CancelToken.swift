import Foundation

/// One caller's claim on a coalesced ``SessionDataTask``.
///
/// Cancelling it removes only that caller's callback, which is called once with
/// `HalcyonError.requestError(.taskCancelled)`; the HTTP request stops when no
/// callback remains. Cancelling twice, or after completion, does nothing.
public struct CancelToken: Sendable, Hashable {
    let id: Int
    /// The coalesced task this token belongs to.
    public let task: SessionDataTask

    /// Cancels this caller's part of the download.
    public func cancel() {
        task.cancel(token: self)
    }

    /// Same token: same caller of the same task.
    public static func == (lhs: CancelToken, rhs: CancelToken) -> Bool {
        lhs.id == rhs.id && lhs.task === rhs.task
    }

    /// Hashes the caller id and the task identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(ObjectIdentifier(task))
    }
}
