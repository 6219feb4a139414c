import Foundation
import Dispatch

/// Where a completion or progress callback runs.
///
/// Kingfisher's `CallbackQueue`. On Linux the main queue is only drained by
/// programs that run `dispatchMain()` or a run loop, so headless code should
/// use ``untouch`` (the default of the downloader) or ``dispatch(_:)``.
public enum CallbackQueue: Sendable {
    /// Asynchronously on the main dispatch queue.
    case mainAsync
    /// On the main queue: at once when already on the main thread, otherwise asynchronously.
    case mainCurrentOrAsync
    /// On whatever thread finished the work, without hopping.
    case untouch
    /// Asynchronously on the given queue.
    case dispatch(DispatchQueue)

    /// Runs `block` on this queue.
    public func execute(_ block: @escaping @Sendable () -> Void) {
        switch self {
        case .mainAsync:
            DispatchQueue.main.async(execute: block)
        case .mainCurrentOrAsync:
            if Thread.isMainThread {
                block()
            } else {
                DispatchQueue.main.async(execute: block)
            }
        case .untouch:
            block()
        case .dispatch(let queue):
            queue.async(execute: block)
        }
    }
}
