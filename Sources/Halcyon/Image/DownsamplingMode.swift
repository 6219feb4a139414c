/// How ``ImageDecodingOptions/downsampleSize`` shrinks an image while it loads.
public enum DownsamplingMode: Sendable, Hashable {
    /// Shrink-on-load, then resample (Lanczos-3) so the longer side is exactly
    /// the target. The default; what `DownsamplingImageProcessor` promises.
    ///
    /// A still JPEG (grey or RGB) is decoded by libjpeg at the largest 1/2,
    /// 1/4 or 1/8 that keeps the longer side at the target or more, a plain
    /// PNG is box-averaged while it inflates (as in ``loaderOnly``); either is
    /// then reduced to the target by Halcyon's fixed-point Lanczos-3. A still
    /// WebP is scaled to the target by libwebp while it decodes, on the calling
    /// thread (libvips' pixels, byte for byte). Other images, CMYK JPEGs and
    /// animations go through libvips' `vips_thumbnail`.
    case exact
    /// Only the loader's own shrink, for a caller that resizes again anyway
    /// (imgproxy and thumbor do the same); no resampling follows.
    ///
    /// A JPEG is decoded at 1/2, 1/4 or 1/8 of its size, the largest
    /// reduction whose longer side still reaches the target: the result is
    /// between the target and twice it (or the full size). A plain PNG (8-bit
    /// grey or RGB, not interlaced, without transparency; its colour profile,
    /// EXIF and text are kept as libvips reads them) is averaged in boxes of a whole number of pixels while it
    /// inflates, the largest that keeps the longer side at twice the target or
    /// more: between twice and four times the target (or the full size).
    /// A still WebP and other images behave as ``exact``.
    case loaderOnly
}
