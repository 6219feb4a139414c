import Foundation
import Halcyon
import Tracing

/// The server's image for `wm:`, loaded once at start-up.
public struct WatermarkSource: Sendable {
    /// The decoded watermark.
    public let image: Image
    /// Stands for it in processor identifiers (path, size and modification time).
    public let name: String
}

// MARK: - Processor chain

extension ProcessingOptions {
    /// The processor chain for these options, nil when nothing is asked; its identifier is a digest of the
    /// options, the side limit and the watermark's name (see ``ImageRequestPlan/cacheKey``), so chains that
    /// render differently never share a cached or coalesced image.
    public func processor(limits: ImageDecodingOptions, maxSide: Int = 16_384, watermark: WatermarkSource? = nil) -> (any ImageProcessor)? {
        let identity = ChainIdentity(options: self, maxSide: maxSide, watermark: watermark?.name)
        return processor(limits: limits, maxSide: maxSide, watermark: watermark,
                         identifier: "halcyon.server.options(\(ImageRequestPlan.digest(identity)))")
    }

    /// What a chain made by ``processor(limits:maxSide:watermark:)`` renders from.
    private struct ChainIdentity: Encodable {
        let options: ProcessingOptions
        let maxSide: Int
        let watermark: String?
    }

    /// Whether any geometry is asked (resize, crop, trim, turn, extend, orientation).
    var hasGeometry: Bool {
        width > 0 || height > 0 || scalesSource || minWidth > 0 || minHeight > 0 || crop != nil || trim != nil || rotate % 360 != 0
            || flipHorizontal || flipVertical || extend != nil || extendAspectRatio != nil || autoRotate == false
    }

    /// The chain under `identifier`, which must stand for everything the chain renders from (the request plan's
    /// key does); nil when nothing is asked.
    func processor(
        limits: ImageDecodingOptions, maxSide: Int = 16_384, watermark: WatermarkSource? = nil, identifier: String
    ) -> (any ImageProcessor)? {
        var steps: [any ImageProcessor] = []
        if hasGeometry {
            var step = thumbnailStep(limits: limits)
            step.maxSide = maxSide
            step.trace = ServiceContext.current
            steps.append(step.processor)
        }
        if let blur, blur > 0 { steps.append(BlurImageProcessor(blurRadius: CGFloat(blur))) }
        if let sharpen, sharpen > 0 { steps.append(SharpenImageProcessor(sigma: CGFloat(sharpen))) }
        if let pixelate, pixelate > 1 { steps.append(PixelateImageProcessor(size: pixelate)) }
        if blackWhite { steps.append(BlackWhiteProcessor()) }
        if let tint { steps.append(TintImageProcessor(tint: tint)) }
        if let round, round > 0 { steps.append(RoundCornerImageProcessor(cornerRadius: CGFloat(round))) }
        steps += finishingSteps(maxSide: maxSide, watermark: watermark)
        guard var chain = steps.first else { return nil }
        for step in steps.dropFirst() { chain = chain |> step }
        let whole = chain
        return GeneralProcessor(identifier: identifier) { item, options throws(HalcyonError) in
            try whole.process(item: item, options: options)
        }
    }

    /// Whether zoom and pixel ratio alone (no width or height) change the source's size.
    var scalesSource: Bool {
        let factors = [zoomX * dpr, zoomY * dpr]
        return factors.contains { $0 < 1 } || (enlarge && factors.contains { $0 > 1 })
    }

    /// Padding (scaled by `dpr`, filled with the background or transparent), the background under transparency,
    /// then the watermark.
    func finishingSteps(maxSide: Int, watermark source: WatermarkSource?) -> [any ImageProcessor] {
        var steps: [any ImageProcessor] = []
        let scaled = { (side: Int) in Int((Double(side) * dpr).rounded()) }
        if !padding.isEmpty {
            steps.append(PaddingImageProcessor(
                top: scaled(padding.top), right: scaled(padding.right), bottom: scaled(padding.bottom), left: scaled(padding.left),
                color: background ?? Color(red: 1, green: 1, blue: 1, alpha: 0), maxSide: maxSide))
        }
        if let background { steps.append(BackgroundColorProcessor(color: background)) }
        if let watermark, watermark.opacity > 0, let source {
            steps.append(WatermarkImageProcessor(
                watermark: source.image, name: source.name, opacity: CGFloat(watermark.opacity), anchor: watermark.position?.anchor,
                offset: CGPoint(x: watermark.x * dpr, y: watermark.y * dpr), scale: CGFloat(watermark.scale)))
        }
        return steps
    }

    /// The geometry step for these options: sizes multiplied by zoom and pixel ratio (rounded, at least 1),
    /// or, without a size, the source scaled by them (never enlarged unless `el`).
    func thumbnailStep(limits: ImageDecodingOptions) -> ThumbnailStep {
        let size = scaledSize
        let factor = { (zoom: Double) in self.enlarge ? zoom * self.dpr : min(1, zoom * self.dpr) }
        let none = width == 0 && height == 0
        var step = ThumbnailStep(mode: resizeMode, width: size.width, height: size.height, gravity: gravity, limits: limits,
                                 scaleX: none ? factor(zoomX) : 1, scaleY: none ? factor(zoomY) : 1, enlarge: enlarge)
        step.minWidth = Int((Double(minWidth) * dpr).rounded())
        step.minHeight = Int((Double(minHeight) * dpr).rounded())
        step.crop = crop
        step.trim = trim
        step.rotate = ((rotate % 360) + 360) % 360
        step.flipHorizontal = flipHorizontal
        step.flipVertical = flipVertical
        step.extend = extend
        step.extendAspectRatio = extendAspectRatio
        step.background = background
        step.autoRotate = autoRotate ?? true
        return step
    }
}
