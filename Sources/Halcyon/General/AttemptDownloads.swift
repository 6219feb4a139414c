import Foundation

/// The download of a retrieval's current attempt, so that a cancellation can name what it stopped.
///
/// Kingfisher's `requestError(.taskCancelled(task:token:))` carries the session
/// task of the download that was cancelled: cancelling `.hc.setImage` while an
/// alternative source downloads reports that source's task. ``HalcyonManager``
/// makes one per retrieval and binds it to ``current`` while the retrieval runs;
/// ``ImageDownloader``'s ``DataLoading`` load records its ``DownloadTask`` there
/// (the pipeline's stages start their work in child tasks, which inherit the
/// binding); each attempt starts empty. A download joined from another
/// retrieval's work is not seen, and its cancellation keeps a nil task. Thread-safe.
final class AttemptDownloads: Sendable {
    /// The retrieval the calling task works for, if any.
    @TaskLocal static var current: AttemptDownloads?

    private let latest = Locked<DownloadTask?>(nil)

    /// Forgets the previous attempt's download.
    func startAttempt() {
        latest.withLock { $0 = nil }
    }

    /// Records the download the current attempt started.
    func record(_ task: DownloadTask) {
        latest.withLock { $0 = task }
    }

    /// `error`, given the session task and token of the attempt's download when it is a cancellation naming none.
    func attributing(_ error: HalcyonError) -> HalcyonError {
        guard case .requestError(reason: .taskCancelled(task: .none, token: _)) = error,
              let download = latest.withLock({ $0 }), let session = download.sessionTask else { return error }
        return .requestError(reason: .taskCancelled(task: session, token: download.cancelToken))
    }
}
