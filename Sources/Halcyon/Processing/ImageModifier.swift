/// Changes an image after it was processed and cached; the change is never cached.
///
/// Use it for per-use tweaks, such as a different scale for one target.
public protocol ImageModifier: Sendable {
    /// Returns the image to hand to the caller.
    func modify(_ image: Image) -> Image
}

/// An ``ImageModifier`` made from a closure.
public struct AnyImageModifier: ImageModifier {
    private let body: @Sendable (Image) -> Image

    /// Makes a modifier from `modify`.
    public init(modify: @escaping @Sendable (Image) -> Image) {
        body = modify
    }

    public func modify(_ image: Image) -> Image { body(image) }
}
