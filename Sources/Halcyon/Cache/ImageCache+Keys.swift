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
    /// results, so they never share a memory entry (nor a disk entry, but for
    /// the frame choice of an unprocessed one: see ``diskProcessorIdentifier(for:)``). (The pixel and
    /// frame limits are not part of it: they bound work, and a cached image
    /// costs none.) This is the one rule every options-based read and the
    /// manager's stores use; pass its value as `processorIdentifier` to the other APIs.
    public static func processorIdentifier(for options: HalcyonParsedOptionsInfo) -> String {
        identifier(for: options, framesChangeBytes: true)
    }

    /// The identifier part of the disk key of images retrieved under `options`.
    ///
    /// ``processorIdentifier(for:)`` without the frame choice when there is no
    /// processor: an unprocessed entry holds the source's own bytes, the same
    /// whichever frames are decoded from them, so a first-frame load and a full
    /// one share it, and each decodes it its own way into its own memory entry
    /// (Kingfisher answers a full request after a first-frame one from the disk
    /// too). A processed entry keeps the frame choice: its bytes are what the
    /// processor made of the frames it was given.
    public static func diskProcessorIdentifier(for options: HalcyonParsedOptionsInfo) -> String {
        identifier(for: options, framesChangeBytes: !options.processor.identifier.isEmpty)
    }

    private static func identifier(for options: HalcyonParsedOptionsInfo, framesChangeBytes: Bool) -> String {
        var identifier = options.processor.identifier
        if options.onlyLoadFirstFrame && framesChangeBytes { identifier += firstFrameIdentifierSuffix }
        let scale = Double(options.scaleFactor)
        if scale != 1, scale.isFinite {
            let rounded = (scale * 1000).rounded() / 1000
            identifier += scaleIdentifierPrefix + (rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded))
        }
        return identifier
    }
}
