import CHalcyonVips

/// Stops libvips work from any thread: decoding, processing and encoding
/// started on a thread where this cancellation is installed.
///
/// Install it with ``run(_:)`` around synchronous image work; ``cancel()``
/// from any thread then makes every render of that work fail at its next
/// tile (or, for decoding, its next strip of 64 rows), so CPU use stops
/// within milliseconds and the work throws `requestError(.taskCancelled)`.
/// ``perform(on:_:)-(CallbackQueue,_)`` and ``perform(on:_:)-(WorkQueue,_)`` do both for async callers: the calling task's
/// cancellation cancels the work. Work inside one libvips call that does not
/// render through tiles (an AVIF encoder's own pass over an image, a whole
/// animation read by its loader before the first tile, the quantising and
/// compressing of one GIF or WebP frame once libvips has gathered it) runs to
/// its end; ``ImageEncoder/uncancellableFrameLimit(for:)`` says how large a
/// GIF or WebP frame a server should allow.
///
/// `@unchecked Sendable`: the only state is the C flag, which is atomic and
/// reference counted; this object holds one reference for its lifetime.
public final class RenderCancellation: @unchecked Sendable {
    private let handle: OpaquePointer

    /// Makes an untriggered cancellation.
    public init() {
        handle = hc_cancel_new()
    }

    deinit {
        hc_cancel_release(handle)
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { hc_cancel_is_triggered(handle) != 0 }

    /// Stops the work running under this cancellation; safe from any thread, idempotent.
    public func cancel() {
        hc_cancel_trigger(handle)
    }

    /// Runs `body` on the calling thread with this cancellation guarding its libvips renders.
    ///
    /// Throws `requestError(.taskCancelled)` without running `body` when already
    /// cancelled, and instead of whatever `body` returned or threw once cancelled
    /// (a stopped render is neither corrupt data nor a complete image).
    public func run<T>(_ body: () throws(HalcyonError) -> T) throws(HalcyonError) -> T {
        if isCancelled { throw .requestError(reason: .taskCancelled(task: nil, token: nil)) }
        let previous = hc_cancel_set_current(handle)
        defer { _ = hc_cancel_set_current(previous) }
        do throws(HalcyonError) {
            let value = try withExtendedLifetime(self) { () throws(HalcyonError) -> T in try body() }
            // libvips 8.14.1 reads a sink's error before joining its workers: a
            // render stopped in its last tiles can report success with missing tiles.
            if isCancelled { throw HalcyonError.requestError(reason: .taskCancelled(task: nil, token: nil)) }
            return value
        } catch {
            if isCancelled { throw .requestError(reason: .taskCancelled(task: nil, token: nil)) }
            throw error
        }
    }

    /// Runs `body` on `queue` under a new cancellation that the calling task's cancellation triggers.
    ///
    /// Returns only when `body` has returned (or, cancelled before the queue
    /// started it, at once: `body` then never runs), so once this returns no
    /// CPU work of it is running. Throws `requestError(.taskCancelled)` when
    /// the task was cancelled before or during the work.
    public static func perform<T: Sendable>(
        on queue: CallbackQueue,
        _ body: @escaping @Sendable () throws(HalcyonError) -> T
    ) async throws(HalcyonError) -> T {
        try await perform(submit: { queue.execute($0) }, body)
    }

    /// Runs `body` in a slot of the bounded `queue`; otherwise as ``perform(on:_:)-(CallbackQueue,_)``.
    ///
    /// A task cancelled while its job still waits for a slot makes the job
    /// return at once when it gets one, without running `body`. Called on a
    /// thread that runs a job of any ``WorkQueue`` (a task that prefers one
    /// as its executor), `body` runs at once on that thread, in the slot it
    /// holds: a hop would only wake another thread for the same work.
    public static func perform<T: Sendable>(
        on queue: WorkQueue,
        _ body: @escaping @Sendable () throws(HalcyonError) -> T
    ) async throws(HalcyonError) -> T {
        if WorkQueue.current != nil { return try await performHere(body) }
        return try await perform(submit: { queue.execute($0) }, body)
    }

    /// Runs `body` on the calling thread under a new cancellation that the calling task's cancellation triggers.
    private static func performHere<T: Sendable>(_ body: () throws(HalcyonError) -> T) async throws(HalcyonError) -> T {
        let cancellation = RenderCancellation()
        let result = await withTaskCancellationHandler {
            Task.isCancelled ? .failure(.requestError(reason: .taskCancelled(task: nil, token: nil)))
                : Result { () throws(HalcyonError) -> T in try cancellation.run(body) }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }

    /// Submits `body`; a cancel before the job starts delivers at once and the job, when it gets its turn, does nothing.
    private static func perform<T: Sendable>(
        submit: (@escaping @Sendable () -> Void) -> Void,
        _ body: @escaping @Sendable () throws(HalcyonError) -> T
    ) async throws(HalcyonError) -> T {
        let cancellation = RenderCancellation()
        let job = Locked(PendingJob<T>())
        let result = await withTaskCancellationHandler {
            await awaitDelivery { (deliver: @escaping @Sendable (Result<T, HalcyonError>) -> Void) in
                job.withLock { $0.deliver = deliver }
                submit {
                    let starts = job.withLock { job -> Bool in
                        guard !job.delivered else { return false }
                        job.started = true
                        return true
                    }
                    guard starts else { return }
                    let outcome: Result<T, HalcyonError>
                    do throws(HalcyonError) {
                        outcome = .success(try cancellation.run(body))
                    } catch {
                        outcome = .failure(error)
                    }
                    job.withLock { $0.delivered = true }
                    deliver(outcome)
                }
            }
        } onCancel: {
            cancellation.cancel()
            let deliver = job.withLock { job -> (@Sendable (Result<T, HalcyonError>) -> Void)? in
                guard !job.started, !job.delivered, let deliver = job.deliver else { return nil }
                job.delivered = true
                return deliver
            }
            deliver?(.failure(.requestError(reason: .taskCancelled(task: nil, token: nil))))
        }
        if cancellation.isCancelled { throw .requestError(reason: .taskCancelled(task: nil, token: nil)) }
        return try result.get()
    }

    /// Whether the calling thread's current cancellation has been triggered.
    static var currentIsCancelled: Bool { hc_cancel_current_triggered() != 0 }

    /// How many tiles guarded renders have computed in this process; grows while guarded work runs (a test hook).
    public static var guardedTileCount: UInt { UInt(hc_cancel_guarded_tiles()) }
}

/// A submitted job: whether it started, and whether its caller was answered.
private struct PendingJob<T: Sendable> {
    var deliver: (@Sendable (Result<T, HalcyonError>) -> Void)?
    var started = false
    var delivered = false
}
