import Foundation

/// The source of "now" for cache expiration and last-access bookkeeping.
///
/// The default reads the system clock; tests inject a clock they move by hand
/// so expiration can be checked without sleeping.
public struct CacheClock: Sendable {
    @usableFromInline let provider: @Sendable () -> Date

    /// A clock that reports whatever `now` returns; it may be called from any thread.
    public init(_ now: @escaping @Sendable () -> Date) {
        self.provider = now
    }

    /// The system clock.
    public static let system = CacheClock { Date() }

    /// The current date according to this clock.
    @inlinable
    public func now() -> Date { provider() }
}
