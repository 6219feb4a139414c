import CHalcyonVips
import Foundation

/// One owned reference to a libvips image, released when this object goes away.
///
/// `@unchecked Sendable`: a `VipsImage` is immutable once built (every operation
/// makes a new image), and libvips allows one image to feed pipelines on many
/// threads at once; the only mutable state is the reference count, which GObject
/// changes atomically. Nothing here mutates the image after `init`.
final class VipsImageRef: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<VipsImage>
    /// Encoded bytes a lazily loaded image (or one made from it) still reads.
    let retained: [EncodedBuffer]

    init(taking pointer: UnsafeMutablePointer<VipsImage>, retaining retained: [EncodedBuffer] = []) {
        self.pointer = pointer
        self.retained = retained
    }

    deinit {
        hc_unref(pointer)
    }

    // MARK: - Geometry

    var width: Int { Int(hc_width(pointer)) }
    var height: Int { Int(hc_height(pointer)) }
    var bands: Int { Int(hc_bands(pointer)) }
    var hasAlpha: Bool { bands == 4 || bands == 2 }
    var pageHeight: Int { Int(hc_page_height(pointer)) }
    var pageCount: Int { Int(hc_n_pages(pointer)) }

    /// Frame delays in milliseconds as the loader recorded them.
    var frameDelaysInMilliseconds: [Int] {
        let count = Int(hc_delays(pointer, nil, 0))
        guard count > 0 else { return [] }
        var delays = [Int32](repeating: 0, count: count)
        let copied = delays.withUnsafeMutableBufferPointer { buffer in
            hc_delays(pointer, buffer.baseAddress, Int32(count))
        }
        return delays.prefix(Int(copied)).map(Int.init)
    }

    var loopCount: Int { Int(hc_loop(pointer)) }

    // MARK: - Running operations

    /// Runs one shim call that makes an image and wraps the result.
    ///
    /// A failure becomes `processorError(.processingFailed)` naming `what`
    /// and carrying libvips' message, read right after the call.
    static func make(
        _ what: String,
        retaining retained: [EncodedBuffer] = [],
        _ call: (UnsafeMutablePointer<UnsafeMutablePointer<VipsImage>?>) -> Int32
    ) throws(HalcyonError) -> VipsImageRef {
        try VipsRuntime.ensureStarted()
        var output: UnsafeMutablePointer<VipsImage>?
        let status = call(&output)
        guard status == 0, let output else {
            if let output { hc_unref(output) }
            throw .processorError(reason: .operationFailed(operation: what, message: VipsRuntime.takeErrorMessage()))
        }
        return VipsImageRef(taking: output, retaining: retained)
    }

    /// Runs an operation with this image (and `others`) as input.
    ///
    /// The result keeps alive any encoded bytes the inputs still read from.
    func apply(
        _ what: String,
        with others: [VipsImageRef] = [],
        _ call: (UnsafeMutablePointer<VipsImage>, UnsafeMutablePointer<UnsafeMutablePointer<VipsImage>?>) -> Int32
    ) throws(HalcyonError) -> VipsImageRef {
        try withExtendedLifetime((self, others)) { () throws(HalcyonError) -> VipsImageRef in
            try VipsImageRef.make(what, retaining: retained + others.flatMap(\.retained)) { call(pointer, $0) }
        }
    }

    // MARK: - Common operations

    /// Renders the pipeline behind this image into memory; an image whose pixels are in memory already is itself.
    func materialized() throws(HalcyonError) -> VipsImageRef {
        try withExtendedLifetime(self) { () throws(HalcyonError) -> VipsImageRef in
            try VipsImageRef.make("copy_memory") { hc_copy_memory(pointer, $0) }
        }
    }

    /// The image as 8-bit sRGB with 3 or 4 bands.
    func srgb8() throws(HalcyonError) -> VipsImageRef {
        if hc_is_uchar_srgb(pointer) == 1 { return self }
        return try apply("colourspace") { hc_to_srgb8($0, $1) }
    }

    /// The image scaled by the factors with Lanczos-3, by the engine `engines` picks for it
    /// (``ImageEngines/reduceEngine(for:horizontal:vertical:)``): Halcyon's fixed-point reduce for 8-bit images in
    /// memory reduced by less than 4×, `vips_resize` for everything else or when the setting says libvips.
    func resized(horizontal: Double, vertical: Double, engines: ImageEngines = .current) throws(HalcyonError) -> VipsImageRef {
        switch engines.reduceEngine(for: self, horizontal: horizontal, vertical: vertical) {
        case .halcyon: try apply("resize") { hc_reduce_memory($0, horizontal, vertical, $1) }
        case .libvips: try resizedByLibvips(horizontal: horizontal, vertical: vertical)
        }
    }

    /// `vips_resize` itself, whatever the image.
    func resizedByLibvips(horizontal: Double, vertical: Double) throws(HalcyonError) -> VipsImageRef {
        try apply("resize") { hc_vips_resize($0, horizontal, vertical, $1) }
    }

    /// The fixed-point reduce itself, whatever the setting says; throws for images and factors it does not take.
    func reducedByHalcyon(horizontal: Double, vertical: Double) throws(HalcyonError) -> VipsImageRef {
        try apply("reduce") { hc_reduce_memory($0, horizontal, vertical, $1) }
    }

    /// How many times the fixed-point reduce has run on the calling thread.
    static var fastReduceCount: Int { Int(hc_fast_reduce_count()) }

    func extracted(left: Int, top: Int, width: Int, height: Int) throws(HalcyonError) -> VipsImageRef {
        try apply("extract_area") { hc_extract_area($0, Int32(left), Int32(top), Int32(width), Int32(height), $1) }
    }

    func bands(from first: Int, count: Int) throws(HalcyonError) -> VipsImageRef {
        try apply("extract_band") { hc_extract_bands($0, Int32(first), Int32(count), $1) }
    }

    /// The image with an opaque alpha band added when it has none.
    func withAlpha() throws(HalcyonError) -> VipsImageRef {
        if hasAlpha { return self }
        return try apply("bandjoin_const") { hc_bandjoin_const($0, 255, $1) }
    }

    func linear(multiply a: [Double], add b: [Double]) throws(HalcyonError) -> VipsImageRef {
        precondition(a.count == b.count, "linear needs one multiplier per addend")
        return try apply("linear") { input, output in
            a.withUnsafeBufferPointer { aBuffer in
                b.withUnsafeBufferPointer { bBuffer in
                    hc_linear(input, aBuffer.baseAddress, bBuffer.baseAddress, Int32(a.count), 1, output)
                }
            }
        }
    }

    func joined(with other: VipsImageRef) throws(HalcyonError) -> VipsImageRef {
        try apply("bandjoin", with: [other]) { hc_bandjoin2($0, other.pointer, $1) }
    }

    func composited(over base: VipsImageRef, mode: BlendMode = .normal, x: Int = 0, y: Int = 0) throws(HalcyonError) -> VipsImageRef {
        let vipsMode = mode.vipsMode
        return try apply("composite2", with: [base]) { hc_composite2(base.pointer, $0, vipsMode, Int32(x), Int32(y), $1) }
    }

    /// A constant image of this image's size with the given band values.
    func constant(_ values: [Double]) throws(HalcyonError) -> VipsImageRef {
        try apply("new_from_image") { input, output in
            values.withUnsafeBufferPointer { hc_constant_like(input, $0.baseAddress, Int32(values.count), output) }
        }
    }

    func flattened(background: [Double]) throws(HalcyonError) -> VipsImageRef {
        guard hasAlpha else { return self }
        return try apply("flatten") { input, output in
            background.withUnsafeBufferPointer { hc_flatten(input, $0.baseAddress, Int32(background.count), output) }
        }
    }

    /// Stacks frames top to bottom, the layout libvips uses for animations.
    static func joinedVertically(_ frames: [VipsImageRef]) throws(HalcyonError) -> VipsImageRef {
        if frames.count == 1 { return frames[0] }
        return try withExtendedLifetime(frames) { () throws(HalcyonError) -> VipsImageRef in
            var pointers: [UnsafeMutablePointer<VipsImage>?] = frames.map(\.pointer)
            return try make("arrayjoin", retaining: frames.flatMap(\.retained)) { output in
                pointers.withUnsafeMutableBufferPointer { hc_join_vertical($0.baseAddress, Int32(frames.count), output) }
            }
        }
    }

    /// A 3- or 4-band 8-bit sRGB image made from packed pixels.
    static func fromPixels(_ pixels: [UInt8], width: Int, height: Int, bands: Int) throws(HalcyonError) -> VipsImageRef {
        try make("new_from_memory") { output in
            pixels.withUnsafeBytes { bytes in
                hc_new_from_memory(bytes.baseAddress, bytes.count, Int32(width), Int32(height), Int32(bands), output)
            }
        }
    }

    /// The packed 8-bit pixels of this image.
    func pixelBytes() throws(HalcyonError) -> [UInt8] {
        try VipsRuntime.ensureStarted()
        var length = 0
        guard let buffer = hc_write_to_memory(pointer, &length) else {
            throw .processorError(reason: .operationFailed(operation: "write_to_memory", message: VipsRuntime.takeErrorMessage()))
        }
        defer { hc_free(buffer) }
        return [UInt8](UnsafeRawBufferPointer(start: buffer, count: length))
    }

    /// Saves through one of the shim's save calls and copies the bytes out.
    func saved(
        as format: ImageFormat,
        _ call: (UnsafeMutablePointer<VipsImage>, UnsafeMutablePointer<UnsafeMutableRawPointer?>, UnsafeMutablePointer<Int>) -> Int32
    ) throws(HalcyonError) -> Data {
        try VipsRuntime.ensureStarted()
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let status = withExtendedLifetime(self) { call(pointer, &buffer, &length) }
        guard status == 0, let buffer else {
            if let buffer { hc_free(buffer) }
            throw .processorError(reason: .encodeFailed(format: format, message: VipsRuntime.takeErrorMessage()))
        }
        defer { hc_free(buffer) }
        return Data(bytes: buffer, count: length)
    }
}
