import CHalcyonVips
import Foundation

/// Decodes encoded bytes into an ``Image`` with libvips.
///
/// Order of work: sniff the format, read only the header, check the pixel and
/// frame limits, then decode (or shrink-on-load when a downsample size is
/// given, exactly or by the JPEG loader alone: ``DownsamplingMode``). EXIF
/// orientation is applied to still images. Errors are
/// `HalcyonError.processorError` reasons; no input crashes.
public enum ImageDecoder {
    /// Decodes `data`; runs on the caller's thread.
    public static func decode(_ data: Data, options: ImageDecodingOptions = ImageDecodingOptions()) throws(HalcyonError) -> Image {
        try decode(open(data, options: options), options: options)
    }

    /// Decodes an image opened by ``open(_:options:)``, without reading its header again.
    ///
    /// `options` should carry the limits it was opened with; its downsample
    /// size and mode choose the decode. Runs on the caller's thread.
    public static func decode(_ opened: OpenedImage, options: ImageDecodingOptions = ImageDecodingOptions()) throws(HalcyonError) -> Image {
        try decode(opened, options: options, engines: .current)
    }

    /// Decodes an opened image as the public `decode(_:options:)` does, with the PNG loader and the reduce `engines`
    /// picks (``ImageEngines``); the public one passes ``ImageEngines/current``.
    static func decode(_ opened: OpenedImage, options: ImageDecodingOptions, engines: ImageEngines) throws(HalcyonError) -> Image {
        let data = opened.data
        let (buffer, format, allFrames, header) = (opened.buffer, opened.format, opened.allFrames, opened.header)
        let frameCount = opened.frameCount

        let delays = frameDelays(header.frameDelaysInMilliseconds.map { TimeInterval($0) / 1000 }, count: frameCount)
        let loop = header.loopCount
        let scale = options.scaleFactor > 0 ? options.scaleFactor : 1

        if let target = options.downsampleSize {
            let pixels = max(1, Int((max(target.width, target.height) * scale).rounded()))
            return try downsampled(opened, to: pixels, options: options, engines: engines, scale: scale, delays: delays)
        }

        let decoded = try wrapDecodeFailure(format) { () throws(HalcyonError) -> VipsImageRef in
            if frameCount > 1 && !options.preloadAllAnimationData {
                return try header.srgb8()
            }
            // Decode once, top to bottom, on this thread (see `decodedIntoMemory`).
            let sequential = try load(buffer, format: format, allFrames: allFrames, strictness: options.strictness, sequential: true)
            guard frameCount == 1 else { return try sequential.srgb8().decodedIntoMemory() }
            return try stillImage(sequential, header: header)
        }
        return Image(vips: decoded, frameHeight: decoded.height / frameCount, frameCount: frameCount, scale: scale,
                     originalFormat: format, frameDelays: delays, loopCount: loop,
                     sourceFingerprint: DataFingerprint(data))
    }

    /// `opened` decoded so its longer side is `pixels` (or as it is when already smaller), by ``DownsamplingMode``.
    ///
    /// A still JPEG (grey or RGB) or plain PNG is shrunk by its loader; in the exact mode the fixed-point
    /// Lanczos reduce then takes it to the target, the work `vips_thumbnail` does with libvips' own
    /// resampler. A still WebP is scaled to the target by libwebp while it decodes, as `vips_thumbnail` has it
    /// scaled. Everything else, and animations, go through `vips_thumbnail`.
    private static func downsampled(
        _ opened: OpenedImage, to pixels: Int, options: ImageDecodingOptions, engines: ImageEngines, scale: CGFloat,
        delays: [TimeInterval]
    ) throws(HalcyonError) -> Image {
        let (data, format, header) = (opened.data, opened.format, opened.header)
        let (frameHeight, frameCount, loop) = (opened.height, opened.frameCount, header.loopCount)
        let sides = (longer: max(header.width, frameHeight), shorter: min(header.width, frameHeight))
        let exact = options.downsamplingMode == .exact
        if frameCount == 1, !exact || format != .jpeg || header.bands != 4,
           let shrunk = try shrunkByLoader(opened, sides: sides, atLeast: pixels, strictness: options.strictness, engines: engines) {
            let upright = opened.isSideways ? (width: opened.height, height: opened.width) : (width: opened.width, height: opened.height)
            let image = exact ? try fitted(shrunk, upright: upright, longerSide: pixels, engines: engines) : shrunk
            let unchanged = image.width == upright.width && image.height == upright.height
            return Image(vips: image, frameHeight: image.height, frameCount: 1, scale: scale, originalFormat: format,
                         frameDelays: [], loopCount: loop, sourceFingerprint: unchanged ? DataFingerprint(data) : nil)
        }
        let thumbnail = try wrapDecodeFailure(format) { () throws(HalcyonError) -> VipsImageRef in
            try VipsImageRef.make("thumbnail") { output in
                hc_thumbnail_buffer(opened.buffer.bytes.baseAddress, opened.buffer.count, Int32(pixels), Int32(pixels),
                                    opened.allFrames ? 1 : 0, options.strictness.vipsFailOn, output)
            }.srgb8().decodedIntoMemory()
        }
        let thumbHeight = frameCount > 1 ? thumbnail.height / frameCount : thumbnail.height
        let unchanged = thumbnail.width == header.width && thumbHeight == frameHeight
        return Image(vips: thumbnail, frameHeight: thumbHeight, frameCount: frameCount, scale: scale,
                     originalFormat: format, frameDelays: delays, loopCount: loop,
                     sourceFingerprint: unchanged ? DataFingerprint(data) : nil)
    }

    /// `image` (in memory, a loader's shrink of a source `upright` in size) reduced with Lanczos-3 to the
    /// source's size fitted in a `pixels` box: the longer side `pixels`, the shorter in proportion to the
    /// source (as `vips_thumbnail` sizes it) and at least one pixel; as it is when the source fits already.
    private static func fitted(
        _ image: VipsImageRef, upright: (width: Int, height: Int), longerSide pixels: Int, engines: ImageEngines
    ) throws(HalcyonError) -> VipsImageRef {
        let (width, height) = fittedSize(upright, longerSide: pixels)
        guard width != image.width || height != image.height else { return image }
        return try image.resized(horizontal: Double(width) / Double(image.width), vertical: Double(height) / Double(image.height),
                                 engines: engines).materialized()
    }

    /// Reads only the header of `data`: pixel width, frame height, frame count and format.
    ///
    /// Applies the same limits as ``decode(_:options:)-(Data,_)`` (pixels, frames), so a
    /// decompression bomb is refused here without decoding any pixels. The size
    /// is as stored, before EXIF orientation.
    public static func probe(
        _ data: Data, options: ImageDecodingOptions = ImageDecodingOptions()
    ) throws(HalcyonError) -> (width: Int, height: Int, frameCount: Int, format: ImageFormat) {
        let opened = try open(data, options: options)
        return (opened.width, opened.height, opened.frameCount, opened.format)
    }

    // MARK: - Steps

    /// Encoded bytes opened for decoding: format sniffed, header read, limits
    /// checked, no pixel decoded yet. Pass it to `decode(_:options:)` to read
    /// the header once for both a plan and the decode.
    public struct OpenedImage: Sendable {
        /// Pixel width, as stored (before EXIF orientation).
        public let width: Int
        /// Height of one frame, as stored.
        public let height: Int
        /// Number of frames (1 for a still image, or when only the first frame is read).
        public let frameCount: Int
        /// The sniffed format.
        public let format: ImageFormat
        let data: Data
        let buffer: EncodedBuffer
        let allFrames: Bool
        let header: VipsImageRef

        /// The EXIF orientation (1...8) decoding makes upright; 1 for animations, whose frames are not turned.
        public var orientation: Int {
            guard frameCount == 1 else { return 1 }
            let value = withExtendedLifetime(header) { header.orientation }
            return (1...8).contains(value) ? value : 1
        }

        /// Whether making the image upright swaps its width and height (EXIF orientations 5 to 8).
        package var isSideways: Bool { (5...8).contains(orientation) }

        /// Whether this is `data` (the same bytes in the same storage, not a copy) opened as `options` would open
        /// it (the same frames read), so decoding may start from it instead of reading the header again.
        package func opens(_ data: Data, options: ImageDecodingOptions) -> Bool {
            guard data.count == self.data.count, allFrames == ImageDecoder.readsAllFrames(format, options: options) else { return false }
            let mine = self.data.withUnsafeBytes { $0.baseAddress }
            return mine != nil && mine == data.withUnsafeBytes { $0.baseAddress }
        }
    }

    /// Opens `data`: sniffs the format, reads the header and checks the pixel and frame limits of `options`.
    ///
    /// Throws the same errors as decoding does for a bad or
    /// oversized header, before any pixel is decoded. Data that starts like a
    /// known format but that libvips' loader for it does not take is
    /// `corruptData`; `unsupportedFormat` is kept for data in no known format
    /// and for formats this build cannot read.
    public static func open(_ data: Data, options: ImageDecodingOptions = ImageDecodingOptions()) throws(HalcyonError) -> OpenedImage {
        guard !data.isEmpty else { throw .processorError(reason: .emptyData) }
        let format = ImageFormat(sniffing: data)
        guard format != .unknown else { throw .processorError(reason: .unsupportedFormat(.unknown)) }
        try VipsRuntime.ensureStarted()
        // A PNG's compressed text past the limits would be inflated, unbounded, with the header, and a chunk that
        // runs past the end allocated at its declared length.
        var source = data
        if format == .png {
            source = PNGChunkOverrun.cut(source) ?? source
            source = PNGCompressedText.capped(source) ?? source
        }
        let buffer = EncodedBuffer(copying: source)
        let allFrames = readsAllFrames(format, options: options)
        let header = try load(buffer, format: format, allFrames: allFrames, strictness: options.strictness)
        let frameHeight = allFrames ? header.pageHeight : header.height
        let frameCount = allFrames ? max(1, header.height / max(1, frameHeight)) : 1
        try checkLimits(width: header.width, frameHeight: frameHeight, frameCount: frameCount, options: options)
        return OpenedImage(width: header.width, height: frameHeight, frameCount: frameCount, format: format,
                           data: data, buffer: buffer, allFrames: allFrames, header: header)
    }

    /// Whether `options` open every frame of a source in `format` (an animated format, not limited to its first).
    static func readsAllFrames(_ format: ImageFormat, options: ImageDecodingOptions) -> Bool {
        !options.onlyFirstFrame && format.supportsAnimation
    }

    /// Opens the buffer lazily: libvips reads the header only.
    /// With `sequential`, the image can be read once from top to bottom only.
    private static func load(
        _ buffer: EncodedBuffer, format: ImageFormat, allFrames: Bool, strictness: DecodingStrictness, sequential: Bool = false
    ) throws(HalcyonError) -> VipsImageRef {
        let (frames, failOn) = (Int32(allFrames ? 1 : 0), strictness.vipsFailOn)
        return try runLoader(on: buffer, format: format) { output in
            sequential
                ? hc_load_buffer_sequential(buffer.bytes.baseAddress, buffer.count, frames, failOn, output)
                : hc_load_buffer(buffer.bytes.baseAddress, buffer.count, frames, failOn, output)
        }
    }

    /// Opens a JPEG for one sequential read, decoded at 1/`shrink` by libjpeg.
    private static func loadJPEG(_ buffer: EncodedBuffer, shrink: Int, strictness: DecodingStrictness) throws(HalcyonError) -> VipsImageRef {
        try runLoader(on: buffer, format: .jpeg) {
            hc_load_jpeg_buffer_shrunk(buffer.bytes.baseAddress, buffer.count, Int32(shrink), strictness.vipsFailOn, $0)
        }
    }

    /// `size` fitted in a box of `pixels` a side: the longer side `pixels`, the shorter in proportion (as
    /// `vips_thumbnail` sizes it) and at least one pixel; `size` itself when it fits already.
    static func fittedSize(_ size: (width: Int, height: Int), longerSide pixels: Int) -> (width: Int, height: Int) {
        let longer = max(size.width, size.height)
        guard longer > pixels else { return size }
        let factor = Double(pixels) / Double(longer)
        return (max(1, Int((Double(size.width) * factor).rounded())), max(1, Int((Double(size.height) * factor).rounded())))
    }

    /// The loader's own shrink of a still image to `pixels` or more on its longer side: libjpeg's 1/2, 1/4 or 1/8 for
    /// a JPEG, whole-pixel boxes for a plain PNG (when `engines` picks Halcyon's PNG loader), libwebp's scaling to the
    /// fitted size for a WebP (when `engines` picks Halcyon's WebP loader); nil for any other image, left to
    /// `vips_thumbnail`. No factor is larger than the shorter side, so neither side of the result falls below one pixel.
    private static func shrunkByLoader(
        _ opened: OpenedImage, sides: (longer: Int, shorter: Int), atLeast pixels: Int, strictness: DecodingStrictness,
        engines: ImageEngines
    ) throws(HalcyonError) -> VipsImageRef? {
        let (buffer, format) = (opened.buffer, opened.format)
        switch format {
        case .jpeg:
            let shrink = jpegShrink(longerSide: sides.longer, shorterSide: sides.shorter, atLeast: pixels)
            let decoded = try wrapDecodeFailure(format) { () throws(HalcyonError) -> VipsImageRef in
                try stillImage(loadJPEG(buffer, shrink: shrink, strictness: strictness), header: opened.header)
            }
            return decoded
        case .png:
            let shrink = min(pngShrink(longerSide: sides.longer, atLeast: pixels), max(1, sides.shorter))
            return try wrapDecodeFailure(format) { () throws(HalcyonError) in
                try loadPNG(buffer, header: opened.header, shrink: shrink, engines: engines)
            }
        case .webp:
            let size = fittedSize((opened.width, opened.height), longerSide: pixels)
            return try wrapDecodeFailure(format) { () throws(HalcyonError) in
                try loadWebP(buffer, header: opened.header, size: size, engines: engines)
            }
        default:
            return nil
        }
    }

    /// Decodes a plain PNG (8-bit grey or RGB, not interlaced, no transparency) box-shrunk by `shrink` while it
    /// inflates, as 8-bit sRGB in memory, upright by its EXIF orientation, with the metadata and resolution of libvips'
    /// `header` read of the same bytes, when `engines` picks Halcyon's loader for it
    /// (``ImageEngines/pngLoadEngine(for:shrink:)``); nil for any other or damaged PNG, or when the setting says
    /// libvips: the caller then decodes it with libvips.
    static func loadPNG(_ buffer: EncodedBuffer, header: VipsImageRef, shrink: Int, engines: ImageEngines) throws(HalcyonError) -> VipsImageRef? {
        guard engines.pngLoadEngine(for: buffer, shrink: shrink) == .halcyon else { return nil }
        var output: UnsafeMutablePointer<VipsImage>?
        let status = withExtendedLifetime(header) {
            hc_png_load_shrunk(buffer.bytes.baseAddress, buffer.count, Int32(shrink), header.pointer, &output)
        }
        return try uprightLoaded(status: status, output)
    }

    /// Decodes a still WebP scaled by libwebp to `size` (as stored, before EXIF orientation; at most the stored size)
    /// on this thread, as 8-bit sRGB in memory, upright by its EXIF orientation, with the metadata and resolution of
    /// libvips' `header` read of the same bytes, when `engines` picks Halcyon's loader for it
    /// (``ImageEngines/webpLoadEngine(for:)``); nil for an animated or damaged WebP, or when the setting says
    /// libvips: the caller then decodes it with libvips.
    static func loadWebP(
        _ buffer: EncodedBuffer, header: VipsImageRef, size: (width: Int, height: Int), engines: ImageEngines
    ) throws(HalcyonError) -> VipsImageRef? {
        guard engines.webpLoadEngine(for: buffer) == .halcyon,
              let width = Int32(exactly: size.width), let height = Int32(exactly: size.height) else { return nil }
        var output: UnsafeMutablePointer<VipsImage>?
        let status = withExtendedLifetime(header) {
            hc_webp_load_scaled(buffer.bytes.baseAddress, buffer.count, width, height, header.pointer, &output)
        }
        return try uprightLoaded(status: status, output)
    }

    /// How many WebPs the scaling loader decoded on the calling thread (for tests).
    static var scalingWebPLoads: Int { Int(hc_webp_load_count()) }

    /// The result of one of Halcyon's loaders (0: `output`; 1: left to libvips; -1: failed with libvips' error set)
    /// as an 8-bit sRGB image upright by its EXIF orientation; nil when left to libvips.
    private static func uprightLoaded(status: Int32, _ output: UnsafeMutablePointer<VipsImage>?) throws(HalcyonError) -> VipsImageRef? {
        guard status == 0, let output else {
            if let output { hc_unref(output) }
            guard status < 0 else { return nil }
            throw .processorError(reason: .operationFailed(operation: "decode", message: VipsRuntime.takeErrorMessage()))
        }
        let shrunk = VipsImageRef(taking: output)
        let srgb = hc_is_uchar_srgb(output) == 1 ? shrunk : try shrunk.srgb8().materialized()
        let orientation = withExtendedLifetime(srgb) { Int(hc_orientation(srgb.pointer)) }
        guard (2...8).contains(orientation) else { return srgb }
        return try srgb.apply("autorot") { hc_autorot($0, $1) }.materialized()
    }

    /// How many PNGs the shrinking loader decoded on the calling thread (for tests).
    static var shrinkingPNGLoads: Int { Int(hc_png_fast_count()) }

    /// The box shrink for the PNG loader: the largest whole factor that keeps the longer side at twice
    /// `pixels` or more, so the Lanczos resize after it still has two source pixels a step; 1 when none does.
    static func pngShrink(longerSide: Int, atLeast pixels: Int) -> Int {
        max(1, min(1024, longerSide / max(1, 2 * pixels)))
    }

    /// Runs a loader call on `buffer`; the image keeps the buffer alive, and a
    /// failure becomes a decode error for `format`.
    private static func runLoader(
        on buffer: EncodedBuffer, format: ImageFormat, _ call: (UnsafeMutablePointer<UnsafeMutablePointer<VipsImage>?>) -> Int32
    ) throws(HalcyonError) -> VipsImageRef {
        var output: UnsafeMutablePointer<VipsImage>?
        guard call(&output) == 0, let output else {
            if let output { hc_unref(output) }
            throw decodeError(format: format, message: VipsRuntime.takeErrorMessageIfAny())
        }
        return VipsImageRef(taking: output, retaining: [buffer])
    }

    /// The largest JPEG decoder shrink (8, 4 or 2) that keeps the longer side at `pixels` or more and is
    /// no larger than the shorter side; 1 when none does.
    ///
    /// libvips 8.14's JPEG loader rounds the shrunk size down: a factor over the shorter side would make an
    /// image 0 pixels wide or tall, which aborts the process (a 7×4000 JPEG at 1/8).
    static func jpegShrink(longerSide: Int, shorterSide: Int, atLeast pixels: Int) -> Int {
        for shrink in [8, 4, 2] where (longerSide + shrink - 1) / shrink >= pixels && shrink <= shorterSide {
            return shrink
        }
        return 1
    }

    /// Decodes a still image opened for a sequential read into memory as 8-bit
    /// sRGB, upright by the EXIF orientation that `header` carries.
    private static func stillImage(_ sequential: VipsImageRef, header: VipsImageRef) throws(HalcyonError) -> VipsImageRef {
        let orientation = withExtendedLifetime(header) { Int(hc_orientation(header.pointer)) }
        guard (2...8).contains(orientation) else {
            // Nothing to rotate: convert while decoding, one buffer in memory.
            return try sequential.srgb8().decodedIntoMemory()
        }
        // Rotating needs random access: decode first, then rotate in memory.
        return try sequential.decodedIntoMemory().apply("autorot") { hc_autorot($0, $1) }.srgb8().materialized()
    }

    private static func checkLimits(width: Int, frameHeight: Int, frameCount: Int, options: ImageDecodingOptions) throws(HalcyonError) {
        guard width > 0, frameHeight > 0 else {
            throw .processorError(reason: .corruptData(format: .unknown, message: "image has no pixels (\(width)x\(frameHeight))"))
        }
        if frameCount > options.maxFrameCount {
            throw .processorError(reason: .tooManyFrames(count: frameCount, limit: options.maxFrameCount))
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: frameHeight)
        let (total, overflowFrames) = pixels.multipliedReportingOverflow(by: frameCount)
        if overflow || overflowFrames || total > options.maxPixelCount {
            throw .processorError(reason: .tooManyPixels(width: width, height: frameHeight, frames: frameCount, limit: options.maxPixelCount))
        }
    }

    private static func frameDelays(_ delays: [TimeInterval], count: Int) -> [TimeInterval] {
        guard count > 1 else { return [] }
        return (0..<count).map { $0 < delays.count ? delays[$0] : 0.1 }
    }

    /// Pixel decoding errors from libvips become `corruptData` for the sniffed format.
    private static func wrapDecodeFailure<T>(_ format: ImageFormat, _ body: () throws(HalcyonError) -> T) throws(HalcyonError) -> T {
        do {
            return try body()
        } catch {
            if case .processorError(reason: .operationFailed(_, let message)) = error {
                throw decodeError(format: format, message: message)
            }
            throw error
        }
    }

    /// A loader failure as a decode error for the sniffed `format`.
    ///
    /// When no trusted loader takes the bytes, libvips says "buffer is not in a
    /// known format", or "operation is blocked" when only an untrusted one
    /// (ImageMagick) claims them. For a format with no loader of its own in
    /// this build (BMP) that is an unsupported format; for one with a loader,
    /// that loader's check refused the bytes (libtiff cannot read a broken
    /// TIFF's first directory): damaged data.
    static func decodeError(format: ImageFormat, message: String?) -> HalcyonError {
        guard let message, !message.isEmpty, message != VipsRuntime.noReason else {
            let text = "the \(format.displayName) decoder stopped without giving a reason"
            return .processorError(reason: .corruptData(format: format, message: text))
        }
        let lowered = message.lowercased()
        let noLoaderTookIt = ["blocked", "not a known", "not in a known"].contains { lowered.contains($0) }
        if noLoaderTookIt && !(format != .unknown && format.hasLoader) {
            return .processorError(reason: .unsupportedFormat(format))
        }
        return .processorError(reason: .corruptData(format: format, message: message))
    }
}

private extension ImageFormat {
    /// Whether this build of libvips has its own (trusted) loader for the format.
    var hasLoader: Bool {
        switch self {
        case .jpeg: return VipsRuntime.hasOperation("jpegload_buffer")
        case .png: return VipsRuntime.hasOperation("pngload_buffer")
        case .gif: return VipsRuntime.hasOperation("gifload_buffer")
        case .webp: return VipsRuntime.hasOperation("webpload_buffer")
        case .avif, .heic: return VipsRuntime.hasOperation("heifload_buffer")
        case .tiff: return VipsRuntime.hasOperation("tiffload_buffer")
        case .bmp, .unknown: return false
        }
    }
}

private extension VipsImageRef {
    /// Renders a pipeline that starts at a loader into memory on this thread,
    /// so a loader error is never lost (`hc_decode_to_memory` says why).
    func decodedIntoMemory() throws(HalcyonError) -> VipsImageRef {
        try withExtendedLifetime(self) { () throws(HalcyonError) -> VipsImageRef in
            try VipsImageRef.make("decode") { hc_decode_to_memory(pointer, $0) }
        }
    }
}
