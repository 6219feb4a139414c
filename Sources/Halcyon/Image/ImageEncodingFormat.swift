/// A target format for encoding an ``Image``, with its settings.
///
/// Default qualities come from ``OutputEncodingPolicy/default``
/// (JPEG 85, WebP 80, AVIF 60); to choose a format for an output, use
/// ``OutputEncodingPolicy/encoding(for:quality:hasAlpha:isAnimated:)``.
public enum ImageEncodingFormat: Sendable, Hashable, CustomStringConvertible {
    /// JPEG; `quality` 1...100 (default the policy's, 85). Alpha is flattened onto white.
    case jpeg(quality: Int = OutputEncodingPolicy.default.jpegQuality, progressive: Bool = false)
    /// PNG, lossless; `interlaced` writes Adam7.
    case png(interlaced: Bool = false)
    /// GIF; animations keep every frame, their delays and loop count.
    case gif
    /// WebP; `quality` 1...100 (default the policy's, 80), or `lossless`. Animations keep every frame.
    case webp(quality: Int = OutputEncodingPolicy.default.webpQuality, lossless: Bool = false)
    /// AVIF (AV1 in HEIF), where this libvips has an AV1 encoder; `quality` default the policy's, 60.
    case avif(quality: Int = OutputEncodingPolicy.default.avifQuality, lossless: Bool = false)
    /// TIFF, lossless.
    case tiff

    /// The file format this encodes to.
    public var format: ImageFormat {
        switch self {
        case .jpeg: return .jpeg
        case .png: return .png
        case .gif: return .gif
        case .webp: return .webp
        case .avif: return .avif
        case .tiff: return .tiff
        }
    }

    /// The encoding with default settings for a file format, if Halcyon can write it.
    ///
    /// `quality` (0...1, Kingfisher's compression quality) applies to the lossy
    /// formats; without it they use ``OutputEncodingPolicy/default``'s qualities.
    /// Nil for HEIC, BMP and unknown (no fallback here, unlike the policy).
    public init?(_ format: ImageFormat, compressionQuality quality: Double? = nil) {
        guard OutputEncodingPolicy.canEncode(format) else { return nil }
        let scaled = quality.map { Int(($0 * 100).rounded()) }
        self = OutputEncodingPolicy.default.encoding(for: format, quality: scaled, hasAlpha: true)
    }

    /// Whether this libvips build can write the format.
    public var isAvailable: Bool {
        switch self {
        case .avif: return VipsRuntime.hasOperation("heifsave_buffer") && ImageEncoder.canEncodeAVIF
        case .gif: return VipsRuntime.hasOperation("gifsave_buffer")
        case .webp: return VipsRuntime.hasOperation("webpsave_buffer")
        default: return true
        }
    }

    /// A short stable name with the settings, for identifiers and logs.
    public var description: String {
        switch self {
        case .jpeg(let quality, let progressive): return "jpeg(q=\(quality)\(progressive ? ",progressive" : ""))"
        case .png(let interlaced): return interlaced ? "png(interlaced)" : "png"
        case .gif: return "gif"
        case .webp(let quality, let lossless): return lossless ? "webp(lossless)" : "webp(q=\(quality))"
        case .avif(let quality, let lossless): return lossless ? "avif(lossless)" : "avif(q=\(quality))"
        case .tiff: return "tiff"
        }
    }
}
