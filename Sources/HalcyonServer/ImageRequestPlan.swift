import Crypto
import Foundation
import Halcyon

/// One image request, read once from its path and headers: the options with
/// presets applied and values normalised, the source, the output format after
/// `Accept` negotiation, and the server settings that shape the answer.
///
/// Its ``identity`` holds everything that changes the answer's bytes or
/// headers, and nothing else. ``cacheKey`` is a digest of that value's
/// canonical encoding; every tier that keeps answers (the result disk, the
/// shared storage, the library's caches through the processor's identifier)
/// is keyed by it. No key is assembled by hand, so a field cannot be left out
/// of one key and kept in another: a new option is a new stored property of
/// ``ProcessingOptions`` and is part of the key from then on.
public struct ImageRequestPlan: Sendable, Hashable {
    /// What the answer depends on.
    public struct Identity: Sendable, Hashable, Codable {
        /// The source's cache key: its URL, or `local://` and its path under the local root.
        public var source: String
        /// The options as rendered (see ``ProcessingOptions/normalised(stripMetadata:keepCopyright:stripColorProfile:)``),
        /// without the expiry, which decides whether the URL is answered, not what the answer is.
        public var options: ProcessingOptions
        /// `f:` or the path's extension; when set, the answer does not vary with `Accept`.
        public var explicitFormat: ImageFormat?
        /// What `Accept` negotiated when nothing is explicit; nil keeps the source's format.
        public var negotiatedFormat: ImageFormat?
        /// The server settings that change the answer.
        public var rendering: Rendering
    }

    /// The server settings that change an answer's bytes: defaults the options fall back to and limits that
    /// shape the result.
    public struct Rendering: Sendable, Hashable, Codable {
        /// `--quality`: the quality when the URL gives none (nil: each format's own default).
        public var defaultQuality: Int?
        /// The most pixels on a side of a result (extend and padding stop there).
        public var maxResultSide: Int
        /// The most frames decoded from an animation.
        public var maxFrameCount: Int
        /// Whether animations are reduced to their first frame.
        public var onlyFirstFrame: Bool
        /// How strictly a damaged source is refused.
        public var strictness: DecodingStrictness
        /// The watermark image's name (a digest of its bytes and its date) when the options draw it.
        public var watermark: String?
    }

    /// What the answer depends on; two plans are equal when their identities are.
    public let identity: Identity
    /// ``identity``'s key: the SHA-256 of its canonical JSON encoding (sorted keys), in hex.
    public let cacheKey: String
    /// The source to read.
    public let source: Source
    /// `exp:`: the Unix time after which the URL is refused.
    public let expires: Int?

    /// Makes a plan; `options` are normalised already and keep their expiry, which the identity leaves out.
    init(source: Source, options: ProcessingOptions, explicitFormat: ImageFormat?, negotiatedFormat: ImageFormat?, rendering: Rendering) {
        var held = options
        held.expires = nil
        identity = Identity(
            source: source.cacheKey, options: held, explicitFormat: explicitFormat,
            negotiatedFormat: explicitFormat == nil ? negotiatedFormat : nil, rendering: rendering)
        cacheKey = Self.digest(identity)
        self.source = source
        expires = options.expires
    }

    /// The options as rendered.
    public var options: ProcessingOptions { identity.options }

    /// What the encode needs: the asked or negotiated format and the options.
    var output: OutputRequest {
        OutputRequest(explicit: identity.explicitFormat, negotiated: identity.negotiatedFormat, options: identity.options)
    }

    /// Whether the answer names `Accept` in `Vary` (nothing explicit chose the format).
    var variesWithAccept: Bool { identity.explicitFormat == nil }

    /// Whether results go to the result tiers: only those of http(s) sources (a local file is its own durable copy).
    var storesResult: Bool { source.isRemote }

    /// Whether two plans give the same answer: their identities are equal.
    public static func == (left: ImageRequestPlan, right: ImageRequestPlan) -> Bool { left.identity == right.identity }

    /// Hashes the identity only.
    public func hash(into hasher: inout Hasher) { hasher.combine(identity) }

    /// The SHA-256, in hex, of `value`'s JSON encoding with sorted keys: the same in every process and on every
    /// node (dictionaries with ``ImageFormat`` keys encode as sorted objects; sets are held as sorted arrays).
    static func digest(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain values (strings, numbers, booleans and their containers) does not fail; an empty
        // encoding would still give a key of its own, never another request's.
        let data = (try? encoder.encode(value)) ?? Data()
        return Data(SHA256.hash(data: data)).hexString
    }
}

// MARK: - Normalising

extension ProcessingOptions {
    /// These options as they are rendered: the server's defaults for metadata and orientation (on) resolved, turns in 0..<360, and
    /// effects that draw nothing (a blur, sharpen or corner radius of 0, pixelation of 1, a watermark at opacity 0)
    /// removed, so options that render alike are equal.
    public func normalised(stripMetadata: Bool, keepCopyright: Bool, stripColorProfile: Bool) -> ProcessingOptions {
        var options = self
        options.stripMetadata = self.stripMetadata ?? stripMetadata
        options.keepCopyright = self.keepCopyright ?? keepCopyright
        options.stripColorProfile = self.stripColorProfile ?? stripColorProfile
        options.autoRotate = autoRotate ?? true
        options.rotate = ((rotate % 360) + 360) % 360
        if let blur, blur <= 0 { options.blur = nil }
        if let sharpen, sharpen <= 0 { options.sharpen = nil }
        if let round, round <= 0 { options.round = nil }
        if let pixelate, pixelate <= 1 { options.pixelate = nil }
        if let watermark, watermark.opacity <= 0 { options.watermark = nil }
        return options
    }
}
