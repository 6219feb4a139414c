import Foundation

/// Which indicator a target shows while loading (Kingfisher's `IndicatorType`), set with `target.hc.indicatorType`.
public enum IndicatorType: Sendable {
    /// No indicator.
    case none
    /// An ``ActivityIndicator``: animating while loading, with the progress.
    case activity
    /// An ``ImageIndicator`` showing the image in `imageData` (an animated GIF, say) while loading.
    case image(imageData: Data)
    /// The given indicator.
    case custom(indicator: any Indicator)
}

/// The headless activity indicator of ``IndicatorType/activity``: its state, for a toolkit or a test to show.
///
/// One lock guards the state; Halcyon changes it on the options' callback queue.
public final class ActivityIndicator: Indicator {
    private struct Fields {
        var isAnimating = false
        var progress: (received: Int64, expected: Int64) = (0, 0)
        var startCount = 0
    }

    private let fields = Locked(Fields())

    /// Makes a stopped indicator.
    public init() {}

    /// Whether a load is running.
    public var isAnimating: Bool { fields.withLock { $0.isAnimating } }
    /// Bytes received and expected (0 when unknown) of the running or last load.
    public var progress: (received: Int64, expected: Int64) { fields.withLock { $0.progress } }
    /// How many loads it has shown.
    public var startCount: Int { fields.withLock { $0.startCount } }

    public func startAnimating() {
        fields.withLock {
            $0.isAnimating = true
            $0.progress = (0, 0)
            $0.startCount += 1
        }
    }

    public func stopAnimating() { fields.withLock { $0.isAnimating = false } }

    public func setProgress(received: Int64, expected: Int64) { fields.withLock { $0.progress = (received, expected) } }
}

/// The indicator of ``IndicatorType/image(imageData:)``: an activity indicator that carries an image to show.
public final class ImageIndicator: Indicator {
    /// The decoded indicator image (every frame of an animation), nil when the data is not an image.
    public let image: Image?
    private let activity = ActivityIndicator()

    /// Decodes `imageData` once; bad data gives an indicator without an image.
    public init(imageData: Data) {
        image = try? Image(data: imageData)
    }

    /// Whether a load is running (the image should be shown).
    public var isAnimating: Bool { activity.isAnimating }

    public func startAnimating() { activity.startAnimating() }
    public func stopAnimating() { activity.stopAnimating() }
    public func setProgress(received: Int64, expected: Int64) { activity.setProgress(received: received, expected: expected) }
}

extension IndicatorType {
    /// The indicator this type makes; nil for `.none`.
    func makeIndicator() -> (any Indicator)? {
        switch self {
        case .none: return nil
        case .activity: return ActivityIndicator()
        case .image(let data): return ImageIndicator(imageData: data)
        case .custom(let indicator): return indicator
        }
    }
}
