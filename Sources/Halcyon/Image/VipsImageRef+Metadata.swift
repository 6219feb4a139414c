import CHalcyonVips
import Foundation

// MARK: - Header metadata (no pixels read)

extension VipsImageRef {
    /// libvips' name of the colour interpretation: `srgb`, `b-w`, `cmyk`, `rgb16`, `grey16`, `lab`, …
    var interpretation: String { String(cString: hc_interpretation(pointer)) }

    /// The EXIF orientation, 1...8.
    var orientation: Int { Int(hc_orientation(pointer)) }

    /// The resolution in pixels per millimetre, as libvips keeps it.
    var resolution: (x: Double, y: Double) { (hc_xres(pointer), hc_yres(pointer)) }

    /// Whether the header carries metadata field `name` (`exif-data`, `xmp-data`, `icc-profile-data`, `iptc-data`).
    func hasField(_ name: String) -> Bool { hc_has_field(pointer, name) != 0 }

    /// The string field `name`, or nil when absent or not a string.
    func stringField(_ name: String) -> String? {
        var value: UnsafePointer<CChar>?
        guard hc_string_field(pointer, name, &value) == 0, let value else { return nil }
        return String(cString: value)
    }
}
