import Foundation

/// An activity indicator a target shows while its image loads.
///
/// Halcyon calls `startAnimating()` when a load starts, `setProgress` as bytes
/// arrive, and `stopAnimating()` once when the load ends (in success, failure
/// or when a newer load replaces it), on the options' callback queue.
public protocol Indicator: Sendable {
    /// A load started.
    func startAnimating()
    /// The load ended.
    func stopAnimating()
    /// Bytes received and expected (expected is 0 when unknown).
    func setProgress(received: Int64, expected: Int64)
}

extension Indicator {
    public func setProgress(received: Int64, expected: Int64) {}
}
