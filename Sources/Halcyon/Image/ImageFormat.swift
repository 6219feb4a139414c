import Foundation

/// An image file format, recognised from the first bytes of the data.
///
/// Sniffing never trusts a file name or a Content-Type: only the magic bytes
/// decide. Data that matches none of the known signatures is `.unknown`.
/// JPEG is `FF D8` (start of image) and at least one more byte, whatever it
/// is, as for libvips' own check.
public enum ImageFormat: String, Sendable, Hashable, Codable, CodingKeyRepresentable, CaseIterable, CustomStringConvertible {
    case jpeg, png, gif, webp, avif, heic, tiff, bmp, unknown

    /// Recognises the format of `data` from its magic bytes.
    public init(sniffing data: Data) {
        self = data.withUnsafeBytes { ImageFormat(sniffing: $0) }
    }

    /// Recognises the format of raw bytes from their magic bytes.
    public init(sniffing bytes: UnsafeRawBufferPointer) {
        func matches(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            guard bytes.count >= offset + signature.count else { return false }
            for (index, byte) in signature.enumerated() where bytes[offset + index] != byte {
                return false
            }
            return true
        }
        if matches([0xFF, 0xD8]) && bytes.count > 2 {
            // SOI, then normally a marker (FF). libvips takes FF D8 alone as
            // JPEG and libjpeg skips junk before the next marker with a
            // warning, so a damaged third byte is damage, not another format.
            self = .jpeg
        } else if matches([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            self = .png
        } else if matches(Array("GIF87a".utf8)) || matches(Array("GIF89a".utf8)) {
            self = .gif
        } else if matches(Array("RIFF".utf8)) && matches(Array("WEBP".utf8), at: 8) {
            self = .webp
        } else if matches([0x49, 0x49, 0x2A, 0x00]) || matches([0x4D, 0x4D, 0x00, 0x2A]) {
            self = .tiff
        } else if matches(Array("ftyp".utf8), at: 4) {
            self = ImageFormat.isobmffFormat(bytes)
        } else if matches(Array("BM".utf8)) && bytes.count >= 26 {
            self = .bmp
        } else {
            self = .unknown
        }
    }

    /// AVIF or HEIC from the ISO-BMFF `ftyp` box: the major brand, then the compatible ones.
    private static func isobmffFormat(_ bytes: UnsafeRawBufferPointer) -> ImageFormat {
        let avifBrands: Set<String> = ["avif", "avis"]
        let heicBrands: Set<String> = ["heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs", "mif1", "msf1"]
        func brand(at offset: Int) -> String? {
            guard bytes.count >= offset + 4 else { return nil }
            return String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
        }
        let boxSize = bytes.count >= 4
            ? Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
            : 0
        var brands: [String] = []
        if let major = brand(at: 8) { brands.append(major) }
        var offset = 16
        while offset + 4 <= min(boxSize, bytes.count), let compatible = brand(at: offset) {
            brands.append(compatible)
            offset += 4
        }
        if brands.contains(where: avifBrands.contains) { return .avif }
        if brands.contains(where: heicBrands.contains) { return .heic }
        return .unknown
    }

    /// The MIME type, `application/octet-stream` for `.unknown`.
    public var mimeType: String {
        switch self {
        case .jpeg: return "image/jpeg"
        case .png: return "image/png"
        case .gif: return "image/gif"
        case .webp: return "image/webp"
        case .avif: return "image/avif"
        case .heic: return "image/heic"
        case .tiff: return "image/tiff"
        case .bmp: return "image/bmp"
        case .unknown: return "application/octet-stream"
        }
    }

    /// The name people write (`JPEG`, `PNG`, `WebP`...), for messages; "unknown" for `.unknown`.
    public var displayName: String {
        switch self {
        case .webp: return "WebP"
        case .unknown: return "unknown"
        default: return rawValue.uppercased()
        }
    }

    /// The usual file extension without a dot, empty for `.unknown`.
    public var fileExtension: String {
        switch self {
        case .jpeg: return "jpg"
        case .unknown: return ""
        default: return rawValue
        }
    }

    /// Whether the format can hold more than one frame that Halcyon keeps (GIF, WebP).
    public var supportsAnimation: Bool { self == .gif || self == .webp }

    /// The format named by a file extension or short name (`jpg`, `jpeg`, `png`...), if any.
    public init?(fileExtension: String) {
        switch fileExtension.lowercased() {
        case "jpg", "jpeg", "jpe": self = .jpeg
        case "png": self = .png
        case "gif": self = .gif
        case "webp": self = .webp
        case "avif": self = .avif
        case "heic", "heif": self = .heic
        case "tif", "tiff": self = .tiff
        case "bmp": self = .bmp
        default: return nil
        }
    }

    public var description: String { rawValue }
}
