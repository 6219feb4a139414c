import Foundation

// MARK: - Keys

extension ImageCache {
    /// Appended to the processor identifier for images that hold only the first frame of their source.
    public static let firstFrameIdentifierSuffix = "#first-frame"

    /// The key an image is stored under: `key`, or `key@processorIdentifier` for a non-empty identifier.
    public static func computedKey(_ key: String, processorIdentifier identifier: String) -> String {
        identifier.isEmpty ? key : key + "@" + identifier
    }

    /// The identifier part of the cache key of images retrieved under `options`.
    ///
    /// The processor's identifier, followed by ``firstFrameIdentifierSuffix``
    /// with `.onlyLoadFirstFrame`: a first-frame image and the full animation of
    /// one source are different results, so they never share a memory or disk
    /// entry. This is the one rule every options-based read and the manager's
    /// stores use; pass its value as `processorIdentifier` to the other APIs.
    public static func processorIdentifier(for options: HalcyonParsedOptionsInfo) -> String {
        let identifier = options.processor.identifier
        return options.onlyLoadFirstFrame ? identifier + firstFrameIdentifierSuffix : identifier
    }
}
