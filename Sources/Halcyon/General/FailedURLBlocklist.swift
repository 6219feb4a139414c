import Foundation

/// URLs that failed for good, so they are not fetched again and again.
///
/// SDWebImage's failed-URL blocklist: the manager adds a URL after a
/// permanent failure (an HTTP status such as 404 or 410, or data that does
/// not decode) and refuses to fetch it again until the `.retryFailed` option
/// is given or the entry is removed. Transient failures (timeouts, refused
/// connections, 5xx, cancellation) are never added. Thread-safe.
public final class FailedURLBlocklist: Sendable {
    private let urls = Locked<Set<URL>>([])

    /// Makes an empty blocklist.
    public init() {}

    /// Whether `url` is blocked.
    public func contains(_ url: URL) -> Bool {
        urls.withLock { $0.contains(url) }
    }

    /// Blocks `url`.
    public func insert(_ url: URL) {
        _ = urls.withLock { $0.insert(url) }
    }

    /// Unblocks `url`.
    public func remove(_ url: URL) {
        _ = urls.withLock { $0.remove(url) }
    }

    /// Unblocks every URL.
    public func removeAll() {
        urls.withLock { $0.removeAll() }
    }

    /// How many URLs are blocked.
    public var count: Int { urls.withLock { $0.count } }

    /// Whether `error` is a permanent failure that should block its URL.
    ///
    /// Permanent: HTTP 400, 403, 404, 405, 406, 410, 414, 415, 451 and
    /// any other 4xx except 408 and 429; data that is empty, of an unsupported
    /// format or corrupt. Not permanent: everything else.
    public static func isPermanent(_ error: HalcyonError) -> Bool {
        switch error {
        case .responseError(let reason):
            if case .invalidHTTPStatusCode(_, let statusCode) = reason {
                return (400..<500).contains(statusCode) && statusCode != 408 && statusCode != 429
            }
            return false
        case .processorError(let reason):
            switch reason {
            case .emptyData, .unsupportedFormat, .corruptData: return true
            default: return false
            }
        default:
            return false
        }
    }
}
