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

// MARK: - The processor: the render steps under the plan's key

extension ProcessingOptions {
    /// The processor for these options, nil when no step draws; its identifier is a digest of the
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

    /// The processor of these options' pixel steps (`renderSteps(watermark:)`, see `RenderStep`) under `identifier`,
    /// which must stand for everything they render from (the request plan's key does); nil when no step draws.
    /// Given the bytes `opened` was opened from, it decodes from that header instead of reading it again.
    func processor(
        limits: ImageDecodingOptions, maxSide: Int = 16_384, watermark: WatermarkSource? = nil, identifier: String,
        opened: ImageDecoder.OpenedImage? = nil
    ) -> (any ImageProcessor)? {
        let steps = renderSteps(watermark: watermark).pixelSteps
        guard !steps.isEmpty else { return nil }
        let geometry = thumbnailStep(limits: limits)
        let trace = ServiceContext.current
        return GeneralProcessor(identifier: identifier) { item, options throws(HalcyonError) in
            try RenderContext.render(steps, item: item, opened: opened, geometry: geometry, maxSide: maxSide, watermark: watermark,
                                     trace: trace, options: options)
        }
    }

    /// Whether zoom and pixel ratio alone (no width or height) change the source's size.
    var scalesSource: Bool {
        let factors = [zoomX * dpr, zoomY * dpr]
        return factors.contains { $0 < 1 } || (enlarge && factors.contains { $0 > 1 })
    }

    /// The geometry's inputs for these options: sizes multiplied by zoom and pixel ratio (rounded, at least 1),
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
        step.extend = extend
        step.extendAspectRatio = extendAspectRatio
        return step
    }
}
