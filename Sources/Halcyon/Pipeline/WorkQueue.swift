#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation

/// Runs blocking CPU work (decoding, processing, encoding) at most ``width`` jobs at a time.
///
/// Jobs start in submission order on the global dispatch pool (quality of
/// service `.userInitiated`), never on the Swift concurrency pool, so a slow
/// decode does not hold back network tasks. Jobs beyond the width wait in a
/// FIFO list held in memory; the width bounds threads and working memory,
/// not the list. A thread that finishes a job runs the next waiting one
/// itself, so a busy queue wakes no other thread. Thread-safe; the width can
/// change at any time (a smaller width lets running jobs finish).
///
/// A queue is also a `TaskExecutor`: a task that prefers it
/// (`withTaskExecutorPreference`) runs its async code in the queue's slots,
/// and the CPU work it then asks of any queue
/// (``RenderCancellation/perform(on:_:)-(WorkQueue,_)``) runs at once on
/// the same thread. A request's decode, processing and encode then run on
/// one thread instead of waking a new one for each step, which on a machine
/// with as many requests as cores left cores idle: the scheduler put a
/// woken job on the busy core while the core that woke it went idle.
public final class WorkQueue: TaskExecutor, Sendable {
    private struct State {
        var width: Int
        var running = 0
        /// Waiting jobs from `head` on; a taken job's slot is cleared at once, so
        /// nothing a finished job captured (images, bytes, its owner) stays alive.
        var pending: [(@Sendable () -> Void)?] = []
        var head = 0
    }

    /// The name, for logs and thread labels.
    public let name: String
    private let state: Locked<State>
    private let pool = DispatchQueue.global(qos: .userInitiated)

    /// Makes a queue running at most `width` jobs at once (at least 1).
    public init(name: String, width: Int = WorkQueue.defaultWidth) {
        self.name = name
        state = Locked(State(width: max(1, width)))
    }

    /// The number of cores this process may use: the default width.
    public static var defaultWidth: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// How many jobs run at once (at least 1).
    public var width: Int {
        get { state.withLock { $0.width } }
        set {
            let started = state.withLock { state -> [@Sendable () -> Void] in
                state.width = max(1, newValue)
                return Self.takeReady(&state)
            }
            started.forEach(launch)
        }
    }

    /// How many jobs are running now.
    public var runningCount: Int { state.withLock { $0.running } }

    /// How many jobs wait for a free slot.
    public var pendingCount: Int { state.withLock { $0.pending.count - $0.head } }

    /// Runs `work` when a slot is free; returns at once.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let ready = state.withLock { state -> [@Sendable () -> Void] in
            state.pending.append(work)
            return Self.takeReady(&state)
        }
        ready.forEach(launch)
    }

    /// Runs `work` in a slot and returns its value; the caller's task waits without blocking a thread.
    func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await awaitDelivery { deliver in
            execute { deliver(work()) }
        }
    }

    /// Runs `job` (an async task's next part) in a slot, for tasks that prefer this queue as their executor.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// The queue whose job the calling thread is running, if any (the thread then holds a slot, off the Swift
    /// concurrency pool).
    static var current: WorkQueue? { RunningJob.queue }

    private func launch(_ work: @escaping @Sendable () -> Void) {
        pool.async { self.drain(from: work) }
    }

    /// Runs `first`, then the next waiting job on this thread while there is one; the slot is given back at the end.
    private func drain(from first: @escaping @Sendable () -> Void) {
        let outer = RunningJob.queue
        RunningJob.queue = self
        defer { RunningJob.queue = outer }
        var job: (@Sendable () -> Void)? = first
        while let work = job {
            work()
            let next = state.withLock { state -> [@Sendable () -> Void] in
                state.running -= 1
                return Self.takeReady(&state)
            }
            job = next.first
            next.dropFirst().forEach(launch)
        }
    }

    private static func takeReady(_ state: inout State) -> [@Sendable () -> Void] {
        var ready: [@Sendable () -> Void] = []
        while state.running < state.width, state.head < state.pending.count {
            if let job = state.pending[state.head] {
                ready.append(job)
                state.running += 1
            }
            state.pending[state.head] = nil
            state.head += 1
        }
        if state.head == state.pending.count {
            state.pending.removeAll(keepingCapacity: state.pending.count <= 256)
            state.head = 0
        } else if state.head > 64, state.head * 2 > state.pending.count {
            state.pending.removeFirst(state.head)
            state.head = 0
        }
        return ready
    }
}

/// The queue whose job a thread runs, kept in a thread-specific slot.
private enum RunningJob {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The calling thread's queue; set around each job (a job's queue does not outlive the job).
    static var queue: WorkQueue? {
        get { pthread_getspecific(key).map { Unmanaged<WorkQueue>.fromOpaque($0).takeUnretainedValue() } }
        set { pthread_setspecific(key, newValue.map { Unmanaged.passUnretained($0).toOpaque() }) }
    }
}

/// The bounded queues the retrieve pipeline does its CPU work on.
///
/// `decode` turns downloaded or cached bytes into images (and runs the
/// processor that decodes from bytes, such as shrink-on-load downsampling),
/// `process` runs processors on decoded images, `encode` serializes images for
/// the disk cache and for the server's responses. Each defaults to the core
/// count. ``shared`` is used by every manager, downloader and cache unless one
/// is given its own.
public final class PipelineQueues: Sendable {
    /// The queues every component uses by default, each as wide as the core count.
    public static let shared = PipelineQueues()

    /// Decoding bytes into images.
    public let decode: WorkQueue
    /// Processing decoded images.
    public let process: WorkQueue
    /// Encoding images into bytes.
    public let encode: WorkQueue

    /// Makes three queues with the given widths (default: the core count each).
    public init(decodeWidth: Int = WorkQueue.defaultWidth, processWidth: Int = WorkQueue.defaultWidth,
                encodeWidth: Int = WorkQueue.defaultWidth) {
        decode = WorkQueue(name: "halcyon.decode", width: decodeWidth)
        process = WorkQueue(name: "halcyon.process", width: processWidth)
        encode = WorkQueue(name: "halcyon.encode", width: encodeWidth)
    }
}
