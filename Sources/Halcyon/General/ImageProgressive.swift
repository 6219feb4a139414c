import Foundation

/// Progressive JPEG previews (Kingfisher's `ImageProgressive`, SDWebImage's progressive loading).
///
/// With `.progressiveJPEG(_:)`, while a progressive JPEG downloads, each
/// completed scan is decoded from the bytes received so far (libjpeg fills
/// the missing detail, so every preview has the full size) and handed to
/// ``onImageUpdated`` on the options' callback queue, and shown on an
/// ``ImageSettable`` target by `hc.setImage`. Baseline JPEGs and other
/// formats get no previews. Previews never reach the cache and stop when the
/// retrieval ends (final image, failure or cancellation); the final image is
/// the plain decode.
public struct ImageProgressive: Sendable, Equatable {
    /// Blur the early scans (less with each scan).
    public var isBlur: Bool
    /// Preview only the first scan, then the final image.
    public var isFastestScan: Bool
    /// Least time between two previews, in seconds.
    public var scanInterval: TimeInterval
    /// Called with each preview, on the options' callback queue.
    public var onImageUpdated: (@Sendable (Image) -> Void)?

    /// The default: blurred, fastest scan, no interval.
    public static let `default` = ImageProgressive(isBlur: true, isFastestScan: true, scanInterval: 0)

    /// Makes the settings.
    public init(isBlur: Bool, isFastestScan: Bool, scanInterval: TimeInterval, onImageUpdated: (@Sendable (Image) -> Void)? = nil) {
        self.isBlur = isBlur
        self.isFastestScan = isFastestScan
        self.scanInterval = scanInterval
        self.onImageUpdated = onImageUpdated
    }

    /// Equal settings (the callback is not compared).
    public static func == (lhs: ImageProgressive, rhs: ImageProgressive) -> Bool {
        lhs.isBlur == rhs.isBlur && lhs.isFastestScan == rhs.isFastestScan && lhs.scanInterval == rhs.scanInterval
    }
}
