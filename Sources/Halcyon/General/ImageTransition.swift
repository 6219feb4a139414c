import Foundation

/// How a target should bring in a newly loaded image.
///
/// Halcyon draws nothing itself: the transition is handed to the
/// ``ImageSettable`` target, which animates (or not) as its toolkit can.
public enum ImageTransition: Sendable, Equatable {
    /// Show the image at once.
    case none
    /// Fade in over the duration.
    case fade(TimeInterval)
    /// Flip in from the left over the duration.
    case flipFromLeft(TimeInterval)
    /// Flip in from the right over the duration.
    case flipFromRight(TimeInterval)
    /// Flip in from the top over the duration.
    case flipFromTop(TimeInterval)
    /// Flip in from the bottom over the duration.
    case flipFromBottom(TimeInterval)
    /// A target-defined transition, named, over the duration.
    case custom(name: String, duration: TimeInterval)

    /// How long the transition lasts; 0 for `.none`.
    public var duration: TimeInterval {
        switch self {
        case .none: return 0
        case .fade(let duration), .flipFromLeft(let duration), .flipFromRight(let duration),
             .flipFromTop(let duration), .flipFromBottom(let duration):
            return duration
        case .custom(_, let duration): return duration
        }
    }
}
