import Foundation

/// Sees each chunk of a download's body as it arrives (Kingfisher's `DataReceivingSideEffect`), for
/// `.onDataReceived`: e.g. to count bytes or feed a streaming parser.
///
/// Called on the thread that read the chunk, in order, only while
/// ``onShouldApply`` is true; the first chunk after a resumed download is the
/// first new one. It must return quickly: the download waits for it.
public protocol DataReceivingSideEffect: AnyObject, Sendable {
    /// Whether ``onDataReceived(task:data:)`` should be called now.
    var onShouldApply: @Sendable () -> Bool { get }
    /// One chunk of the body of `task`'s download.
    func onDataReceived(task: SessionDataTask, data: Data)
}
