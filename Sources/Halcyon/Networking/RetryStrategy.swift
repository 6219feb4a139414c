import Foundation

/// What a ``RetryStrategy`` decides after a failure.
public enum RetryDecision: Sendable {
    /// Try the same source again; `userInfo` reaches the next ``RetryContext``.
    case retry(userInfo: (any Sendable)?)
    /// Give up and report the error.
    case stop
}

/// What a retry strategy knows about a failed attempt.
public struct RetryContext: Sendable {
    /// The source that failed.
    public let source: Source
    /// The error of the failed attempt.
    public let error: HalcyonError
    /// How many retries were made before this failure (0 after the first attempt).
    public let retriedCount: Int
    /// What the previous decision passed along, if anything.
    public let userInfo: (any Sendable)?

    /// Makes a context; the manager builds these.
    public init(source: Source, error: HalcyonError, retriedCount: Int, userInfo: (any Sendable)? = nil) {
        self.source = source
        self.error = error
        self.retriedCount = retriedCount
        self.userInfo = userInfo
    }
}

/// Decides whether, and when, a failed retrieval is tried again.
public protocol RetryStrategy: Sendable {
    /// Returns the decision for `context`; may wait (a delay) before returning `.retry`.
    ///
    /// Implement this or Kingfisher's ``retry(context:retryHandler:)``: each defaults to the other (implementing
    /// neither recurses).
    func retry(context: RetryContext) async -> RetryDecision
    /// Kingfisher's callback form of ``retry(context:)``: hands the decision to `retryHandler` once.
    func retry(context: RetryContext, retryHandler: @escaping @Sendable (RetryDecision) -> Void)
}

extension RetryStrategy {
    /// Waits for ``retry(context:retryHandler:)``.
    public func retry(context: RetryContext) async -> RetryDecision {
        await withCheckedContinuation { continuation in
            retry(context: context) { continuation.resume(returning: $0) }
        }
    }

    /// Runs ``retry(context:)`` on a new task and hands its decision to `retryHandler`.
    public func retry(context: RetryContext, retryHandler: @escaping @Sendable (RetryDecision) -> Void) {
        Task { retryHandler(await retry(context: context)) }
    }
}

/// Retries response errors up to a count, after a delay.
///
/// Never retries a cancelled task or an error that is not a response error
/// (a bad request, a corrupt image or a cache failure will fail again). A
/// cancellation during the delay stops the retries.
public struct DelayRetryStrategy: RetryStrategy {
    /// How long to wait before each retry.
    public enum Interval: Sendable {
        /// The same delay before every retry.
        case seconds(TimeInterval)
        /// The delay grows by this much with each retry: 1×, 2×, 3×...
        case accumulated(TimeInterval)
        /// The delay for a retry count, from your own function.
        case custom(block: @Sendable (_ retriedCount: Int) -> TimeInterval)

        /// The delay before the retry after `retriedCount` earlier retries.
        public func timeInterval(for retriedCount: Int) -> TimeInterval {
            switch self {
            case .seconds(let interval): return interval
            case .accumulated(let interval): return Double(retriedCount + 1) * interval
            case .custom(let block): return block(retriedCount)
            }
        }
    }

    /// How many retries at most.
    public let maxRetryCount: Int
    /// The delay before each retry.
    public let retryInterval: Interval

    /// Makes a strategy; the delay defaults to 3 seconds.
    public init(maxRetryCount: Int, retryInterval: Interval = .seconds(3)) {
        self.maxRetryCount = maxRetryCount
        self.retryInterval = retryInterval
    }

    public func retry(context: RetryContext) async -> RetryDecision {
        guard context.retriedCount < maxRetryCount else { return .stop }
        guard case .responseError = context.error else { return .stop }
        let delay = max(0, retryInterval.timeInterval(for: context.retriedCount))
        if delay > 0 {
            do {
                try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
            } catch {
                return .stop
            }
        }
        return Task.isCancelled ? .stop : .retry(userInfo: context.userInfo)
    }
}
