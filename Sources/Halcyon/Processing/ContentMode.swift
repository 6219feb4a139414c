/// How a resize fits an image to a reference size.
public enum ContentMode: String, Sendable, Hashable, CaseIterable {
    /// Stretch to exactly the reference size.
    case none
    /// Keep the aspect ratio; the result fits inside the reference size.
    case aspectFit
    /// Keep the aspect ratio; the result covers the reference size (nothing is cropped).
    case aspectFill
}
