import Foundation

/// Settings for progressive JPEG display (Kingfisher's `ImageProgressive`).
///
/// Kept so option lists written for Kingfisher compile and mean the same;
/// Halcyon delivers the final image only (see ``HalcyonOptionsInfoItem/progressiveJPEG(_:)``).
public struct ImageProgressive: Sendable, Equatable {
    /// Blur the partial scans.
    public var isBlur: Bool
    /// Show only the fastest scan.
    public var isFastestScan: Bool
    /// Least time between two shown scans, in seconds.
    public var scanInterval: TimeInterval

    /// The default: blurred, fastest scan, no interval.
    public static let `default` = ImageProgressive(isBlur: true, isFastestScan: true, scanInterval: 0)

    /// Makes the settings.
    public init(isBlur: Bool, isFastestScan: Bool, scanInterval: TimeInterval) {
        self.isBlur = isBlur
        self.isFastestScan = isFastestScan
        self.scanInterval = scanInterval
    }
}
