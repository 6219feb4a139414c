import Foundation

/// When a cached value stops being served.
///
/// Kingfisher's shape: a relative lifetime counted from the moment the value is
/// stored (or, with ``ExpirationExtending``, last read), a fixed date, never, or
/// already expired. `.expired` values are not stored at all.
public enum StorageExpiration: Sendable, Hashable {
    /// The value never expires.
    case never
    /// The value expires this many seconds after it is stored.
    case seconds(TimeInterval)
    /// The value expires this many days (of 86 400 s) after it is stored.
    case days(Int)
    /// The value expires at this date, whenever it is stored.
    case date(Date)
    /// The value is already expired: storing it is a no-op.
    case expired

    /// The expiration date of a value stored (or refreshed) at `date`.
    ///
    /// `.never` gives `Date.distantFuture`; `.expired` gives `Date.distantPast`.
    @inlinable
    public func estimatedExpirationSince(_ date: Date) -> Date {
        switch self {
        case .never: return .distantFuture
        case .seconds(let seconds): return date.addingTimeInterval(seconds)
        case .days(let days): return date.addingTimeInterval(TimeInterval(days) * 86_400)
        case .date(let fixed): return fixed
        case .expired: return .distantPast
        }
    }

    /// Whether a value stored at `now` with this expiration would already be expired.
    @inlinable
    public func isExpired(at now: Date) -> Bool {
        estimatedExpirationSince(now) <= now
    }
}

/// What a read does to the expiration date of the value it hits.
public enum ExpirationExtending: Sendable, Hashable {
    /// The expiration date stays as it is.
    case none
    /// The value's own expiration policy is applied again from the time of the read (sliding expiration).
    case cacheTime
    /// The given expiration is applied from the time of the read.
    case expirationTime(StorageExpiration)
}
