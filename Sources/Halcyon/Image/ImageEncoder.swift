import CHalcyonVips
import Foundation

/// Encodes an ``Image`` with libvips' savers, or with Halcyon's own encoders where they take the image.
///
/// PNG (libdeflate), JPEG (libjpeg), WebP (libwebp) and AVIF (libheif, libaom on one thread) of plain 8-bit images
/// are encoded on the calling thread by Halcyon's encoders, which write the bytes libvips' savers would; libvips'
/// savers compress on libvips' thread pool while the calling thread waits. GIF and WebP keep every frame of an animation with its delays and loop
/// count; formats without animation get the first frame. JPEG has no alpha, so
/// transparent pixels are flattened onto white. Failures are
/// `HalcyonError.processorError(.encodeFailed)`.
public enum ImageEncoder {
    /// Encodes `image` in `encoding`; runs on the caller's thread.
    public static func encode(_ image: Image, as encoding: ImageEncodingFormat) throws(HalcyonError) -> Data {
        let format = encoding.format
        if case .avif = encoding, !VipsRuntime.hasOperation("heifsave_buffer") {
            throw .processorError(reason: .encodeFailed(format: .avif, message: "this libvips has no HEIF/AVIF saver"))
        }
        let source = try prepared(image, for: encoding)
        switch encoding {
        case .jpeg(let quality, let progressive):
            return try jpeg(source.flattened(background: [255, 255, 255]), quality: clamp(quality), progressive: progressive)
        case .png(let interlaced):
            return try png(source, interlaced: interlaced)
        case .gif:
            return try source.saved(as: format) { hc_gifsave($0, $1, $2) }
        case .webp(let quality, let lossless):
            return try webp(source, quality: clamp(quality), lossless: lossless)
        case .avif(let quality, let lossless):
            return try avif(source, quality: clamp(quality), lossless: lossless)
        case .tiff:
            return try source.saved(as: format) { hc_tiffsave($0, $1, $2) }
        }
    }

    /// Whether an AV1 encoder is really there: libheif may be built without one.
    static let canEncodeAVIF: Bool = {
        guard let probe = try? Image(rgbaPixels: [UInt8](repeating: 128, count: 16 * 16 * 4), width: 16, height: 16) else {
            return false
        }
        return (try? encode(probe, as: .avif(quality: 50))) != nil
    }()

    // MARK: - Steps

    /// The libvips image to save: all frames with animation metadata, or the first frame.
    private static func prepared(_ image: Image, for encoding: ImageEncodingFormat) throws(HalcyonError) -> VipsImageRef {
        guard image.isAnimated else { return image.vips }
        guard encoding.format.supportsAnimation else { return try image.frameImage(0) }
        let delays = image.frameDelays.map { Int32(max(0, ($0 * 1000).rounded())) }
        return try image.vips.apply("animation metadata") { input, output in
            delays.withUnsafeBufferPointer { buffer in
                hc_with_animation(input, Int32(image.height), buffer.baseAddress, Int32(delays.count), Int32(image.loopCount), output)
            }
        }
    }

    /// The zlib level of every PNG: with the sub filter, as fast as zlib's level 6 unfiltered and a quarter smaller on
    /// photographs.
    static let pngLevel = 4

    /// `image` as PNG at ``pngLevel`` with the sub row filter, by the encoder `engines` picks for it
    /// (``ImageEngines/pngSaveEngine(for:level:interlaced:)``): libdeflate (about twice zlib's speed) for plain
    /// 8-bit images, libpng for the rest, interlaced output included. A source's text whose keyword PNG cannot carry
    /// is dropped first; it would fail the whole save.
    static func png(_ image: VipsImageRef, interlaced: Bool, engines: ImageEngines = .current) throws(HalcyonError) -> Data {
        let writable = try image.apply("png comments") { hc_png_writable_comments($0, $1) }
        let level = Int32(pngLevel)
        switch engines.pngSaveEngine(for: writable, level: pngLevel, interlaced: interlaced) {
        case .halcyon: return try writable.saved(as: .png) { hc_png_save_fast($0, level, $1, $2) }
        case .libvips: return try writable.saved(as: .png) { hc_pngsave_libpng($0, level, interlaced ? 1 : 0, $1, $2) }
        }
    }

    /// `image` as JPEG by the encoder `engines` picks for it (``ImageEngines/jpegSaveEngine(for:)``): libjpeg on the
    /// calling thread for 8-bit sRGB and grey images, libvips' saver for the rest. Both write the same bytes.
    static func jpeg(_ image: VipsImageRef, quality: Int32, progressive: Bool, engines: ImageEngines = .current) throws(HalcyonError) -> Data {
        try image.saved(as: .jpeg, quality: quality, flag: progressive, by: engines.jpegSaveEngine(for: image),
                        inline: hc_jpegsave_inline, libvips: hc_jpegsave)
    }

    /// `image` as WebP by the encoder `engines` picks for it (``ImageEngines/webpSaveEngine(for:)``): libwebp on the
    /// calling thread for still 8-bit sRGB images, libvips' saver for the rest (animations among them). Both write the
    /// same bytes.
    static func webp(_ image: VipsImageRef, quality: Int32, lossless: Bool, engines: ImageEngines = .current) throws(HalcyonError) -> Data {
        try image.saved(as: .webp, quality: quality, flag: lossless, by: engines.webpSaveEngine(for: image),
                        inline: hc_webpsave_inline, libvips: hc_webpsave)
    }

    /// How many WebPs libwebp encoded on the calling thread (for tests).
    static var inlineWebPCount: Int { Int(hc_webp_save_count()) }

    /// `image` as AVIF (effort 0) by the encoder `engines` picks for it (``ImageEngines/avifSaveEngine(for:)``): libheif
    /// on the calling thread, libaom on one thread, for still 8-bit sRGB images; libvips' saver for the rest. Both
    /// write the same bytes.
    static func avif(_ image: VipsImageRef, quality: Int32, lossless: Bool, engines: ImageEngines = .current) throws(HalcyonError) -> Data {
        try image.saved(as: .avif, quality: quality, flag: lossless, by: engines.avifSaveEngine(for: image),
                        inline: hc_avifsave_inline, libvips: hc_avifsave)
    }

    /// How many AVIFs libheif encoded on the calling thread (for tests).
    static var inlineAVIFCount: Int { Int(hc_avif_save_count()) }

    /// How many JPEGs libjpeg encoded on the calling thread (for tests).
    static var inlineJPEGCount: Int { Int(hc_jpeg_save_count()) }

    /// How many PNGs libdeflate encoded on the calling thread (for tests).
    static var libdeflatePNGCount: Int { Int(hc_png_save_count()) }

    private static func clamp(_ quality: Int) -> Int32 { Int32(min(100, max(1, quality))) }
}

extension Image {
    /// Encodes this image; see ``ImageEncoder/encode(_:as:)``.
    public func encoded(as encoding: ImageEncodingFormat) throws(HalcyonError) -> Data {
        try ImageEncoder.encode(self, as: encoding)
    }
}

extension VipsImageRef {
    /// A saver's C entry point: the image, the quality, a flag (progressive or lossless), then the buffer and length.
    typealias Saver = @convention(c) (
        UnsafeMutablePointer<VipsImage>?, Int32, Int32, UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafeMutablePointer<Int>?
    ) -> Int32

    /// This image saved by `inline` (Halcyon's encoder on the calling thread) or `libvips`, as `engine` says.
    func saved(
        as format: ImageFormat, quality: Int32, flag: Bool, by engine: ImageEngine, inline: Saver, libvips: Saver
    ) throws(HalcyonError) -> Data {
        let saver = engine == .halcyon ? inline : libvips
        let value: Int32 = flag ? 1 : 0
        return try saved(as: format) { saver($0, quality, value, $1, $2) }
    }
}
