import Foundation

/// A decoded image: immutable, `Sendable`, and the owner of its pixels.
///
/// The pixels are 8-bit sRGB with three bands, or four when the image has
/// alpha. An animation keeps every frame, stacked top to bottom in one libvips
/// image, with a delay per frame and a loop count. Pixels are either in memory
/// already, or (for an animation decoded without `preloadAllAnimationData`)
/// produced on first use from encoded bytes that this object keeps alive.
///
/// `width` and `height` are pixels of one frame; `size` is in points
/// (`pixels / scale`), as Kingfisher users expect.
public final class Image: Sendable {
    /// The libvips image behind this one: all frames, 8-bit sRGB.
    let vips: VipsImageRef
    /// Width of one frame in pixels.
    public let width: Int
    /// Height of one frame in pixels.
    public let height: Int
    /// Pixels per point; `size` divides by it.
    public let scale: CGFloat
    /// The format the image was decoded from, `.unknown` for made or processed images.
    public let originalFormat: ImageFormat
    /// How many frames the image has; 1 for a still image.
    public let frameCount: Int
    /// How long each frame shows, in seconds; empty for a still image.
    public let frameDelays: [TimeInterval]
    /// How often an animation repeats; 0 means forever.
    public let loopCount: Int
    /// Identifies the data this image was decoded from, when it is that data unchanged.
    let sourceFingerprint: DataFingerprint?

    init(
        vips: VipsImageRef,
        frameHeight: Int,
        frameCount: Int,
        scale: CGFloat,
        originalFormat: ImageFormat,
        frameDelays: [TimeInterval],
        loopCount: Int,
        sourceFingerprint: DataFingerprint? = nil
    ) {
        self.vips = vips
        self.width = vips.width
        self.height = frameHeight
        self.frameCount = max(1, frameCount)
        self.scale = scale > 0 ? scale : 1
        self.originalFormat = originalFormat
        self.frameDelays = frameCount > 1 ? frameDelays : []
        self.loopCount = loopCount
        self.sourceFingerprint = sourceFingerprint
    }

    // MARK: - Making images

    /// Decodes an image from encoded bytes.
    ///
    /// Throws `HalcyonError.processorError` with `.emptyData`,
    /// `.unsupportedFormat`, `.corruptData`, `.tooManyPixels` or
    /// `.tooManyFrames`. Runs on the caller's thread; decode off the main
    /// thread for large images.
    public convenience init(data: Data, options: ImageDecodingOptions = ImageDecodingOptions()) throws(HalcyonError) {
        let decoded = try ImageDecoder.decode(data, options: options)
        self.init(copying: decoded)
    }

    /// Makes a still image from packed 8-bit RGBA pixels, row by row from the top left.
    ///
    /// Throws `.invalidParameter` when the pixel count does not match the size.
    public convenience init(rgbaPixels: [UInt8], width: Int, height: Int, scale: CGFloat = 1) throws(HalcyonError) {
        try self.init(animationFrames: [rgbaPixels], width: width, height: height, frameDelays: [], loopCount: 0, scale: scale)
    }

    /// Makes an animation from frames of packed 8-bit RGBA pixels of the same size.
    ///
    /// `frameDelays` are seconds per frame (missing entries default to 0.1 s).
    public convenience init(
        animationFrames: [[UInt8]],
        width: Int,
        height: Int,
        frameDelays: [TimeInterval],
        loopCount: Int = 0,
        scale: CGFloat = 1
    ) throws(HalcyonError) {
        guard width > 0, height > 0, !animationFrames.isEmpty else {
            throw .processorError(reason: .invalidParameter(processor: "Image", message: "an image needs a positive size and at least one frame"))
        }
        let frameBytes = width * height * 4
        var joined: [UInt8] = []
        joined.reserveCapacity(frameBytes * animationFrames.count)
        for (index, frame) in animationFrames.enumerated() {
            guard frame.count == frameBytes else {
                throw .processorError(reason: .invalidParameter(
                    processor: "Image",
                    message: "frame \(index) has \(frame.count) bytes, \(width)x\(height) RGBA needs \(frameBytes)"))
            }
            joined.append(contentsOf: frame)
        }
        let vips = try VipsImageRef.fromPixels(joined, width: width, height: height * animationFrames.count, bands: 4)
        let delays = (0..<animationFrames.count).map { $0 < frameDelays.count ? frameDelays[$0] : 0.1 }
        self.init(vips: vips, frameHeight: height, frameCount: animationFrames.count, scale: scale,
                  originalFormat: .unknown, frameDelays: delays, loopCount: loopCount)
    }

    private convenience init(copying other: Image) {
        self.init(vips: other.vips, frameHeight: other.height, frameCount: other.frameCount, scale: other.scale,
                  originalFormat: other.originalFormat, frameDelays: other.frameDelays, loopCount: other.loopCount,
                  sourceFingerprint: other.sourceFingerprint)
    }

    // MARK: - Properties

    /// Size in points: pixels divided by `scale`.
    public var size: CGSize { CGSize(width: CGFloat(width) / scale, height: CGFloat(height) / scale) }

    /// Whether the pixels carry an alpha band.
    public var hasAlpha: Bool { vips.bands == 4 }

    /// Whether the image has more than one frame.
    public var isAnimated: Bool { frameCount > 1 }

    /// Bytes the decoded pixels take; the memory cache's cost.
    public var cost: Int { width * height * frameCount * vips.bands }

    /// Total duration of one loop of the animation, in seconds.
    public var duration: TimeInterval { frameDelays.reduce(0, +) }

    // MARK: - Pixels

    /// The packed 8-bit RGBA pixels of one frame, row by row from the top left.
    ///
    /// Three-band images get an opaque alpha. Throws `.invalidParameter` for a
    /// frame out of range.
    public func rgbaPixels(frame: Int = 0) throws(HalcyonError) -> [UInt8] {
        try frameImage(frame).withAlpha().pixelBytes()
    }

    /// The RGBA value of one pixel; throws `.invalidParameter` outside the image.
    public func pixel(x: Int, y: Int, frame: Int = 0) throws(HalcyonError) -> RGBA8 {
        guard x >= 0, y >= 0, x < width, y < height else {
            throw .processorError(reason: .invalidParameter(processor: "Image", message: "pixel (\(x), \(y)) is outside \(width)x\(height)"))
        }
        let area = try frameImage(frame).extracted(left: x, top: y, width: 1, height: 1).withAlpha().pixelBytes()
        guard area.count >= 4 else {
            throw .processorError(reason: .operationFailed(operation: "pixel", message: "libvips returned \(area.count) bytes for one pixel"))
        }
        return RGBA8(red: area[0], green: area[1], blue: area[2], alpha: area[3])
    }

    // MARK: - Frames

    /// The libvips image of one frame.
    func frameImage(_ index: Int) throws(HalcyonError) -> VipsImageRef {
        guard index >= 0, index < frameCount else {
            throw .processorError(reason: .invalidParameter(processor: "Image", message: "frame \(index) is outside 0..<\(frameCount)"))
        }
        if frameCount == 1 { return vips }
        return try vips.extracted(left: 0, top: index * height, width: width, height: height)
    }

    /// A new image made by transforming every frame alike and keeping the timing.
    ///
    /// The result is rendered into memory, so it does not hold on to this
    /// image's pipeline. Every frame must come out the same size.
    func mapFrames(
        _ operation: String,
        _ transform: (VipsImageRef) throws(HalcyonError) -> VipsImageRef
    ) throws(HalcyonError) -> Image {
        var frames: [VipsImageRef] = []
        frames.reserveCapacity(frameCount)
        for index in 0..<frameCount {
            frames.append(try transform(try frameImage(index)).srgb8())
        }
        let frameWidth = frames[0].width
        let frameHeight = frames[0].height
        guard frames.allSatisfy({ $0.width == frameWidth && $0.height == frameHeight && $0.bands == frames[0].bands }) else {
            throw .processorError(reason: .operationFailed(operation: operation, message: "frames came out in different sizes"))
        }
        let joined = try VipsImageRef.joinedVertically(frames).materialized()
        return Image(vips: joined, frameHeight: frameHeight, frameCount: frameCount, scale: scale,
                     originalFormat: originalFormat, frameDelays: frameDelays, loopCount: loopCount)
    }

    /// The same pixels with another scale.
    func withScale(_ newScale: CGFloat) -> Image {
        Image(vips: vips, frameHeight: height, frameCount: frameCount, scale: newScale,
              originalFormat: originalFormat, frameDelays: frameDelays, loopCount: loopCount,
              sourceFingerprint: sourceFingerprint)
    }

    /// Whether frames are still decoded on first use from encoded bytes this image keeps.
    public var isLazilyDecoded: Bool { !vips.retained.isEmpty }

    /// The same image with every frame decoded into memory now; itself when already so.
    ///
    /// Throws `processorError(.corruptData)` when the kept bytes turn out not to decode.
    public func decodedInMemory() throws(HalcyonError) -> Image {
        guard isLazilyDecoded else { return self }
        let decoded: VipsImageRef
        do {
            decoded = try vips.materialized()
        } catch {
            if case .processorError(reason: .operationFailed(_, let message)) = error {
                throw .processorError(reason: .corruptData(format: originalFormat, message: message))
            }
            throw error
        }
        return Image(vips: decoded, frameHeight: height, frameCount: frameCount, scale: scale,
                     originalFormat: originalFormat, frameDelays: frameDelays, loopCount: loopCount,
                     sourceFingerprint: sourceFingerprint)
    }

    /// Only the first frame, as a still image.
    func firstFrameOnly() throws(HalcyonError) -> Image {
        guard isAnimated else { return self }
        return Image(vips: try frameImage(0).materialized(), frameHeight: height, frameCount: 1, scale: scale,
                     originalFormat: originalFormat, frameDelays: [], loopCount: 0)
    }
}
