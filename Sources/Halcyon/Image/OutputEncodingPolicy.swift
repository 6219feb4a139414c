import Foundation

/// How Halcyon chooses an output format and its settings: the one policy used
/// by ``DefaultCacheSerializer``, the `halcyon` CLI and `halcyon serve`.
///
/// Default qualities, the one table every default in Halcyon comes from
/// (``ImageEncodingFormat``'s case defaults and
/// ``ImageEncodingFormat/init(_:compressionQuality:)`` included):
///
/// | Format | Quality | Why                                                          |
/// |--------|---------|--------------------------------------------------------------|
/// | JPEG   | 85      | a common web default: little visible loss, much smaller than 95-100 |
/// | WebP   | 80      | libwebp's scale runs lower than JPEG's for a like result     |
/// | AVIF   | 60      | AV1's scale runs lower still for a like result               |
///
/// These are the values the image service has always used, so its responses
/// keep their size (and stay close to the q80/75/65 of the image-server
/// benchmark, `Benchmarks/Sources/ServerBenchmark`); the library's and the
/// CLI's JPEG default moved from 90 to
/// 85 to match. PNG, GIF and TIFF have no quality. Kingfisher-style
/// `compressionQuality` values (0...1) given by a caller are not defaults and
/// always win, as does any explicit quality (the encoder clamps it to 1...100).
///
/// Formats Halcyon cannot write (HEIC, BMP, unknown) fall back: an animation
/// becomes GIF (every frame kept), a still image PNG when it has alpha, else
/// JPEG (``UnwritableFallback/pngOrJPEG``, for delivery) or always PNG
/// (``UnwritableFallback/png``, for files and caches that should lose nothing
/// more than they must).
public struct OutputEncodingPolicy: Sendable, Hashable {
    /// What a still image in a format Halcyon cannot write is encoded as.
    public enum UnwritableFallback: Sendable, Hashable {
        /// PNG when the image has alpha, else JPEG at ``OutputEncodingPolicy/jpegQuality``.
        case pngOrJPEG
        /// Always PNG: lossless and keeps alpha.
        case png
    }

    /// JPEG quality used when the caller gives none, 1...100.
    public var jpegQuality: Int
    /// WebP quality used when the caller gives none, 1...100.
    public var webpQuality: Int
    /// AVIF quality used when the caller gives none, 1...100.
    public var avifQuality: Int
    /// What a still image in a format Halcyon cannot write becomes.
    public var unwritableFallback: UnwritableFallback
    /// The formats content negotiation may pick, best first (default AVIF, then WebP).
    ///
    /// A format is picked only when the `Accept` header lists its MIME type
    /// without `q=0` and this libvips can write it.
    public var negotiableFormats: [ImageFormat]

    /// Makes a policy; the defaults are the table in the type's documentation.
    public init(
        jpegQuality: Int = 85,
        webpQuality: Int = 80,
        avifQuality: Int = 60,
        unwritableFallback: UnwritableFallback = .pngOrJPEG,
        negotiableFormats: [ImageFormat] = [.avif, .webp]
    ) {
        self.jpegQuality = jpegQuality
        self.webpQuality = webpQuality
        self.avifQuality = avifQuality
        self.unwritableFallback = unwritableFallback
        self.negotiableFormats = negotiableFormats
    }

    /// The policy of the image service: default qualities, PNG-or-JPEG fallback, AVIF then WebP.
    public static let `default` = OutputEncodingPolicy()

    /// The default policy, except that still images in unwritable formats always become PNG.
    ///
    /// Used by ``DefaultCacheSerializer`` and the CLI, which write caches and
    /// files where a lossy JPEG of a BMP or HEIC would be a surprise.
    public static let pngFallback = OutputEncodingPolicy(unwritableFallback: .png)

    // MARK: - Qualities

    /// The quality used for `format` when the caller gives none; nil for formats without one.
    public func defaultQuality(for format: ImageFormat) -> Int? {
        switch format {
        case .jpeg: return jpegQuality
        case .webp: return webpQuality
        case .avif: return avifQuality
        case .png, .gif, .tiff, .heic, .bmp, .unknown: return nil
        }
    }

    // MARK: - Choosing the format

    /// Whether Halcyon has an encoder for `format` (JPEG, PNG, GIF, WebP, AVIF, TIFF).
    ///
    /// Says nothing about this libvips build; see ``isAvailable(_:)``.
    public static func canEncode(_ format: ImageFormat) -> Bool {
        switch format {
        case .jpeg, .png, .gif, .webp, .avif, .tiff: return true
        case .heic, .bmp, .unknown: return false
        }
    }

    /// Whether `format` can be written here: Halcyon encodes it and this libvips has the saver.
    public static func isAvailable(_ format: ImageFormat) -> Bool {
        guard canEncode(format) else { return false }
        return OutputEncodingPolicy.default.encoding(for: format, quality: nil, hasAlpha: true).isAvailable
    }

    /// The writable format named by a file extension or a file name, if any.
    ///
    /// Accepts `png`, `.png`, `photo.PNG` or `/a/b/photo.png` (the text after the
    /// last dot of the last path component; a bare word is read as an
    /// extension). Returns nil for unknown extensions and for formats Halcyon
    /// cannot write (`bmp`, `heic`).
    public func format(forExtension text: String) -> ImageFormat? {
        let name = text.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? text
        let ext = name.split(separator: ".", omittingEmptySubsequences: false).last.map(String.init) ?? name
        guard let format = ImageFormat(fileExtension: ext), Self.canEncode(format) else { return nil }
        return format
    }

    /// The best of ``negotiableFormats`` that an `Accept` header lists and this libvips writes; nil when none.
    ///
    /// Media types are compared case-insensitively; a type whose `q` parameter
    /// is zero (`q=0`, `q=0.0`) is refused. Wildcards (`image/*`, `*/*`) pick
    /// nothing: the caller then keeps the source's format. `isAvailable`
    /// decides whether a format can be written (default: this libvips).
    public func negotiatedFormat(
        accepting acceptHeader: String?, isAvailable: (ImageFormat) -> Bool = OutputEncodingPolicy.isAvailable
    ) -> ImageFormat? {
        guard let acceptHeader else { return nil }
        let listed = Self.acceptedMediaTypes(acceptHeader)
        return negotiableFormats.first { listed.contains($0.mimeType) && isAvailable($0) }
    }

    /// The output format for a request: the negotiated one, else the source's, else the fallback.
    ///
    /// Negotiation is ``negotiatedFormat(accepting:isAvailable:)``; without a
    /// match the source's format is kept when Halcyon writes it, otherwise see
    /// ``writableFormat(for:hasAlpha:isAnimated:)``. The result can always be encoded.
    public func format(
        accepting acceptHeader: String?, source: ImageFormat, hasAlpha: Bool, isAnimated: Bool = false,
        isAvailable: (ImageFormat) -> Bool = OutputEncodingPolicy.isAvailable
    ) -> ImageFormat {
        negotiatedFormat(accepting: acceptHeader, isAvailable: isAvailable)
            ?? writableFormat(for: source, hasAlpha: hasAlpha, isAnimated: isAnimated)
    }

    /// `format` when Halcyon can write it, else the fallback.
    ///
    /// The fallback for HEIC, BMP and unknown: GIF for an animation, else PNG
    /// with alpha, else JPEG (``UnwritableFallback/pngOrJPEG``) or PNG
    /// (``UnwritableFallback/png``). Does not check this libvips build.
    public func writableFormat(for format: ImageFormat, hasAlpha: Bool, isAnimated: Bool = false) -> ImageFormat {
        if Self.canEncode(format) { return format }
        if isAnimated { return .gif }
        switch unwritableFallback {
        case .pngOrJPEG: return hasAlpha ? .png : .jpeg
        case .png: return .png
        }
    }

    // MARK: - Encoding settings

    /// The encoding for `format`: `quality` when given, else this policy's default for the format.
    ///
    /// Formats Halcyon cannot write go through
    /// ``writableFormat(for:hasAlpha:isAnimated:)`` first (HEIC without alpha
    /// becomes `.jpeg(quality: jpegQuality)` under the default policy). PNG is
    /// not interlaced, JPEG not progressive, WebP and AVIF lossy. Whether this
    /// libvips can write the result is not checked (see ``ImageEncodingFormat/isAvailable``).
    public func encoding(for format: ImageFormat, quality: Int?, hasAlpha: Bool, isAnimated: Bool = false) -> ImageEncodingFormat {
        switch writableFormat(for: format, hasAlpha: hasAlpha, isAnimated: isAnimated) {
        case .jpeg: return .jpeg(quality: quality ?? jpegQuality, progressive: false)
        case .webp: return .webp(quality: quality ?? webpQuality, lossless: false)
        case .avif: return .avif(quality: quality ?? avifQuality, lossless: false)
        case .png: return .png(interlaced: false)
        case .gif: return .gif
        case .tiff: return .tiff
        case .heic, .bmp, .unknown: return .png(interlaced: false)  // unreachable: writableFormat never returns these
        }
    }

    /// The encoding for `image` in `format` (default: its original format), with its alpha and animation.
    ///
    /// Same rules as ``encoding(for:quality:hasAlpha:isAnimated:)``.
    public func encoding(for image: Image, as format: ImageFormat? = nil, quality: Int? = nil) -> ImageEncodingFormat {
        encoding(for: format ?? image.originalFormat, quality: quality, hasAlpha: image.hasAlpha, isAnimated: image.isAnimated)
    }

    // MARK: - Accept parsing

    /// The lowercased media types of an `Accept` header, without the ones refused by `q=0`.
    static func acceptedMediaTypes(_ header: String) -> Set<String> {
        var types: Set<String> = []
        for range in header.lowercased().split(separator: ",") {
            let fields = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let type = fields.first, !type.isEmpty else { continue }
            let refused = fields.dropFirst().contains { parameter in
                let compact = parameter.replacingOccurrences(of: " ", with: "")
                guard compact.hasPrefix("q=") else { return false }
                return Double(compact.dropFirst(2)) == 0
            }
            if !refused { types.insert(type) }
        }
        return types
    }
}
