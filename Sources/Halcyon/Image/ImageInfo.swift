import Foundation

/// What an encoded image is, from its header and a small shrink-on-load decode:
/// thumbor's `/meta` and imgproxy's `/info` in one value.
///
/// ``inspect(_:blurHashComponents:options:)`` reads the header (and checks the
/// pixel and frame limits of `options` there, before any decoding), then
/// decodes the first frame shrunk by the loader to at most 64 pixels a side
/// for the dominant colour and the BlurHash. Sizes are as stored, before the
/// EXIF orientation is applied.
public struct ImageInfo: Sendable, Equatable, Codable {
    /// Width in pixels, as stored.
    public var width: Int
    /// Height of one frame in pixels, as stored.
    public var height: Int
    /// The container format (`jpeg`, `png`, `webp`, …).
    public var format: String
    /// Frames read (1 unless the decoding options allow an animation).
    public var frames: Int
    /// EXIF orientation, 1...8 (1 when absent).
    public var orientation: Int
    /// Whether the image has an alpha channel.
    public var hasAlpha: Bool
    /// libvips' colour interpretation (`srgb`, `b-w`, `cmyk`, `rgb16`, …).
    public var colorSpace: String
    /// Size of the encoded bytes.
    public var bytes: Int
    /// Whether EXIF, XMP, IPTC and an ICC profile are present.
    public var hasEXIF: Bool, hasXMP: Bool, hasIPTC: Bool, hasICCProfile: Bool
    /// Common EXIF fields that are present (Make, Model, Copyright, Artist, DateTimeOriginal, ExposureTime, FNumber, ISO, FocalLength, Software).
    public var exif: [String: String]
    /// The dominant colour as `#rrggbb` (see ``DominantColor``).
    public var dominantColor: String
    /// The BlurHash of the first frame, when asked for.
    public var blurHash: String?
    /// The ThumbHash of the first frame, standard base64 (see ``ThumbHash``).
    public var thumbHash: String

    /// The EXIF fields reported, by libvips' field name.
    static let exifFields: [(String, String)] = [
        ("Make", "exif-ifd0-Make"), ("Model", "exif-ifd0-Model"), ("Software", "exif-ifd0-Software"),
        ("Copyright", "exif-ifd0-Copyright"), ("Artist", "exif-ifd0-Artist"),
        ("DateTimeOriginal", "exif-ifd2-DateTimeOriginal"), ("ExposureTime", "exif-ifd2-ExposureTime"),
        ("FNumber", "exif-ifd2-FNumber"), ("ISOSpeedRatings", "exif-ifd2-ISOSpeedRatings"),
        ("FocalLength", "exif-ifd2-FocalLength"),
    ]

    /// Inspects `data`; `blurHashComponents` (each 1...9) adds a BlurHash.
    ///
    /// Throws what decoding throws (`emptyData`, `unsupportedFormat`, `corruptData`, `tooManyPixels`,
    /// `tooManyFrames`) and `.invalidParameter` for bad component counts. Runs on the caller's thread.
    public static func inspect(
        _ data: Data, blurHashComponents: (x: Int, y: Int)? = nil, options: ImageDecodingOptions = ImageDecodingOptions()
    ) throws(HalcyonError) -> ImageInfo {
        let opened = try ImageDecoder.open(data, options: options)
        let header = opened.header
        var exif: [String: String] = [:]
        for (name, field) in exifFields {
            // libvips writes "value (raw value, type, count, bytes)"; keep the readable part.
            if let text = header.stringField(field) {
                exif[name] = text.components(separatedBy: " (").first ?? text
            }
        }
        var small = options
        small.downsampleSize = CGSize(width: Image.summarySide, height: Image.summarySide)
        small.onlyFirstFrame = true
        let thumbnail = try ImageDecoder.decode(data, options: small)
        let dominant = try thumbnail.dominantColor()
        let hash = try blurHashComponents.map { components throws(HalcyonError) in
            try thumbnail.blurHash(componentsX: components.x, componentsY: components.y)
        }
        return ImageInfo(
            width: opened.width, height: opened.height, format: opened.format.rawValue, frames: opened.frameCount,
            orientation: header.orientation, hasAlpha: header.hasAlpha, colorSpace: header.interpretation, bytes: data.count,
            hasEXIF: header.hasField("exif-data"), hasXMP: header.hasField("xmp-data"), hasIPTC: header.hasField("iptc-data"),
            hasICCProfile: header.hasField("icc-profile-data"), exif: exif,
            dominantColor: String(format: "#%02x%02x%02x", dominant.red, dominant.green, dominant.blue), blurHash: hash,
            thumbHash: Data(try thumbnail.thumbHash()).base64EncodedString())
    }
}
