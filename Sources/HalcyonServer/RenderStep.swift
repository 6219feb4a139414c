import Foundation
import Halcyon
import Tracing

// MARK: - The steps

/// One step of the service's rendering. A request's steps are one list, built once from its options by
/// `ProcessingOptions.renderSteps(watermark:)`, in imgproxy's order: the geometry (orientation, trim, rotate and
/// flip, crop, resize, fill crop, extend), the effects, padding and background, the watermark, then metadata
/// and encode. A step its options make draw nothing (`bl:0`, `rot:0`, `ex:1` without a box) is not in the list.
///
/// The source is decoded before the first step, shrunk on load as far as the geometry's plan allows
/// (`RenderContext.decode`). The geometry steps take their sizes from that plan (`ThumbnailStep.Plan`), made
/// from the upright source's size and made again after a trim; a geometry step whose plan changes nothing
/// leaves the image as it is. The last two steps run after the manager returns the processed image (its memory
/// cache holds images before they are encoded): `pixelSteps` are what the processor runs, `outputSteps` what
/// `ImageService.encode(_:output:)` runs.
///
/// The orientation comes before trim: the decoder turns the image upright as it decodes, so undoing that turn
/// (`ar:0`) comes first and the trim, as imgproxy's, reads the stored pixels. Effects run on the extended
/// canvas, before padding.
enum RenderStep: Sendable, Hashable {
    /// `ar:0`: the decoder's turn for the EXIF orientation undone (the image as stored).
    case orientation
    /// `t:`: a border of one colour cut away; the geometry's plan is made again for the trimmed size.
    case trim(ProcessingOptions.Trim)
    /// `rot:` (0..<360, a multiple of 90) and `fl:`.
    case rotateFlip(degrees: Int, horizontal: Bool, vertical: Bool)
    /// `c:`: the plan's crop, at the crop's placement or the gravity (smart for `sm`).
    case crop(ProcessingOptions.Crop)
    /// The resize to the plan's size (before any fill crop): one resample from the decoded image.
    case resize
    /// The resized image cut to the box at the gravity (fill, fill-down, `mw`/`mh` past the box).
    case fillCrop(gravity: ProcessingOptions.Placement)
    /// `ex:` / `exar:`: the image placed on the plan's canvas, over `color`.
    case extend(ProcessingOptions.Placement, color: Color)
    /// `bl:`: Gaussian blur.
    case blur(sigma: Double)
    /// `sh:`: unsharp mask.
    case sharpen(sigma: Double)
    /// `pix:`: blocks of `size` pixels.
    case pixelate(size: Int)
    /// `bw`: greyscale.
    case blackWhite
    /// `tint:`.
    case tint(Color)
    /// `rd:`: round corners.
    case roundCorners(radius: Double)
    /// `pd:`: space around the result, already scaled by `dpr`, filled with `color`.
    case padding(ProcessingOptions.Insets, color: Color)
    /// `bg:`: the colour behind transparency.
    case background(Color)
    /// `wm:`: the server's watermark; offsets already scaled by `dpr`.
    case watermark(ProcessingOptions.Watermark)
    /// `sm:`, `kcr:`, `scp:`: metadata dropped, copyright and colour profile kept as asked.
    case metadata(keepCopyright: Bool, keepColorProfile: Bool)
    /// The encode: `q:`/`fq:` choose the quality, `mb:` re-encodes lossy results at lower qualities while over.
    case encode(quality: Int?, formatQuality: [ImageFormat: Int], maxBytes: Int?)

    /// The step's name, for logs and tests.
    var name: String {
        switch self {
        case .orientation: "orientation"
        case .trim: "trim"
        case .rotateFlip: "rotateFlip"
        case .crop: "crop"
        case .resize: "resize"
        case .fillCrop: "fillCrop"
        case .extend: "extend"
        case .blur: "blur"
        case .sharpen: "sharpen"
        case .pixelate: "pixelate"
        case .blackWhite: "blackWhite"
        case .tint: "tint"
        case .roundCorners: "roundCorners"
        case .padding: "padding"
        case .background: "background"
        case .watermark: "watermark"
        case .metadata: "metadata"
        case .encode: "encode"
        }
    }

    /// Whether the step needs the geometry's decode and plan.
    var isGeometry: Bool {
        switch self {
        case .orientation, .trim, .rotateFlip, .crop, .resize, .fillCrop, .extend: true
        default: false
        }
    }

    /// Whether the step runs on the encoded answer's side (after the manager), not in the processor.
    var isOutput: Bool {
        switch self {
        case .metadata, .encode: true
        default: false
        }
    }
}

extension Array where Element == RenderStep {
    /// The steps the processor runs on pixels, in order.
    var pixelSteps: [RenderStep] { filter { !$0.isOutput } }
    /// Metadata and encode, in order, run on the processed image.
    var outputSteps: [RenderStep] { filter(\.isOutput) }
}

// MARK: - The plan builds the list

extension ProcessingOptions {
    /// The render steps of these options, in order, each once; options that draw nothing add no step.
    ///
    /// Meant for normalised options (`normalised(stripMetadata:keepCopyright:stripColorProfile:)`); metadata settings
    /// left nil count as the server's defaults (strip, keep copyright, drop the colour profile). `watermark` is the
    /// server's image: without one, `wm:` draws nothing.
    func renderSteps(watermark source: WatermarkSource? = nil) -> [RenderStep] {
        var steps = geometrySteps()
        if let blur, blur > 0 { steps.append(.blur(sigma: blur)) }
        if let sharpen, sharpen > 0 { steps.append(.sharpen(sigma: sharpen)) }
        if let pixelate, pixelate > 1 { steps.append(.pixelate(size: pixelate)) }
        if blackWhite { steps.append(.blackWhite) }
        if let tint { steps.append(.tint(tint)) }
        if let round, round > 0 { steps.append(.roundCorners(radius: round)) }
        if !padding.isEmpty {
            let scaled = { (side: Int) in Int((Double(side) * self.dpr).rounded()) }
            let insets = Insets(top: scaled(padding.top), right: scaled(padding.right), bottom: scaled(padding.bottom),
                                left: scaled(padding.left))
            steps.append(.padding(insets, color: background ?? Color(red: 1, green: 1, blue: 1, alpha: 0)))
        }
        if let background { steps.append(.background(background)) }
        if var watermark, watermark.opacity > 0, source != nil {
            (watermark.x, watermark.y) = (watermark.x * dpr, watermark.y * dpr)
            steps.append(.watermark(watermark))
        }
        if stripMetadata ?? true {
            steps.append(.metadata(keepCopyright: keepCopyright ?? true, keepColorProfile: !(stripColorProfile ?? true)))
        }
        steps.append(.encode(quality: quality, formatQuality: formatQuality, maxBytes: maxBytes))
        return steps
    }

    /// The geometry's steps: each only when these options can make it change the image.
    private func geometrySteps() -> [RenderStep] {
        guard hasGeometry else { return [] }
        var steps: [RenderStep] = []
        let box = width > 0 || height > 0
        if autoRotate == false { steps.append(.orientation) }
        if let trim { steps.append(.trim(trim)) }
        let degrees = ((rotate % 360) + 360) % 360
        if degrees != 0 || flipHorizontal || flipVertical {
            steps.append(.rotateFlip(degrees: degrees, horizontal: flipHorizontal, vertical: flipVertical))
        }
        if let crop { steps.append(.crop(crop)) }
        // A crop's result is brought to the plan's size too (a smart crop or one clipped at the edge).
        if box || scalesSource || minWidth > 0 || minHeight > 0 || crop != nil { steps.append(.resize) }
        // Only a box cuts: fill, fill-down and auto may; fit only when `mw`/`mh` push past the box; force never.
        if box && resizeMode != .force && (resizeMode != .fit || minWidth > 0 || minHeight > 0) {
            steps.append(.fillCrop(gravity: gravity))
        }
        if let placement = extend ?? extendAspectRatio,
           (extend != nil && box) || (extendAspectRatio != nil && width > 0 && height > 0) {
            steps.append(.extend(placement, color: background ?? Color(red: 0, green: 0, blue: 0, alpha: 0)))
        }
        return steps
    }
}

// MARK: - Running the pixel steps

/// What the pixel steps of one request run with: the geometry and its plan, the manager's options, the side
/// limit, the watermark image; `RenderContext.render` decodes the source and runs the steps in order.
struct RenderContext {
    /// The geometry's inputs; its plan is made from the source's size.
    let geometry: ThumbnailStep
    /// The plan for the upright (then trimmed) source.
    var plan: ThumbnailStep.Plan
    /// The EXIF orientation the decoder applied; 1 when the image came decoded.
    var orientation = 1
    /// The manager's options: decoding limits and scale.
    let options: HalcyonParsedOptionsInfo
    /// The most pixels a side of an extended or padded result may have.
    let maxSide: Int
    /// The server's watermark image.
    let watermark: WatermarkSource?

    /// `steps` (pixel steps, in order) run on `item`, decoded first (from `opened` when it is `item`'s bytes opened);
    /// `halcyon.decode` and `halcyon.process` spans are children of `trace`.
    static func render(
        _ steps: [RenderStep], item: ImageProcessItem, opened: ImageDecoder.OpenedImage? = nil, geometry: ThumbnailStep,
        maxSide: Int, watermark: WatermarkSource?, trace: ServiceContext?, options: HalcyonParsedOptionsInfo
    ) throws(HalcyonError) -> Image {
        var image: Image, context: RenderContext
        do {
            let span = trace.map { startSpan("halcyon.decode", context: $0) }
            defer { span?.end() }
            (image, context) = try decode(item, opened: opened, steps: steps, geometry: geometry, maxSide: maxSide, watermark: watermark,
                                          options: options)
        }
        let span = trace.map { startSpan("halcyon.process", context: $0) }
        defer { span?.end() }
        for step in steps { image = try context.apply(step, to: image) }
        span?.attributes["halcyon.size"] = "\(image.width)x\(image.height)"
        return image
    }

    /// The decoded source and the context for it. With geometry steps, the source is opened and decoded with the
    /// loader's own shrink (libjpeg's 1/2, 1/4, 1/8; libvips shrink-on-load) to at least the plan's size, so the
    /// resize resamples once; a trim needs the whole source and turns the shrink off. Without, it is decoded whole.
    /// The header is read once: `opened` is used when it was opened from the very bytes of `item`.
    private static func decode(
        _ item: ImageProcessItem, opened: ImageDecoder.OpenedImage?, steps: [RenderStep], geometry: ThumbnailStep, maxSide: Int,
        watermark: WatermarkSource?, options: HalcyonParsedOptionsInfo
    ) throws(HalcyonError) -> (Image, RenderContext) {
        let context = { (source: (width: Int, height: Int), orientation: Int) in
            RenderContext(geometry: geometry, plan: geometry.plan(sourceWidth: source.width, sourceHeight: source.height),
                          orientation: orientation, options: options, maxSide: maxSide, watermark: watermark)
        }
        let data: Data
        switch item {
        case .image(let image):
            return (image, context((image.width, image.height), 1))
        case .data(let bytes) where !steps.contains(where: \.isGeometry):
            // As a library processor given bytes decodes them: whole, with the manager's options.
            let image = try DefaultImageProcessor.default.process(item: .data(bytes), options: options)
            return (image, context((image.width, image.height), 1))
        case .data(let bytes):
            data = bytes
        }
        var decoding = options.decodingOptions
        let header: ImageDecoder.OpenedImage
        if let opened, opened.opens(data, options: decoding) { header = opened } else { header = try ImageDecoder.open(data, options: decoding) }
        let sideways = !steps.contains(.orientation) && header.isSideways
        let upright = sideways ? (width: header.height, height: header.width) : (width: header.width, height: header.height)
        let scale = geometry.plan(sourceWidth: upright.width, sourceHeight: upright.height).scale
        if scale < 1 && geometry.trim == nil {
            // Rounded up, so the shrink never lands below the target (and an exact fit needs no second resize).
            let box = (Double(max(header.width, header.height)) * scale).rounded(.up)
            decoding.downsampleSize = CGSize(width: box, height: box)
            decoding.downsamplingMode = .loaderOnly
        }
        return (try ImageDecoder.decode(header, options: decoding), context(upright, header.orientation))
    }

    /// `image` after `step`; metadata and encode leave it as it is (they run after the manager).
    mutating func apply(_ step: RenderStep, to image: Image) throws(HalcyonError) -> Image {
        switch step {
        case .orientation:
            return try undoneOrientation(image)
        case .trim(let trim):
            let trimmed = try run(TrimmingImageProcessor(threshold: trim.threshold, color: trim.color, equalHorizontal: trim.equalHorizontal,
                                                         equalVertical: trim.equalVertical), image)
            plan = geometry.plan(sourceWidth: trimmed.width, sourceHeight: trimmed.height)
            return trimmed
        case .rotateFlip(let degrees, let horizontal, let vertical):
            return try turned(image, degrees: degrees, horizontal: horizontal, vertical: vertical)
        case .crop(let crop):
            return try cropped(image, smart: (crop.placement ?? geometry.gravity).type == .sm)
        case .resize:
            let size = plan.resized
            if size.width == image.width && size.height == image.height { return image }
            return try run(ResizingImageProcessor(referenceSize: CGSize(width: size.width, height: size.height)), image)
        case .fillCrop(let gravity):
            return try fillCropped(image, gravity: gravity)
        case .extend(let placement, let color):
            return try extended(image, placement: placement, color: color)
        default:
            return try effect(step, image)
        }
    }

    /// `image` after an effect, finishing or output step.
    private func effect(_ step: RenderStep, _ image: Image) throws(HalcyonError) -> Image {
        switch step {
        case .blur(let sigma): return try run(BlurImageProcessor(blurRadius: CGFloat(sigma)), image)
        case .sharpen(let sigma): return try run(SharpenImageProcessor(sigma: CGFloat(sigma)), image)
        case .pixelate(let size): return try run(PixelateImageProcessor(size: size), image)
        case .blackWhite: return try run(BlackWhiteProcessor(), image)
        case .tint(let color): return try run(TintImageProcessor(tint: color), image)
        case .roundCorners(let radius): return try run(RoundCornerImageProcessor(cornerRadius: CGFloat(radius)), image)
        case .padding(let insets, let color):
            return try run(PaddingImageProcessor(top: insets.top, right: insets.right, bottom: insets.bottom, left: insets.left,
                                                 color: color, maxSide: maxSide), image)
        case .background(let color): return try run(BackgroundColorProcessor(color: color), image)
        case .watermark(let mark):
            guard let source = watermark else { return image }
            return try run(WatermarkImageProcessor(
                watermark: source.image, name: source.name, opacity: CGFloat(mark.opacity), anchor: mark.position?.anchor,
                offset: CGPoint(x: mark.x, y: mark.y), scale: CGFloat(mark.scale)), image)
        default:
            return image
        }
    }

    /// `image` through one of the library's processors.
    private func run(_ processor: some ImageProcessor, _ image: Image) throws(HalcyonError) -> Image {
        try processor.process(item: .image(image), options: options)
    }
}

// MARK: - Geometry

extension RenderContext {
    /// The user's turn, then the mirrors.
    private func turned(_ image: Image, degrees: Int, horizontal: Bool, vertical: Bool) throws(HalcyonError) -> Image {
        var image = image
        if degrees != 0 { image = try run(RotationImageProcessor(degrees: degrees), image) }
        if horizontal || vertical { image = try run(FlipImageProcessor(horizontal: horizontal, vertical: vertical), image) }
        return image
    }

    /// The plan's crop, at the scale of `image` (which may be the loader's shrink of the source); the attention
    /// model places a `smart` one.
    private func cropped(_ image: Image, smart: Bool) throws(HalcyonError) -> Image {
        guard let rect = plan.crop else { return image }
        let sx = Double(image.width) / Double(plan.turned.width), sy = Double(image.height) / Double(plan.turned.height)
        let size = CGSize(width: Double(rect.width) * sx, height: Double(rect.height) * sy)
        if smart { return try run(SmartCroppingImageProcessor(size: size), image) }
        return try run(CroppingImageProcessor(rect: CGRect(origin: CGPoint(x: Double(rect.x) * sx, y: Double(rect.y) * sy), size: size)), image)
    }

    /// The resized image cut to the plan's result at `gravity`, when the plan crops it.
    private func fillCropped(_ image: Image, gravity: ProcessingOptions.Placement) throws(HalcyonError) -> Image {
        let result = plan.result
        guard plan.fillCrop, result.width != image.width || result.height != image.height else { return image }
        if gravity.type == .sm {
            return try run(SmartCroppingImageProcessor(size: CGSize(width: result.width, height: result.height)), image)
        }
        let origin = gravity.origin(outer: (image.width, image.height), inner: result)
        return try run(CroppingImageProcessor(rect: CGRect(x: origin.x, y: origin.y, width: result.width, height: result.height)), image)
    }

    /// The image placed on the plan's canvas at `placement`, over `color`, when the canvas is larger.
    private func extended(_ image: Image, placement: ProcessingOptions.Placement, color: Color) throws(HalcyonError) -> Image {
        let canvas = plan.canvas
        guard canvas.width > image.width || canvas.height > image.height else { return image }
        let origin = placement.origin(outer: canvas, inner: (image.width, image.height))
        return try run(PaddingImageProcessor(
            top: origin.y, right: canvas.width - image.width - origin.x, bottom: canvas.height - image.height - origin.y, left: origin.x,
            color: color, maxSide: maxSide), image)
    }

    /// The image as stored: the decoder's turn for the EXIF `orientation` undone.
    private func undoneOrientation(_ image: Image) throws(HalcyonError) -> Image {
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
        return try turned(image, degrees: undo.degrees, horizontal: undo.horizontal, vertical: undo.vertical)
    }
}

// MARK: - Geometry plan

/// The geometry's inputs, from which `plan(sourceWidth:sourceHeight:)` (`ThumbnailStep+Plan.swift`) gives every
/// size the geometry steps go through: the box (times zoom and pixel ratio), the crop, the turn, the extension.
/// The decode reads its scale to shrink on load; `MemoryEstimate` reads it to size the work from the header.
struct ThumbnailStep: Sendable {
    /// `rs:`'s mode.
    let mode: ProcessingOptions.ResizeMode
    /// The box, times zoom and pixel ratio; 0 follows the aspect ratio.
    let width: Int
    let height: Int
    /// Where the crop (without its own placement) and the fill crop sit.
    let gravity: ProcessingOptions.Placement
    /// The decoding limits the plan is made under.
    let limits: ImageDecodingOptions
    /// Without a width and height: the factors the source is scaled by (at most 1 unless `enlarge`).
    var scaleX = 1.0
    var scaleY = 1.0
    /// Whether fit and fill may scale up.
    var enlarge = false
    /// The smallest result sides (`mw`, `mh`, times the pixel ratio).
    var minWidth = 0
    var minHeight = 0
    /// `c:`, in the turned source's pixels.
    var crop: ProcessingOptions.Crop?
    /// A trim needs the whole source: no shrink on load.
    var trim: ProcessingOptions.Trim?
    /// The user's turn, in 0..<360.
    var rotate = 0
    /// `ex:`: the canvas is at least the box.
    var extend: ProcessingOptions.Placement?
    /// `exar:`: the canvas is grown to the box's aspect ratio.
    var extendAspectRatio: ProcessingOptions.Placement?

    /// Whether the user's turn swaps width and height.
    var turnsSideways: Bool { (rotate / 90) % 2 != 0 }
}

// MARK: - Metadata and encode

extension ImageService {
    /// The output steps (`outputSteps`: metadata, then encode) run on the processed image: the encoded body and its
    /// format. The format is the asked or negotiated one (`OutputEncodingPolicy` may change it), its quality the
    /// step's or the server's default; a lossy result over `mb:` is encoded again at lower qualities (at most 8 tries,
    /// quality not below 10).
    func finish(_ image: Image, steps: [RenderStep], output: OutputRequest) async throws -> (body: Data, format: ImageFormat) {
        var image = image
        for step in steps {
            switch step {
            case .metadata(let keepCopyright, let keepColorProfile):
                image = try image.strippingMetadata(keepCopyright: keepCopyright, keepColorProfile: keepColorProfile)
            case .encode(let quality, let formatQuality, let maxBytes):
                let format = encodingPolicy.encoding(for: image, as: output.explicit ?? output.negotiated).format
                return try await encoded(image, as: format, quality: formatQuality[format] ?? quality ?? configuration.defaultQuality,
                                         maxBytes: maxBytes, explicit: output.explicit != nil)
            default:
                continue
            }
        }
        throw ServerError(status: 500, code: "internal", message: "the render steps have no encode step")
    }

    /// `image` encoded as `format` at `quality` (nil: the format's default), then again at lower qualities while over `maxBytes`.
    private func encoded(
        _ image: Image, as format: ImageFormat, quality: Int?, maxBytes: Int?, explicit: Bool
    ) async throws -> (body: Data, format: ImageFormat) {
        var encoding = try boundedEncoding(encodingPolicy.encoding(for: image, as: format, quality: quality), of: image, explicit: explicit)
        var body = try await encodeOnQueue(image, as: encoding)
        guard let limit = maxBytes else { return (body, encoding.format) }
        for _ in 0..<8 where body.count > limit {
            guard let current = Self.lossyQuality(encoding), current > 10 else { break }
            // Size falls roughly with quality; aim a little under the ratio, and always drop by at least 5.
            let aimed = Int(Double(current) * Double(limit) / Double(body.count) * 0.9)
            encoding = encodingPolicy.encoding(for: image, as: encoding.format, quality: max(10, min(current - 5, aimed)))
            body = try await encodeOnQueue(image, as: encoding)
        }
        return (body, encoding.format)
    }
}
