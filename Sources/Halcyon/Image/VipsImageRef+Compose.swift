import CHalcyonVips
import Foundation

// MARK: - Trimming, metadata and watermarks

extension VipsImageRef {
    /// The box of what differs from `background` (one value per band; empty takes the top-left pixel's colour)
    /// by more than `threshold`; nil when everything is background, or when a side is under 3 pixels.
    func trimBox(threshold: Double, background: [Double]) throws(HalcyonError) -> (left: Int, top: Int, width: Int, height: Int)? {
        try VipsRuntime.ensureStarted()
        // find_trim smooths with a 3×3 median first and fails on anything narrower: nothing to trim there.
        guard width >= 3, height >= 3 else { return nil }
        var left: Int32 = 0, top: Int32 = 0, width: Int32 = 0, height: Int32 = 0
        let status = withExtendedLifetime(self) {
            background.withUnsafeBufferPointer {
                hc_find_trim(pointer, threshold, $0.baseAddress, Int32($0.count), &left, &top, &width, &height)
            }
        }
        guard status == 0 else {
            throw .processorError(reason: .operationFailed(operation: "find_trim", message: VipsRuntime.takeErrorMessage()))
        }
        guard width > 0, height > 0 else { return nil }
        return (Int(left), Int(top), Int(width), Int(height))
    }

    /// A copy without EXIF, XMP, IPTC and comments; EXIF copyright and artist stay with `keepCopyright`,
    /// the ICC profile with `keepColorProfile`.
    func strippedMetadata(keepCopyright: Bool, keepColorProfile: Bool) throws(HalcyonError) -> VipsImageRef {
        try apply("strip") { hc_strip_metadata($0, keepCopyright ? 1 : 0, keepColorProfile ? 1 : 0, $1) }
    }

    /// `overlay` (8-bit RGBA) over this image at (`x`, `y`), its alpha scaled by `opacity`; `tiled` repeats it
    /// over the whole image instead. Keeps this image's bands.
    func watermarked(with overlay: VipsImageRef, opacity: Double, x: Int, y: Int, tiled: Bool) throws(HalcyonError) -> VipsImageRef {
        try apply("watermark", with: [overlay]) {
            hc_watermark($0, overlay.pointer, min(1, max(0, opacity)), Int32(x), Int32(y), tiled ? 1 : 0, $1)
        }
    }

    /// The `width` × `height` part libvips' attention model finds most interesting.
    func smartCropped(width: Int, height: Int) throws(HalcyonError) -> VipsImageRef {
        try apply("smartcrop") { hc_smartcrop($0, Int32(width), Int32(height), $1) }
    }
}
