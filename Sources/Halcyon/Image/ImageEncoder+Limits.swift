import Foundation

extension ImageEncoder {
    /// The most pixels of one frame that a server should give `encoding`'s encoder, nil when its work stops on cancel.
    ///
    /// ``RenderCancellation`` stops an encode at the next tile of its render.
    /// libvips 8.14's GIF and WebP savers gather a whole frame first, then
    /// compress it in one call that never looks at a cancellation: cgif with
    /// libimagequant's quantising and dithering for GIF, libwebp's `WebPEncode`
    /// (or `WebPAnimEncoderAdd`) without a progress hook for WebP. A cancel lands
    /// between frames only, so each frame's compression runs to its end; these
    /// limits keep that run short. Measured with `vips copy` (libvips 8.14,
    /// one core of the development machine): a lossy WebP frame of 16
    /// megapixels 1.5 s, a lossless one of 4 megapixels 2.7 s (so about 1.7 s
    /// at the limit); GIF 2.4 s for 1 megapixel, 6.4 s for 4 and 20 s for 49,
    /// most of it libimagequant's palette search, which costs about 2 s a frame
    /// whatever its size, so GIF stays the slowest to stop. AVIF is not bounded
    /// here: its encoder also runs to its end (see the README).
    public static func uncancellableFrameLimit(for encoding: ImageEncodingFormat) -> Int? {
        switch encoding {
        case .gif: return 4_000_000
        case .webp(_, let lossless): return lossless ? 2_500_000 : 16_000_000
        default: return nil
        }
    }
}
