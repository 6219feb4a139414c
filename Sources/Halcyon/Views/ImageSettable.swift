import Foundation

/// Anything with a settable image: a GUI toolkit's image widget, a view model, a test double.
///
/// Conform, keep one ``ImageSettableState`` per object, and `target.hc.setImage(with:)`
/// follows Kingfisher's flow for it. Halcyon calls ``setImage(_:transition:)``
/// on the options' callback queue (the main queue by default).
public protocol ImageSettable: HalcyonCompatible, Sendable {
    /// Halcyon's bookkeeping for this target; return the same object every time.
    var halcyonState: ImageSettableState { get }
    /// The image the target shows now.
    var image: Image? { get }
    /// Shows `image` (nil clears it); `transition` is `.none` unless the options gave one
    /// and the image came from its source (or `.forceTransition` was set).
    func setImage(_ image: Image?, transition: ImageTransition)
}
