import Foundation

/// URLs that failed for good, so they are not fetched again and again.
///
/// SDWebImage's failed-URL blocklist: the manager adds a URL after a
/// permanent failure (data that is empty or does not decode) and refuses to
/// fetch it again until the `.retryFailed` option is given or the entry is
/// removed; any later successful download of the URL (such as a `.retryFailed`
/// one) removes it. As in SDWebImage, an invalid HTTP status (404, 500...) is
/// not added, so the next load asks the server again; nor are timeouts,
/// refused connections or cancellations.
///
/// Bounded: it keeps at most ``countLimit`` URLs (default 10 000) and drops
/// the least recently used one (blocked or found blocked) past that, so a
/// stream of distinct failing URLs cannot grow it without end; a dropped URL
/// is simply fetched again once. Thread-safe (one lock).
public final class FailedURLBlocklist: Sendable {
    /// The default most URLs kept.
    public static let defaultCountLimit = 10_000

    private let urls = Locked(LRUList<URL, Void>())

    /// Most URLs kept.
    public let countLimit: Int

    /// Makes an empty blocklist keeping at most `countLimit` (at least 1) URLs.
    public init(countLimit: Int = FailedURLBlocklist.defaultCountLimit) {
        self.countLimit = max(1, countLimit)
    }

    /// Whether `url` is blocked; a hit marks it as recently used.
    public func contains(_ url: URL) -> Bool {
        urls.withLock { urls in
            guard let slot = urls.slot(for: url) else { return false }
            urls.touch(slot)
            return true
        }
    }

    /// Blocks `url`, dropping the least recently used URL when the list is full.
    public func insert(_ url: URL) {
        urls.withLock { urls in
            urls.insert((), for: url, cost: 0)
            _ = urls.evictOldest(whileCostAbove: 0, orCountAbove: countLimit)
        }
    }

    /// Unblocks `url`.
    public func remove(_ url: URL) {
        urls.withLock { $0.removeValue(forKey: url) }
    }

    /// Unblocks every URL.
    public func removeAll() {
        urls.withLock { $0.removeAll() }
    }

    /// How many URLs are blocked.
    public var count: Int { urls.withLock { $0.count } }

    /// Whether `error` is a permanent failure that should block its URL.
    ///
    /// SDWebImageDownloader's `shouldBlockFailedURLWithURL:error:` in its own
    /// error domain: bad image data (an empty body, data that is empty, of an
    /// unsupported format or corrupt) is permanent; an invalid HTTP status is
    /// not. Not permanent: everything else.
    public static func isPermanent(_ error: HalcyonError) -> Bool {
        switch error {
        case .responseError(let reason):
            if case .emptyBody = reason { return true }
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
