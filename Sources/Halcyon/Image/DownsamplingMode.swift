/// How ``ImageDecodingOptions/downsampleSize`` shrinks an image while it loads.
public enum DownsamplingMode: Sendable, Hashable {
    /// Shrink-on-load, then resample (Lanczos) so the longer side is exactly
    /// the target. The default; what `DownsamplingImageProcessor` promises.
    case exact
    /// Only the loader's own shrink: a JPEG is decoded at 1/2, 1/4 or 1/8 of
    /// its size, the largest reduction whose longer side still reaches the
    /// target, and no resampling follows. The result is between the target and
    /// twice it (or the full size), for a caller that resizes again anyway
    /// (imgproxy and thumbor do the same). Other formats behave as ``exact``.
    case loaderOnly
}
