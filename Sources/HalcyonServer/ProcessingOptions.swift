import Foundation
import Halcyon

/// The processing options of one request, in imgproxy's grammar: path
/// segments `name:arg:arg`, e.g. `rs:fill:300:200/g:no/q:80/bl:2/rd:12/bw/tint:ff0000`.
///
/// Sizes never enlarge for `fit` and `fill` unless `el` (imgproxy's default);
/// `force` gives exactly the size asked. A zero side follows the aspect ratio.
/// They are rendered as one ordered list of steps (`RenderStep.swift`): the
/// EXIF orientation (undone for `ar:0`), trim, rotate and flip, crop, resize,
/// the fill crop, extend; then the filters, padding, background, watermark,
/// metadata and encode.
public struct ProcessingOptions: Sendable, Hashable, Codable {
    /// How the image is fitted into the width and height.
    public enum ResizeMode: String, Sendable, Hashable, Codable {
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

    /// The resize mode. Default fit.
    public var resizeMode: ResizeMode = .fit
    /// Target width in pixels; 0 follows the aspect ratio.
    public var width = 0
    /// Target height in pixels; 0 follows the aspect ratio.
    public var height = 0
    /// `mw:`: the result is scaled up to at least this width (within `el`'s rule).
    public var minWidth = 0
    /// `mh:`: the result is scaled up to at least this height (within `el`'s rule).
    public var minHeight = 0
    /// `g:`: where crops are anchored, with offsets or a focus point. Default centre.
    public var gravity = Placement()
    /// Encoder quality 1...100; nil uses the format's default.
    public var quality: Int?
    /// `fq:`: quality per output format; wins over `quality`.
    public var formatQuality: [ImageFormat: Int] = [:]
    /// `mb:`: lossy results are re-encoded at lower quality until at most this many bytes.
    public var maxBytes: Int?
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
    /// `ex:`: a result smaller than the width and height is placed on a canvas of that size.
    public var extend: Placement?
    /// `exar:`: a result is extended to the width:height aspect ratio.
    public var extendAspectRatio: Placement?
    /// `z:`: multiplies the target width (or, without one, the source's width), never enlarging. Default 1.
    public var zoomX = 1.0
    /// `z:`: the height's factor (the same as `zoomX` unless two are given).
    public var zoomY = 1.0
    /// `dpr:`: device pixel ratio, multiplies the target size like zoom. Default 1.
    public var dpr = 1.0
    /// `exp:`: Unix time after which the URL is refused (404 `expired`).
    public var expires: Int?
    /// `cb:`: changes nothing in the processing, only the request's identity, so no cached answer of another
    /// cache buster is used.
    public var cacheBuster: String?
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
    /// `bg:`: the colour behind transparency and padding.
    public var background: Color?
    /// `c:`: a crop of the (trimmed, turned) source before resizing.
    public var crop: Crop?
    /// `t:`: a border of one colour cut away first.
    public var trim: Trim?
    /// `ar:`: turn upright by the EXIF orientation; nil follows the server (on).
    public var autoRotate: Bool?
    /// `sm:`: drop metadata; nil follows the server (on, as imgproxy).
    public var stripMetadata: Bool?
    /// `kcr:`: keep EXIF copyright and artist when stripping; nil follows the server (on).
    public var keepCopyright: Bool?
    /// `scp:`: drop the ICC profile (pixels are already sRGB); nil follows the server (on).
    public var stripColorProfile: Bool?
    /// `wm:`: the server's watermark image drawn over the result.
    public var watermark: Watermark?
    /// `skp:`: sources in these formats are sent as they are; sorted, each once.
    public var skipProcessing: [ImageFormat] = []
    /// `raw`: the source is sent as it is, whatever its format.
    public var raw = false

    /// Makes the default options (no processing).
    public init() {}

    /// A parse failure: the offending segment and why.
    public struct ParseError: Error, Sendable, Equatable {
        /// The option segment as written.
        public let option: String
        /// What is wrong with it.
        public let message: String
    }

    /// The width and height multiplied by zoom and pixel ratio.
    var scaledSize: (width: Int, height: Int) {
        let scale = { (side: Int, factor: Double) in side > 0 ? max(1, Int((Double(side) * factor * dpr).rounded())) : 0 }
        return (scale(width, zoomX), scale(height, zoomY))
    }

    /// The quality for an output format: `fq`, else `q`, else nil (the server's default).
    func quality(for format: ImageFormat) -> Int? { formatQuality[format] ?? quality }
}

// MARK: - Option values

extension ProcessingOptions {
    /// Where a crop, an extension or a watermark sits: a gravity with offsets, or a focus point.
    public struct Placement: Sendable, Hashable, Codable {
        /// The gravity.
        public var type: Gravity = .ce
        /// Pixels inward from the gravity's edge (added at the centre); for `fp`, the focus point's x (0...1).
        public var x = 0.0
        /// As `x`, vertically.
        public var y = 0.0

        /// Makes a placement.
        public init(type: Gravity = .ce, x: Double = 0, y: Double = 0) {
            self.type = type
            self.x = x
            self.y = y
        }

        /// The top-left of `inner` inside `outer`; inside `outer` whenever `inner` fits.
        func origin(outer: (width: Int, height: Int), inner: (width: Int, height: Int)) -> (x: Int, y: Int) {
            let free = (outer.width - inner.width, outer.height - inner.height)
            let clamp = { (value: Double, free: Int) in free < 0 ? Int(value.rounded()) : min(free, max(0, Int(value.rounded()))) }
            if type == .fp {
                return (clamp(Double(outer.width) * x - Double(inner.width) / 2, free.0),
                        clamp(Double(outer.height) * y - Double(inner.height) / 2, free.1))
            }
            let anchor = type.anchor
            let place = { (unit: Double, shift: Double, free: Int) -> Int in
                let base = Double(free) * unit
                return clamp(unit > 0.5 ? base - shift : base + shift, free)
            }
            return (place(anchor.x, x, free.0), place(anchor.y, y, free.1))
        }
    }

    /// A gravity: the nine compass points, smart, or a focus point.
    public enum Gravity: String, Sendable, Hashable, Codable {
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
        /// Smart: libvips' attention model picks the crop (see `SmartCroppingImageProcessor`); offsets are ignored.
        case sm
        /// North-east (top right).
        case noea
        /// North-west (top left).
        case nowe
        /// South-east (bottom right).
        case soea
        /// South-west (bottom left).
        case sowe
        /// A focus point given as fractions of the width and height.
        case fp

        /// The unit anchor (0,0 top left; 1,1 bottom right); smart and focus point give the centre (smart crops
        /// are placed by the attention model instead, extensions and watermarks at the centre).
        public var anchor: CGPoint {
            switch self {
            case .ce, .sm, .fp: return CGPoint(x: 0.5, y: 0.5)
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

    /// Space added above, right, below and left, in pixels.
    public struct Insets: Sendable, Hashable, Codable {
        /// Each side.
        public var top = 0, right = 0, bottom = 0, left = 0
        /// Whether any side is above 0.
        public var isEmpty: Bool { top + right + bottom + left == 0 }
    }

    /// `c:`: a crop before resizing; a side below 1 is a fraction of the source's, 0 the whole side.
    public struct Crop: Sendable, Hashable, Codable {
        /// Width in pixels, or a fraction below 1.
        public var width: Double
        /// Height in pixels, or a fraction below 1.
        public var height: Double
        /// Where it sits; nil uses the request's gravity.
        public var placement: Placement?

        /// The crop's size for a source of `width` × `height`.
        func size(sourceWidth: Int, sourceHeight: Int) -> (width: Int, height: Int) {
            let side = { (value: Double, source: Int) -> Int in
                if value <= 0 { return source }
                return min(source, max(1, Int((value < 1 ? value * Double(source) : value).rounded())))
            }
            return (side(width, sourceWidth), side(height, sourceHeight))
        }
    }

    /// `t:`: the border trim.
    public struct Trim: Sendable, Hashable, Codable {
        /// How far from the border colour a pixel may be, 0...255.
        public var threshold: Double
        /// The border colour; nil takes the top-left pixel's.
        public var color: Color?
        /// Cut left and right alike.
        public var equalHorizontal = false
        /// Cut top and bottom alike.
        public var equalVertical = false
    }

    /// `wm:`: the server's watermark.
    public struct Watermark: Sendable, Hashable, Codable {
        /// Alpha multiplier, 0...1.
        public var opacity: Double
        /// Where it goes; nil (`re`) tiles it.
        public var position: Gravity? = .ce
        /// Pixels inward from the position's edge.
        public var x = 0.0
        /// Pixels inward from the position's edge.
        public var y = 0.0
        /// Its width as a fraction of the result's; 0 keeps its size.
        public var scale = 0.0
    }
}
