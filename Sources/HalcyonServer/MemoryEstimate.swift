import Foundation
import Halcyon

/// What one request's work holds at its peak, by the class of its source's loader and of its encoder.
///
/// The factors were measured with scripts/measure-memory.py: one request on a fresh `halcyon serve` (debug build;
/// libvips 8.14 and its codecs are release builds, and the big buffers are theirs), the rise of its peak RSS
/// (VmHWM) over its RSS before, with 7000x7000 sources of each class (flat, so small in bytes): shrunk to a
/// 300x300 result, decoded whole, read by `/info`, and encoded whole or after enlarging a 1000x1000 source. Each
/// factor is the measured bytes a pixel (figures in the comments) rounded up; the decoded pixels (4 bytes each),
/// three result-sized buffers and a fixed 8 MiB come on top, so the estimate stays at or above every measurement.
enum MemoryEstimate {
    /// How a source's loader holds memory, read from its header bytes.
    enum SourceClass: Equatable {
        /// A JPEG: progressive (or arithmetic/lossless) ones keep every DCT coefficient of the whole image
        /// (2 bytes a coefficient, 64 a block, each component at its sampling) while they decode, even when libjpeg
        /// shrinks on load; sequential ones stream.
        case jpeg(progressive: Bool, coefficientBytes: Int)
        /// A PNG: an interlaced (Adam7) one is read whole into memory at its own depth and bands before anything
        /// else happens (`bytesPerPixel`: bands × bytes a sample); a sequential one streams.
        case png(interlaced: Bool, bytesPerPixel: Int)
        /// A WebP: libwebp decodes the whole frame (scaled when shrinking).
        case webp
        /// A GIF: libnsgif keeps the whole canvas besides the frame it gives.
        case gif
        /// AVIF/HEIC: libheif decodes the whole image (YUV planes, then interleaved RGB), even for a thumbnail.
        case heif
        /// TIFF, BMP and anything else: read in strips or tiles.
        case other
    }

    /// The bytes a request holds at its peak, for a plan.
    ///
    /// - Parameters:
    ///   - source: the loader's class.
    ///   - sourcePixels: pixels of one frame of the source, as stored.
    ///   - decodePixels: pixels of one frame as decoded (fewer than `sourcePixels` when shrunk on load).
    ///   - resultPixels: pixels of one frame of the result.
    ///   - frames: frames worked on.
    ///   - output: the format encoded, nil when nothing is encoded (`/info`).
    ///   - resultBuffers: result-sized 4-byte buffers the processing holds at once.
    static func bytes(
        source: SourceClass, sourcePixels: Int, decodePixels: Int, resultPixels: Int, frames: Int, output: ImageFormat?,
        resultBuffers: Int = 3
    ) -> Int {
        let loader = loaderBytes(source, sourcePixels: sourcePixels, shrunk: decodePixels < sourcePixels)
        let decoded = 4.saturatingMultiply(decodePixels)
        let processing = (4 * resultBuffers).saturatingMultiply(resultPixels)
        let encoder = output.map { perPixel(encoderBytesPerPixel($0), resultPixels) } ?? 0
        let perFrame = loader.saturatingAdd(decoded).saturatingAdd(processing).saturatingAdd(encoder)
        return perFrame.saturatingMultiply(max(1, frames)).saturatingAdd(fixedBytes)
    }

    /// Bytes a request holds whatever its size: the source's bytes, the encoded result, libvips' caches.
    static let fixedBytes = 8 << 20

    /// Bytes the loader holds besides the decoded pixels; `shrunk` when the source is shrunk on load (a thumbnail).
    ///
    /// Measured, bytes a source pixel over the decoded ones (thumbnail / whole): progressive JPEG 4:4:4 6.13 / 5.28,
    /// 4:2:0 3.11, CMYK 8.39 / 7.80 (coefficients 6, 3 and 8); sequential JPEG 0.11 / none, CMYK 0.33; interlaced
    /// PNG 16-bit RGBA 10.13 / 8.06 (its buffer 8), 8-bit 6.11 / 4.02 (buffer 4); sequential PNG 16-bit 2.71 / 0.72,
    /// 8-bit 2.41 / 0.34, palette 0.63; WebP lossy 0.04 / 4.01, lossless 0.52 / 4.01; GIF 6.39 / 4.33; AVIF 6.87 /
    /// 2.83; TIFF 2.40 / 0.34. A thumbnail of a source with no shrink on load goes through `vips_thumbnail`, whose
    /// pipeline held up to 2.7 bytes a source pixel.
    static func loaderBytes(_ source: SourceClass, sourcePixels: Int, shrunk: Bool) -> Int {
        let factor: Double
        switch source {
        case .jpeg(let progressive, let coefficientBytes):
            // libjpeg's other buffers and the colour conversion (CMYK's ICC transform): an eighth of a byte a pixel
            // for sequential JPEGs, half a byte with a progressive one's coefficients.
            guard progressive else { return perPixel(0.125, sourcePixels) }
            return coefficientBytes.saturatingAdd(perPixel(0.5, sourcePixels))
        case .png(let interlaced, let bytesPerPixel):
            factor = Double(interlaced ? bytesPerPixel : 0) + (shrunk ? (interlaced ? 2.5 : 3) : 1)
        case .webp: factor = shrunk ? 1 : 4.5
        case .gif: factor = shrunk ? 7 : 4.5
        case .heif: factor = 7
        case .other: factor = shrunk ? 3 : 1
        }
        return perPixel(factor, sourcePixels)
    }

    /// Bytes an encoder holds per result pixel besides its input: its own copies and planes, and the output.
    ///
    /// Measured, bytes a result pixel over the 3 of the decoded result (7000x7000, whole or enlarged): AVIF 13.9,
    /// GIF 10.1, WebP 4.7, JPEG, PNG and TIFF 0.1 or less.
    static func encoderBytesPerPixel(_ format: ImageFormat) -> Double {
        switch format {
        case .avif, .heic: return 15
        case .gif: return 11
        case .webp: return 5
        case .jpeg, .png, .tiff, .bmp, .unknown: return 0.5
        }
    }

    /// `factor` bytes a pixel for `pixels`, rounded up, saturating.
    static func perPixel(_ factor: Double, _ pixels: Int) -> Int {
        let bytes = (factor * Double(pixels)).rounded(.up)
        return bytes < Double(Int.max) ? Int(bytes) : .max
    }

    // MARK: - Reading the class from the header

    /// The class of `data`'s loader; `format` is the sniffed one, `width` × `height` one frame as stored.
    static func sourceClass(of data: Data, format: ImageFormat, width: Int, height: Int) -> SourceClass {
        switch format {
        case .jpeg:
            // No frame header found: as if progressive CMYK (4 full-resolution components, 8 bytes a pixel).
            guard let frame = jpegFrame(data) else { return .jpeg(progressive: true, coefficientBytes: 8.saturatingMultiply(width * height)) }
            let coefficients = coefficientBytes(width: width, height: height, sampling: frame.sampling)
            return .jpeg(progressive: frame.progressive, coefficientBytes: coefficients)
        case .png:
            return pngClass(data)
        case .webp: return .webp
        case .gif: return .gif
        case .avif, .heic: return .heif
        case .tiff, .bmp, .unknown: return .other
        }
    }

    /// Bytes of libjpeg's whole-image coefficient buffer: per component, its blocks (rounded up to whole MCUs) × 64 × 2.
    static func coefficientBytes(width: Int, height: Int, sampling: [(h: Int, v: Int)]) -> Int {
        let hMax = sampling.map(\.h).max() ?? 1, vMax = sampling.map(\.v).max() ?? 1
        var total = 0
        for (h, v) in sampling {
            let columns = (width * h + 8 * hMax - 1) / (8 * hMax), rows = (height * v + 8 * vMax - 1) / (8 * vMax)
            let roundedColumns = (columns + h - 1) / h * h, roundedRows = (rows + v - 1) / v * v
            total = total.saturatingAdd(roundedColumns.saturatingMultiply(roundedRows).saturatingMultiply(128))
        }
        return total
    }

    /// Whether a JPEG's frame buffers the whole image, and each component's horizontal and vertical sampling factors.
    typealias JPEGFrame = (progressive: Bool, sampling: [(h: Int, v: Int)])

    /// A JPEG's frame header: whether it is progressive (or another mode that buffers the whole image), and each
    /// component's sampling factors; nil when no frame header comes before the first scan.
    static func jpegFrame(_ data: Data) -> JPEGFrame? {
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> JPEGFrame? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
            var index = 2
            while index + 3 < bytes.count {
                guard bytes[index] == 0xFF else { return nil }
                let marker = bytes[index + 1]
                if marker == 0xFF { index += 1; continue }
                if marker == 0x01 || (0xD0...0xD7).contains(marker) { index += 2; continue }
                let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
                if marker == 0xDA || marker == 0xD9 { return nil }
                if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
                    return frameHeader(bytes, at: index + 4, marker: marker)
                }
                index += 2 + length
            }
            return nil
        }
    }

    /// The frame header whose segment body starts at `start`: the mode from `marker`, the sampling of each component.
    private static func frameHeader(_ bytes: UnsafeBufferPointer<UInt8>, at start: Int, marker: UInt8) -> JPEGFrame? {
        guard start + 6 <= bytes.count else { return nil }
        let count = Int(bytes[start + 5])
        guard count > 0, start + 6 + 3 * count <= bytes.count else { return nil }
        let sampling = (0..<count).map { component -> (h: Int, v: Int) in
            let factors = bytes[start + 6 + 3 * component + 1]
            return (max(1, Int(factors >> 4)), max(1, Int(factors & 0x0F)))
        }
        // Only baseline and extended sequential Huffman (SOF0, SOF1) stream; every other mode keeps coefficients.
        return (progressive: marker != 0xC0 && marker != 0xC1, sampling: sampling)
    }

    /// A PNG's class from its IHDR: interlaced or not, and the bytes a pixel of the loader's whole-image buffer
    /// (bands, with an alpha band counted for a tRNS the header does not show, × bytes a sample).
    static func pngClass(_ data: Data) -> SourceClass {
        let header = [UInt8](data.prefix(29))
        guard header.count == 29 else { return .png(interlaced: true, bytesPerPixel: 8) }
        let depth = Int(header[24]), colorType = header[25], interlaced = header[28] != 0
        let bands: Int
        switch colorType {
        case 0, 4: bands = 2
        default: bands = 4
        }
        let sample = colorType == 3 ? 1 : max(1, depth / 8)
        return .png(interlaced: interlaced, bytesPerPixel: bands * sample)
    }
}

// MARK: - One request's estimate, from its source's header

extension MemoryEstimate {
    /// The result's size and the pixels decoded for a source of `width` × `height` under `options` (either
    /// orientation: the larger).
    static func plan(options: ProcessingOptions, width: Int, height: Int, format: ImageFormat)
        -> (width: Int, height: Int, resultPixels: Int, decodePixels: Int) {
        var resized = (width: width, height: height)
        var shrink = 1.0
        if options.hasGeometry {
            let step = options.thumbnailStep(limits: ImageDecodingOptions())
            let plans = [step.plan(sourceWidth: width, sourceHeight: height), step.plan(sourceWidth: height, sourceHeight: width)]
            resized = (plans.map(\.canvas.width).max() ?? width, plans.map(\.canvas.height).max() ?? height)
            if step.trim == nil { shrink = min(1, plans.map(\.scale).max() ?? 1) }
        }
        // Padding grows the result (scaled by dpr, as the padding step does).
        let padding = options.padding
        let resultWidth = resized.width + Int((Double(padding.left + padding.right) * options.dpr).rounded())
        let resultHeight = resized.height + Int((Double(padding.top + padding.bottom) * options.dpr).rounded())
        let resultPixels = resultWidth * resultHeight
        return (resultWidth, resultHeight, resultPixels, decodePixels(width: width, height: height, shrink: shrink, format: format))
    }

    /// Pixels decoded when the loader shrinks by `shrink` (1: not at all): the PNG loader's box shrink lands
    /// under four times the target per side, `vips_thumbnail` at it; libjpeg shrinks by 8 at most.
    static func decodePixels(width: Int, height: Int, shrink: Double, format: ImageFormat) -> Int {
        let sourcePixels = width * height
        guard shrink < 1 else { return sourcePixels }
        let landed = Int(Double(sourcePixels) * shrink * shrink * 16) + 1
        let jpegFloor = format == .jpeg ? ((width + 7) / 8) * ((height + 7) / 8) : 0
        return min(sourcePixels, max(landed, jpegFloor))
    }

    /// The bytes an image request holds at its peak for an opened source (`data`, its bytes) under `options`,
    /// encoded as `output` (nil: the source's format); every frame counted.
    static func imageBytes(_ header: ImageDecoder.OpenedImage, source data: Data, options: ProcessingOptions, output: ImageFormat?) -> Int {
        let plan = plan(options: options, width: header.width, height: header.height, format: header.format)
        return bytes(
            source: sourceClass(of: data, format: header.format, width: header.width, height: header.height),
            sourcePixels: header.width * header.height, decodePixels: plan.decodePixels, resultPixels: plan.resultPixels,
            frames: max(1, header.frameCount), output: output ?? header.format)
    }

    /// The bytes `/info` holds for an opened source: its loader, and a decode shrunk to 64 pixels (libjpeg's 1/8
    /// for a JPEG), of the first frame; nothing is encoded.
    static func infoBytes(_ header: ImageDecoder.OpenedImage, source data: Data) -> Int {
        let sourcePixels = header.width * header.height
        let decodePixels = header.format == .jpeg ? sourcePixels / 64 + header.width + header.height : 64 * 64
        return bytes(
            source: sourceClass(of: data, format: header.format, width: header.width, height: header.height),
            sourcePixels: sourcePixels, decodePixels: decodePixels, resultPixels: 64 * 64, frames: 1, output: nil)
    }
}

extension Int {
    /// `self + other`, or `Int.max` when that overflows.
    func saturatingAdd(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }

    /// `self × other`, or `Int.max` when that overflows.
    func saturatingMultiply(_ other: Int) -> Int {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? .max : product
    }
}
