/// How ``ImageDecodingOptions/downsampleSize`` shrinks an image while it loads.
public enum DownsamplingMode: Sendable, Hashable {
    /// Shrink-on-load, then resample (Lanczos) so the longer side is exactly
    /// the target. The default; what `DownsamplingImageProcessor` promises.
    case exact
    /// Only the loader's own shrink, for a caller that resizes again anyway
    /// (imgproxy and thumbor do the same); no resampling follows.
    ///
    /// A JPEG is decoded at 1/2, 1/4 or 1/8 of its size, the largest
    /// reduction whose longer side still reaches the target: the result is
    /// between the target and twice it (or the full size). A plain PNG (8-bit
    /// grey or RGB, not interlaced, without transparency, colour profile or
    /// EXIF) is averaged in boxes of a whole number of pixels while it
    /// inflates, the largest that keeps the longer side at twice the target or
    /// more: between twice and four times the target (or the full size).
    /// Other images behave as ``exact``.
    case loaderOnly
}
