import Foundation

// MARK: - Keys

extension ImageCache {
    /// Appended to the processor identifier for images that hold only the first frame of their source.
    public static let firstFrameIdentifierSuffix = "#first-frame"

    /// The key an image is stored under: `key`, or `key@processorIdentifier` for a non-empty identifier.
    public static func computedKey(_ key: String, processorIdentifier identifier: String) -> String {
        identifier.isEmpty ? key : key + "@" + identifier
    }

    /// Appended (with the scale) to the processor identifier for images decoded at a scale other than 1.
    public static let scaleIdentifierPrefix = "#scale"

    /// The identifier part of the cache key of images retrieved under `options`.
    ///
    /// The processor's identifier, followed by ``firstFrameIdentifierSuffix``
    /// with `.onlyLoadFirstFrame` and by ``scaleIdentifierPrefix`` and the
    /// scale with a `.scaleFactor` other than 1: a first-frame image and the
    /// full animation of one source, or its 1× and 2× decodes, are different
    /// results, so they never share a memory or disk entry. (The pixel and
    /// frame limits are not part of it: they bound work, and a cached image
    /// costs none.) This is the one rule every options-based read and the
    /// manager's stores use; pass its value as `processorIdentifier` to the other APIs.
    public static func processorIdentifier(for options: HalcyonParsedOptionsInfo) -> String {
        var identifier = options.processor.identifier
        if options.onlyLoadFirstFrame { identifier += firstFrameIdentifierSuffix }
        let scale = Double(options.scaleFactor)
        if scale != 1, scale.isFinite {
            let rounded = (scale * 1000).rounded() / 1000
            identifier += scaleIdentifierPrefix + (rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded))
        }
        return identifier
    }
}
