import Foundation

/// Small summaries of an image for placeholders and `/info`: a BlurHash, a ThumbHash and a dominant colour.
extension Image {
    /// The longest side of the copy summaries are computed from.
    static let summarySide = 64

    /// The BlurHash of the first frame (see ``BlurHash``), from a copy shrunk to at most 64 pixels a side.
    ///
    /// `componentsX` and `componentsY` are 1...9 each (default 4 × 3); other values throw
    /// `.processorError(.invalidParameter)`. Alpha is ignored, as in the reference encoder.
    public func blurHash(componentsX: Int = 4, componentsY: Int = 3) throws(HalcyonError) -> String {
        let small = try summaryCopy()
        return try BlurHash.encode(rgba: small.pixels, width: small.width, height: small.height,
                                   componentsX: componentsX, componentsY: componentsY)
    }

    /// The ThumbHash of the first frame (see ``ThumbHash``), from a copy shrunk to at most 64 pixels a side.
    public func thumbHash() throws(HalcyonError) -> [UInt8] {
        let small = try summaryCopy()
        return try ThumbHash.encode(rgba: small.pixels, width: small.width, height: small.height)
    }

    /// The dominant colour of the first frame (see ``DominantColor``), from a copy shrunk to at most 64 pixels a side.
    public func dominantColor() throws(HalcyonError) -> RGBA8 {
        let small = try summaryCopy()
        return DominantColor.of(rgba: small.pixels)
    }

    /// The first frame as 8-bit sRGB RGBA, shrunk to fit `summarySide` (never enlarged).
    private func summaryCopy() throws(HalcyonError) -> (pixels: [UInt8], width: Int, height: Int) {
        let frame = try frameImage(0).srgb8()
        let small = max(frame.width, frame.height) > Self.summarySide ? try frame.thumbnailed(fitting: Self.summarySide) : frame
        return (try small.withAlpha().pixelBytes(), small.width, small.height)
    }
}
