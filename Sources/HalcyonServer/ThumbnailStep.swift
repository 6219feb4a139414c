import Foundation
import Halcyon
import Tracing

/// The geometry of one request, run as one processor step in imgproxy's
/// order: trim, EXIF orientation (or its undoing for `ar:0`), rotate and
/// flip, crop, resize, the fill crop at the gravity, extend.
///
/// It probes the header, decodes with the loader's own shrink (libjpeg's
/// 1/2, 1/4, 1/8; libvips shrink-on-load for other formats) to at least the
/// size needed, then resizes once (one Lanczos pass instead of two). A trim
/// needs the whole source, so it turns the shrink off.
struct ThumbnailStep: Sendable {
    let mode: ProcessingOptions.ResizeMode
    /// The box, times zoom and pixel ratio; 0 follows the aspect ratio.
    let width: Int
    let height: Int
    let gravity: ProcessingOptions.Placement
    let limits: ImageDecodingOptions
    /// Without a width and height: the factors the source is scaled by (at most 1 unless `enlarge`).
    var scaleX = 1.0
    var scaleY = 1.0
    /// Whether fit and fill may scale up.
    var enlarge = false
    /// The smallest result sides (`mw`, `mh`, times the pixel ratio).
    var minWidth = 0
    var minHeight = 0
    var crop: ProcessingOptions.Crop?
    var trim: ProcessingOptions.Trim?
    var rotate = 0
    var flipHorizontal = false
    var flipVertical = false
    var extend: ProcessingOptions.Placement?
    var extendAspectRatio: ProcessingOptions.Placement?
    /// The colour of extended space; transparent when nil.
    var background: Color?
    /// The most pixels a side of the extended result may have.
    var maxSide = 16_384
    /// False undoes the EXIF orientation the decoder applied (`ar:0`).
    var autoRotate = true
    /// The request's trace context: `halcyon.decode` and `halcyon.process` spans are its children.
    var trace: ServiceContext? = nil

    /// The step as a processor; the chain it is part of carries the identifier (the request plan's key).
    var processor: GeneralProcessor {
        let step = self
        return GeneralProcessor(identifier: "halcyon.server.thumbnail") { item, options throws(HalcyonError) in
            try step.run(item, options: options)
        }
    }

    /// Whether the user's turn swaps width and height.
    var turnsSideways: Bool { (rotate / 90) % 2 != 0 }

    func run(_ item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        var image: Image
        var source: (width: Int, height: Int)
        switch item {
        case .image(let decoded):
            image = decoded
            source = (decoded.width, decoded.height)
        case .data(let data):
            (image, source) = try decode(data, options: options)
        }
        if let trim {
            image = try TrimmingImageProcessor(threshold: trim.threshold, color: trim.color, equalHorizontal: trim.equalHorizontal,
                                               equalVertical: trim.equalVertical).process(item: .image(image), options: options)
            source = (image.width, image.height)
        }
        let span = trace.map { startSpan("halcyon.process", context: $0) }
        defer { span?.end() }
        let plan = self.plan(sourceWidth: source.width, sourceHeight: source.height)
        span?.attributes["halcyon.size"] = "\(plan.canvas.width)x\(plan.canvas.height)"
        image = try turned(image, options: options)
        if let rect = plan.crop, (crop?.placement ?? gravity).type == .sm {
            let sx = Double(image.width) / Double(plan.turned.width), sy = Double(image.height) / Double(plan.turned.height)
            image = try SmartCroppingImageProcessor(size: CGSize(width: Double(rect.width) * sx, height: Double(rect.height) * sy))
                .process(item: .image(image), options: options)
        } else if let rect = plan.crop {
            // The image may be the loader's shrink of the source: crop at its scale.
            let sx = Double(image.width) / Double(plan.turned.width), sy = Double(image.height) / Double(plan.turned.height)
            let scaled = CGRect(x: Double(rect.x) * sx, y: Double(rect.y) * sy, width: Double(rect.width) * sx, height: Double(rect.height) * sy)
            image = try CroppingImageProcessor(rect: scaled).process(item: .image(image), options: options)
        }
        image = try resized(image, plan: plan, options: options)
        return try extended(image, to: plan.canvas, options: options)
    }

    /// Opens and decodes the source, shrunk on load when the plan allows; gives the upright source size.
    private func decode(_ data: Data, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> (Image, (width: Int, height: Int)) {
        let span = trace.map { startSpan("halcyon.decode", context: $0) }
        defer { span?.end() }
        var decoding = options.decodingOptions
        let header = try ImageDecoder.open(data, options: decoding)
        let sideways = autoRotate && header.isSideways
        let upright = sideways ? (header.height, header.width) : (header.width, header.height)
        let scale = plan(sourceWidth: upright.0, sourceHeight: upright.1).scale
        if scale < 1 && trim == nil {
            // Rounded up, so the shrink never lands below the target (and an exact fit needs no second resize).
            let box = (Double(max(header.width, header.height)) * scale).rounded(.up)
            decoding.downsampleSize = CGSize(width: box, height: box)
            decoding.downsamplingMode = .loaderOnly
        }
        var image = try ImageDecoder.decode(header, options: decoding)
        if !autoRotate { image = try Self.undoOrientation(image, header.orientation, options: options) }
        return (image, upright)
    }

    /// The user's turn and mirrors.
    private func turned(_ image: Image, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        var image = image
        if rotate % 360 != 0 { image = try RotationImageProcessor(degrees: rotate).process(item: .image(image), options: options) }
        if flipHorizontal || flipVertical {
            image = try FlipImageProcessor(horizontal: flipHorizontal, vertical: flipVertical).process(item: .image(image), options: options)
        }
        return image
    }

    /// The resize to the plan's size, with the fill crop placed by the gravity.
    private func resized(_ image: Image, plan: Plan, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let result = plan.result
        guard plan.fillCrop else {
            if result.width == image.width && result.height == image.height { return image }
            return try ResizingImageProcessor(referenceSize: CGSize(width: result.width, height: result.height))
                .process(item: .image(image), options: options)
        }
        var image = image
        let cover = plan.resized
        if cover.width != image.width || cover.height != image.height {
            image = try ResizingImageProcessor(referenceSize: CGSize(width: cover.width, height: cover.height)).process(item: .image(image), options: options)
        }
        if result.width == image.width && result.height == image.height { return image }
        if gravity.type == .sm {
            return try SmartCroppingImageProcessor(size: CGSize(width: result.width, height: result.height)).process(item: .image(image), options: options)
        }
        let origin = gravity.origin(outer: (image.width, image.height), inner: result)
        return try CroppingImageProcessor(rect: CGRect(x: origin.x, y: origin.y, width: result.width, height: result.height))
            .process(item: .image(image), options: options)
    }

    /// The image placed on the canvas (extend) by its placement, over the background or transparency.
    private func extended(_ image: Image, to canvas: (width: Int, height: Int), options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        guard canvas.width > image.width || canvas.height > image.height,
              let placement = canvas.width > image.width || canvas.height > image.height ? (extend ?? extendAspectRatio) : nil else { return image }
        let origin = placement.origin(outer: canvas, inner: (image.width, image.height))
        return try PaddingImageProcessor(
            top: origin.y, right: canvas.width - image.width - origin.x, bottom: canvas.height - image.height - origin.y, left: origin.x,
            color: background ?? Color(red: 0, green: 0, blue: 0, alpha: 0), maxSide: maxSide
        ).process(item: .image(image), options: options)
    }

    /// The image as stored: the decoder's turn for EXIF `orientation` undone.
    static func undoOrientation(_ image: Image, _ orientation: Int, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        let undo: (degrees: Int, horizontal: Bool, vertical: Bool)
        switch orientation {
        case 2: undo = (0, true, false)
        case 3: undo = (180, false, false)
        case 4: undo = (0, false, true)
        case 5: undo = (90, true, false)  // transpose: its own inverse (a quarter turn, then a mirror)
        case 6: undo = (270, false, false)
        case 7: undo = (90, false, true)  // transverse: its own inverse
        case 8: undo = (90, false, false)
        default: return image
        }
        var image = image
        if undo.degrees != 0 { image = try RotationImageProcessor(degrees: undo.degrees).process(item: .image(image), options: options) }
        if undo.horizontal || undo.vertical {
            image = try FlipImageProcessor(horizontal: undo.horizontal, vertical: undo.vertical).process(item: .image(image), options: options)
        }
        return image
    }
}
