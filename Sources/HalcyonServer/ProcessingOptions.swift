import Foundation
import Halcyon
import Tracing

/// The processing options of one request, in imgproxy's grammar: path
/// segments `name:arg:arg`, e.g. `rs:fill:300:200/g:no/q:80/bl:2/rd:12/bw/tint:ff0000`.
///
/// Sizes never enlarge for `fit` and `fill` (imgproxy's default); `force`
/// gives exactly the size asked. A zero side follows the aspect ratio.
public struct ProcessingOptions: Sendable, Hashable {
    /// How the image is fitted into the width and height.
    public enum ResizeMode: String, Sendable, Hashable {
        /// Inside the box, aspect kept.
        case fit
        /// Covers the box, aspect kept, cropped at the gravity.
        case fill
        /// Exactly the box, aspect ignored.
        case force
        /// Like fill; a source smaller than the box is cropped to the box's aspect ratio instead.
        case fillDown = "fill-down"
        /// Fill when the source and the box are both landscape or both portrait, else fit.
        case auto
    }

    /// Where a `fill` crop is anchored.
    public enum Gravity: String, Sendable, Hashable {
        /// Centre.
        case ce
        /// North (top).
        case no
        /// South (bottom).
        case so
        /// East (right).
        case ea
        /// West (left).
        case we
        /// Smart; falls back to the centre (no saliency detection yet).
        case sm
        /// North-east (top right).
        case noea
        /// North-west (top left).
        case nowe
        /// South-east (bottom right).
        case soea
        /// South-west (bottom left).
        case sowe

        /// The unit anchor for ``CroppingImageProcessor``; smart falls back to the centre.
        public var anchor: CGPoint {
            switch self {
            case .ce, .sm: return CGPoint(x: 0.5, y: 0.5)
            case .no: return CGPoint(x: 0.5, y: 0)
            case .so: return CGPoint(x: 0.5, y: 1)
            case .ea: return CGPoint(x: 1, y: 0.5)
            case .we: return CGPoint(x: 0, y: 0.5)
            case .noea: return CGPoint(x: 1, y: 0)
            case .nowe: return CGPoint(x: 0, y: 0)
            case .soea: return CGPoint(x: 1, y: 1)
            case .sowe: return CGPoint(x: 0, y: 1)
            }
        }
    }

    /// The resize mode. Default fit.
    public var resizeMode: ResizeMode = .fit
    /// Target width in pixels; 0 follows the aspect ratio.
    public var width = 0
    /// Target height in pixels; 0 follows the aspect ratio.
    public var height = 0
    /// Crop anchor for fill. Default centre.
    public var gravity: Gravity = .ce
    /// Encoder quality 1...100; nil uses the format's default.
    public var quality: Int?
    /// Output format asked by `f:`.
    public var format: ImageFormat?
    /// Gaussian blur sigma; nil or 0 is none.
    public var blur: Double?
    /// Corner radius in pixels.
    public var round: Double?
    /// Greyscale.
    public var blackWhite = false
    /// Tint colour.
    public var tint: Color?
    /// `el:`: fit and fill may make the result larger than the source (force always may). Default false.
    public var enlarge = false
    /// `z:`: multiplies the target size (or, without one, the source's size), never enlarging. Default 1.
    public var zoom = 1.0
    /// `dpr:`: device pixel ratio, multiplies the target size like zoom. Default 1.
    public var dpr = 1.0
    /// `exp:`: Unix time after which the URL is refused (404 `expired`).
    public var expires: Int?
    /// `fn:`: the file name of `Content-Disposition` (without extension; the output format's is added).
    public var filename: String?
    /// `att:`: `Content-Disposition: attachment` instead of `inline`.
    public var attachment = false
    /// `rot:`: clockwise turn in degrees, a multiple of 90.
    public var rotate = 0
    /// `fl:`: mirror left-right.
    public var flipHorizontal = false
    /// `fl:`: mirror top-bottom.
    public var flipVertical = false
    /// `sh:`: unsharp-mask sigma.
    public var sharpen: Double?
    /// `pix:`: pixelation block size.
    public var pixelate: Int?
    /// `pd:`: space added around the result (before `dpr`).
    public var padding = Insets()

    /// Space added above, right, below and left, in pixels.
    public struct Insets: Sendable, Hashable {
        /// Each side.
        public var top = 0, right = 0, bottom = 0, left = 0
        /// Whether any side is above 0.
        public var isEmpty: Bool { top + right + bottom + left == 0 }
    }
    /// `bg:`: the colour behind transparency and padding.
    public var background: Color?

    /// Makes the default options (no processing).
    public init() {}

    /// A parse failure: the offending segment and why.
    public struct ParseError: Error, Sendable, Equatable {
        /// The option segment as written.
        public let option: String
        /// What is wrong with it.
        public let message: String
    }

    /// Parses option segments; throws naming the first bad or unknown option.
    public static func parse(_ segments: [String], maxDimension: Int) throws(ParseError) -> ProcessingOptions {
        var options = ProcessingOptions()
        for segment in segments where !segment.isEmpty {
            try OptionSegment(segment, maxDimension: maxDimension).apply(to: &options)
        }
        let step = options.thumbnailStep(limits: ImageDecodingOptions())
        guard step.width <= maxDimension, step.height <= maxDimension else {
            throw ParseError(option: options.dpr != 1 ? "dpr" : "z", message: "the size times zoom and pixel ratio, "
                + "\(step.width)x\(step.height), exceeds the limit of \(maxDimension)")
        }
        return options
    }

    /// One `name:arg:arg` option segment, split, with the checks its arguments share.
    private struct OptionSegment {
        let segment: String
        let name: String
        let args: [String]
        let maxDimension: Int

        /// Splits `segment` into its name and arguments.
        init(_ segment: String, maxDimension: Int) {
            let parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            self.segment = segment
            self.name = parts[0]
            self.args = Array(parts.dropFirst())
            self.maxDimension = maxDimension
        }

        /// The parse error for this segment.
        func fail(_ message: String) -> ParseError { ParseError(option: segment, message: message) }

        /// A pixel size: a whole number from 0 to `maxDimension`.
        func size(_ text: String) throws(ParseError) -> Int {
            guard let value = Int(text), value >= 0 else { throw fail("size must be a whole number of pixels ≥ 0") }
            guard value <= maxDimension else { throw fail("size \(value) exceeds the limit of \(maxDimension)") }
            return value
        }

        /// A finite number inside `range`.
        func number(_ text: String, _ range: ClosedRange<Double>) throws(ParseError) -> Double {
            guard let value = Double(text), value.isFinite, range.contains(value) else {
                throw fail("value must be a number in \(range.lowerBound)...\(range.upperBound)")
            }
            return value
        }

        /// Sets the option this segment names on `options`; throws for a bad or unknown option.
        func apply(to options: inout ProcessingOptions) throws(ParseError) {
            switch name {
            case "rs", "resize":
                guard (1...3).contains(args.count) else { throw fail("expected rs:{fit|fill|fill-down|force|auto}:{w}:{h}") }
                options.resizeMode = try mode(args[0])
                if args.count > 1, !args[1].isEmpty { options.width = try size(args[1]) }
                if args.count > 2, !args[2].isEmpty { options.height = try size(args[2]) }
            case "s", "size":
                guard (1...2).contains(args.count) else { throw fail("expected s:{w}:{h}") }
                if !args[0].isEmpty { options.width = try size(args[0]) }
                if args.count > 1, !args[1].isEmpty { options.height = try size(args[1]) }
            case "rt", "resizing_type":
                guard args.count == 1 else { throw fail("expected rt:{fit|fill|fill-down|force|auto}") }
                options.resizeMode = try mode(args[0])
            default:
                try applyOther(to: &options)
            }
        }

        /// The options that are not sizes.
        func applyOther(to options: inout ProcessingOptions) throws(ParseError) {
            switch name {
            case "w", "width":
                guard args.count == 1 else { throw fail("expected w:{width}") }
                options.width = try size(args[0])
            case "h", "height":
                guard args.count == 1 else { throw fail("expected h:{height}") }
                options.height = try size(args[0])
            case "g", "gravity":
                guard args.count == 1, let gravity = Gravity(rawValue: args[0]) else {
                    throw fail("gravity must be one of ce, no, so, ea, we, noea, nowe, soea, sowe, sm")
                }
                options.gravity = gravity
            case "q", "quality":
                guard args.count == 1, let value = Int(args[0]), (1...100).contains(value) else { throw fail("quality must be 1...100") }
                options.quality = value
            case "f", "format", "ext":
                guard args.count == 1, let format = outputFormat(extension: args[0]) else {
                    throw fail("format must be one of jpg, png, webp, avif, gif, tiff")
                }
                options.format = format
            case "bl", "blur":
                guard args.count == 1 else { throw fail("expected bl:{sigma}") }
                options.blur = try number(args[0], 0...100)
            case "rd", "round":
                guard args.count == 1 else { throw fail("expected rd:{radius}") }
                options.round = try number(args[0], 0...Double(maxDimension))
            case "bw":
                options.blackWhite = try flag()
            case "tint":
                guard args.count == 1, let color = Color(hex: args[0]) else { throw fail("expected tint:{hex colour}") }
                options.tint = color
            default:
                try applyDelivery(to: &options)
            }
        }

        /// Zoom, pixel ratio, expiry, file name and cache buster.
        func applyDelivery(to options: inout ProcessingOptions) throws(ParseError) {
            switch name {
            case "z", "zoom":
                guard (1...2).contains(args.count) else { throw fail("expected z:{factor}") }
                let factors = try args.map { text throws(ParseError) in try number(text, 0.0001...1000) }
                guard factors.allSatisfy({ $0 == factors[0] }) else { throw fail("separate x and y zoom factors are not supported") }
                options.zoom = factors[0]
            case "dpr":
                guard args.count == 1 else { throw fail("expected dpr:{ratio}") }
                options.dpr = try number(args[0], 0.0001...8)
            case "exp", "expires":
                guard args.count == 1, let time = Int(args[0]) else { throw fail("expected exp:{unix time}") }
                options.expires = time
            case "fn", "filename":
                guard (1...2).contains(args.count), !args[0].isEmpty else { throw fail("expected fn:{name}[:{base64 encoded}]") }
                options.filename = try filename(args)
            case "att", "return_attachment":
                options.attachment = try flag()
            case "el", "enlarge":
                options.enlarge = try flag()
            case "cb", "cachebuster":
                // Only changes the URL (and so every cache key); nothing to do.
                guard args.count == 1 else { throw fail("expected cb:{string}") }
            default:
                try applyEffect(to: &options)
            }
        }

        /// Turns, mirrors, sharpening, pixelation, padding and background.
        func applyEffect(to options: inout ProcessingOptions) throws(ParseError) {
            switch name {
            case "rot", "rotate":
                guard args.count == 1, let degrees = Int(args[0]), degrees % 90 == 0 else { throw fail("expected rot:{multiple of 90}") }
                options.rotate = degrees
            case "fl", "flip":
                guard (1...2).contains(args.count) else { throw fail("expected fl:{horizontal}:{vertical}") }
                options.flipHorizontal = try bool(args[0])
                options.flipVertical = args.count > 1 ? try bool(args[1]) : false
            case "sh", "sharpen":
                guard args.count == 1 else { throw fail("expected sh:{sigma}") }
                options.sharpen = try number(args[0], 0...100)
            case "pix", "pixelate":
                guard args.count == 1 else { throw fail("expected pix:{size}") }
                options.pixelate = try size(args[0])
            case "pd", "padding":
                guard (1...4).contains(args.count) else { throw fail("expected pd:{top}[:{right}[:{bottom}[:{left}]]]") }
                let sides = try args.map { text throws(ParseError) in text.isEmpty ? 0 : try size(text) }
                let right = sides.count > 1 ? sides[1] : sides[0]
                options.padding = Insets(top: sides[0], right: right, bottom: sides.count > 2 ? sides[2] : sides[0],
                                         left: sides.count > 3 ? sides[3] : right)
            case "bg", "background":
                options.background = try color()
            default:
                throw ParseError(option: segment, message: "unknown option \"\(name)\"")
            }
        }

        /// One boolean argument in imgproxy's forms.
        func bool(_ text: String) throws(ParseError) -> Bool {
            if ["1", "t", "true"].contains(text) { return true }
            if ["0", "f", "false", ""].contains(text) { return false }
            throw fail("expected 1, t, true, 0, f or false")
        }

        /// `R:G:B` (0...255 each) or a hex colour.
        func color() throws(ParseError) -> Color {
            if args.count == 1, let hex = Color(hex: args[0]) { return hex }
            guard args.count == 3 else { throw fail("expected bg:{R}:{G}:{B} or bg:{hex}") }
            let parts = try args.map { text throws(ParseError) in try number(text, 0...255) }
            return Color(red: parts[0] / 255, green: parts[1] / 255, blue: parts[2] / 255)
        }

        /// A resizing type.
        func mode(_ text: String) throws(ParseError) -> ResizeMode {
            guard let mode = ResizeMode(rawValue: text) else { throw fail("resizing type must be fit, fill, fill-down, force or auto") }
            return mode
        }

        /// imgproxy's boolean: none (true), 1/t/true or 0/f/false.
        func flag() throws(ParseError) -> Bool {
            guard args.count <= 1 else { throw fail("expected \(name) or \(name):{1|0}") }
            guard let text = args.first else { return true }
            guard !text.isEmpty else { throw fail("expected 1, t, true, 0, f or false") }
            return try bool(text)
        }

        /// The file name of `fn:`, plain or URL-safe base64 when the second argument is true; safe characters only.
        func filename(_ args: [String]) throws(ParseError) -> String {
            var name = args[0].removingPercentEncoding ?? args[0]
            if args.count == 2, ["1", "t", "true"].contains(args[1]) {
                var text = args[0].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                while text.count % 4 != 0 { text += "=" }
                guard let data = Data(base64Encoded: text), let decoded = String(data: data, encoding: .utf8) else {
                    throw fail("the file name is not URL-safe base64 of UTF-8")
                }
                name = decoded
            }
            guard name.count <= 200, !name.contains(where: { $0.isNewline || $0 == "\"" || $0 == "/" || $0 == "\\" }) else {
                throw fail("the file name must be at most 200 characters without quotes, slashes or line breaks")
            }
            return name
        }
    }

    /// The format a bare file extension names, if Halcyon can write it.
    ///
    /// ``OutputEncodingPolicy/format(forExtension:)`` on a single word: `jpg`,
    /// `jpeg`, `jpe`, `png`, `webp`, `avif`, `gif`, `tif`, `tiff`, any case;
    /// text with a dot or a slash is refused.
    public static func outputFormat(extension text: String) -> ImageFormat? {
        guard !text.contains("."), !text.contains("/") else { return nil }
        return OutputEncodingPolicy.default.format(forExtension: text)
    }

    // MARK: - Processor chain

    /// The processor chain for these options, nil when nothing is asked; its identifier encodes every option.
    public func processor(limits: ImageDecodingOptions, maxSide: Int = 16_384) -> (any ImageProcessor)? {
        processor(limits: limits, admission: nil, maxSide: maxSide)
    }

    /// The chain with `admission` checked before any decoding: by the resize
    /// step, which opens the source once for the check and the decode, or around
    /// the whole chain when there is no resize. Same identifier as without it.
    func processor(limits: ImageDecodingOptions, admission: MemoryAdmission?, maxSide: Int = 16_384) -> (any ImageProcessor)? {
        var steps: [any ImageProcessor] = []
        let resizes = width > 0 || height > 0 || scalesSource
        if resizes {
            var step = thumbnailStep(limits: limits)
            step.admission = admission
            step.trace = ServiceContext.current
            steps.append(step.processor)
        }
        if rotate % 360 != 0 { steps.append(RotationImageProcessor(degrees: rotate)) }
        if flipHorizontal || flipVertical { steps.append(FlipImageProcessor(horizontal: flipHorizontal, vertical: flipVertical)) }
        if let blur, blur > 0 { steps.append(BlurImageProcessor(blurRadius: CGFloat(blur))) }
        if let sharpen, sharpen > 0 { steps.append(SharpenImageProcessor(sigma: CGFloat(sharpen))) }
        if let pixelate, pixelate > 1 { steps.append(PixelateImageProcessor(size: pixelate)) }
        if blackWhite { steps.append(BlackWhiteProcessor()) }
        if let tint { steps.append(TintImageProcessor(tint: tint)) }
        if let round, round > 0 { steps.append(RoundCornerImageProcessor(cornerRadius: CGFloat(round))) }
        steps += finishingSteps(maxSide: maxSide)
        guard var chain = steps.first else { return admission.map { $0.guarding(nil) } }
        for step in steps.dropFirst() { chain = chain |> step }
        if let admission, !resizes { return admission.guarding(chain) }
        return chain
    }
}

extension ProcessingOptions {
    /// Whether zoom and pixel ratio alone (no width or height) change the source's size.
    var scalesSource: Bool { zoom * dpr < 1 || (enlarge && zoom * dpr > 1) }

    /// Padding (scaled by `dpr`, filled with the background or transparent) and the background under transparency.
    func finishingSteps(maxSide: Int) -> [any ImageProcessor] {
        var steps: [any ImageProcessor] = []
        let scaled = { (side: Int) in Int((Double(side) * dpr).rounded()) }
        if !padding.isEmpty {
            steps.append(PaddingImageProcessor(
                top: scaled(padding.top), right: scaled(padding.right), bottom: scaled(padding.bottom), left: scaled(padding.left),
                color: background ?? Color(red: 1, green: 1, blue: 1, alpha: 0), maxSide: maxSide))
        }
        if let background { steps.append(BackgroundColorProcessor(color: background)) }
        return steps
    }

    /// The resize step for these options: sizes multiplied by zoom and pixel ratio (rounded, at least 1),
    /// or, without a size, the source scaled by them (never enlarged).
    func thumbnailStep(limits: ImageDecodingOptions) -> ThumbnailStep {
        let factor = zoom * dpr
        let scaled = { (side: Int) in side > 0 ? max(1, Int((Double(side) * factor).rounded())) : 0 }
        return ThumbnailStep(mode: resizeMode, width: scaled(width), height: scaled(height), gravity: gravity, limits: limits,
                             scale: width == 0 && height == 0 ? (enlarge ? factor : min(1, factor)) : 1, enlarge: enlarge)
    }
}

/// The resize step: probes the header, decodes with the loader's own shrink
/// (libjpeg's 1/2, 1/4, 1/8; libvips shrink-on-load for other formats) to at
/// least the size needed, then resizes once (and for fill crops) exactly, as
/// imgproxy does: one Lanczos pass instead of two.
struct ThumbnailStep: Sendable {
    let mode: ProcessingOptions.ResizeMode
    let width: Int
    let height: Int
    let gravity: ProcessingOptions.Gravity
    let limits: ImageDecodingOptions
    /// Without a width and height: the factor the source is scaled by (at most 1 unless `enlarge`).
    var scale = 1.0
    /// Whether fit and fill may scale up.
    var enlarge = false
    /// Checked with the opened source before any pixel is decoded.
    var admission: MemoryAdmission? = nil
    /// The request's trace context: `halcyon.decode` and `halcyon.process` spans are its children.
    var trace: ServiceContext? = nil

    var processor: GeneralProcessor {
        let step = self
        let scaled = (scale != 1 ? ",x\(scale)" : "") + (enlarge ? ",enlarge" : "")
        return GeneralProcessor(identifier: "halcyon.server.thumbnail(\(mode.rawValue),\(width),\(height),\(gravity.rawValue)\(scaled))") {
            item, options throws(HalcyonError) in
            try step.run(item, options: options)
        }
    }

    /// The output size for a source of `sourceWidth` × `sourceHeight`.
    func target(sourceWidth: Int, sourceHeight: Int) -> (width: Int, height: Int, scaleX: Double, scaleY: Double) {
        let sw = Double(max(1, sourceWidth)), sh = Double(max(1, sourceHeight))
        let wantW = Double(width), wantH = Double(height)
        if width == 0 && height == 0 {
            return (max(1, Int((sw * scale).rounded())), max(1, Int((sh * scale).rounded())), scale, scale)
        }
        if width == 0 || height == 0 {
            // One side given: follow the aspect ratio, never enlarge unless forced.
            var scale = width > 0 ? wantW / sw : wantH / sh
            if mode != .force && !enlarge { scale = min(1, scale) }
            return (max(1, Int((sw * scale).rounded())), max(1, Int((sh * scale).rounded())), scale, scale)
        }
        switch resolvedMode(sourceWidth: sourceWidth, sourceHeight: sourceHeight) {
        case .force:
            return (width, height, wantW / sw, wantH / sh)
        case .fit, .auto:
            let scale = min(enlarge ? .infinity : 1, min(wantW / sw, wantH / sh))
            return (max(1, Int((sw * scale).rounded())), max(1, Int((sh * scale).rounded())), scale, scale)
        case .fillDown where max(wantW / sw, wantH / sh) > 1 && !enlarge:
            // Smaller than the box: the largest crop of the box's aspect ratio, not enlarged.
            let cropW = min(sw, sh * wantW / wantH), cropH = min(sh, sw * wantH / wantW)
            return (max(1, Int(cropW.rounded())), max(1, Int(cropH.rounded())), 1, 1)
        case .fill, .fillDown:
            let scale = min(enlarge ? .infinity : 1, max(wantW / sw, wantH / sh))
            return (min(width, max(1, Int((sw * scale).rounded()))), min(height, max(1, Int((sh * scale).rounded()))), scale, scale)
        }
    }

    /// `auto` made concrete for a source: fill when it and the box are both landscape or both portrait, else fit.
    func resolvedMode(sourceWidth: Int, sourceHeight: Int) -> ProcessingOptions.ResizeMode {
        guard mode == .auto else { return mode }
        guard width > 0, height > 0 else { return .fit }
        return (sourceWidth >= sourceHeight) == (width >= height) ? .fill : .fit
    }

    func run(_ item: ImageProcessItem, options: HalcyonParsedOptionsInfo) throws(HalcyonError) -> Image {
        var image: Image
        var planned: (width: Int, height: Int)?
        switch item {
        case .image(let decoded):
            image = decoded
        case .data(let data):
            let span = trace.map { startSpan("halcyon.decode", context: $0) }
            defer { span?.end() }
            var decoding = options.decodingOptions
            let header = try ImageDecoder.open(data, options: decoding)
            try admission?.admit(header)
            // Either orientation (EXIF may swap the sides): take the larger scale so the shrink never undershoots.
            let upright = target(sourceWidth: header.width, sourceHeight: header.height)
            let turned = target(sourceWidth: header.height, sourceHeight: header.width)
            let scale = max(upright.scaleX, upright.scaleY, turned.scaleX, turned.scaleY)
            if scale < 1 {
                // Rounded up, so the shrink never lands below the target (and an exact fit needs no second resize).
                let box = (Double(max(header.width, header.height)) * scale).rounded(.up)
                decoding.downsampleSize = CGSize(width: box, height: box)
                decoding.downsamplingMode = .loaderOnly
            }
            image = try ImageDecoder.decode(header, options: decoding)
            // The output size comes from the source's size, not the shrunk intermediate.
            // A square intermediate (rounding of a near-square source) says nothing about rotation.
            let rotated = header.width != header.height && image.width != image.height
                && (header.width > header.height) != (image.width > image.height)
            let chosen = rotated ? turned : upright
            planned = (chosen.width, chosen.height)
        }
        let computed = target(sourceWidth: image.width, sourceHeight: image.height)
        let size = planned ?? (computed.width, computed.height)
        let span = trace.map { startSpan("halcyon.process", context: $0) }
        defer { span?.end() }
        span?.attributes["halcyon.size"] = "\(size.width)x\(size.height)"
        switch resolvedMode(sourceWidth: image.width, sourceHeight: image.height) {
        case .fill where width > 0 && height > 0, .fillDown where width > 0 && height > 0:
            let scale = max(Double(size.width) / Double(image.width), Double(size.height) / Double(image.height))
            let coverW = max(size.width, Int((Double(image.width) * scale).rounded()))
            let coverH = max(size.height, Int((Double(image.height) * scale).rounded()))
            if coverW != image.width || coverH != image.height {
                image = try ResizingImageProcessor(referenceSize: CGSize(width: coverW, height: coverH))
                    .process(item: .image(image), options: options)
            }
            return try CroppingImageProcessor(size: CGSize(width: size.width, height: size.height), anchor: gravity.anchor)
                .process(item: .image(image), options: options)
        default:
            if size.width == image.width && size.height == image.height { return image }
            return try ResizingImageProcessor(referenceSize: CGSize(width: size.width, height: size.height))
                .process(item: .image(image), options: options)
        }
    }
}
