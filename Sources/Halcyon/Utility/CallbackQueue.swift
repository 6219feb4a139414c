import Foundation
import Dispatch

/// Where a completion or progress callback runs.
///
/// Kingfisher's `CallbackQueue`. ``HalcyonManager`` calls completion handlers
/// on ``mainCurrentOrAsync`` unless the options say otherwise; progress blocks
/// and `.hc.setImage`'s end go to the main queue whatever it is, except with
/// ``untouch``, as Kingfisher's do. On Linux the main queue is the main dispatch
/// queue, drained only while the program runs it: `dispatchMain()`, a
/// `RunLoop.main.run()`, or an `async` main (whose main actor runs on it).
/// A server or command-line program that blocks its main thread instead should
/// pass `.callbackQueue(.untouch)` (the downloader's default): with ``dispatch(_:)``
/// its completions run, but progress blocks still wait for the main queue.
public enum CallbackQueue: Sendable {
    /// Asynchronously on the main dispatch queue.
    case mainAsync
    /// On the main queue: at once when already on the main thread, otherwise asynchronously.
    case mainCurrentOrAsync
    /// On whatever thread finished the work, without hopping.
    case untouch
    /// Asynchronously on the given queue.
    case dispatch(DispatchQueue)

    /// Asynchronously on `queue`: the same as ``dispatch(_:)``, under the name Kingfisher users also write.
    public static func queue(_ queue: DispatchQueue) -> CallbackQueue { .dispatch(queue) }

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
