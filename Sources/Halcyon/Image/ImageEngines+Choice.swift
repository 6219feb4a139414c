import CHalcyonVips

/// The choice of engine for each step: the setting, then the C capability check of Halcyon's engine.
extension ImageEngines {
    /// The engine that reduces `image` by the factors: Halcyon's fixed-point reduce when the setting allows it and
    /// `hc_reduce_supports` takes the image (8-bit, 1-4 bands, in memory, factors in (1/4, 1]); else `vips_resize`.
    func reduceEngine(for image: VipsImageRef, horizontal: Double, vertical: Double) -> ImageEngine {
        guard reduce == .halcyon else { return .libvips }
        let takes = withExtendedLifetime(image) { hc_reduce_supports(image.pointer, horizontal, vertical) == 1 }
        return takes ? .halcyon : .libvips
    }

    /// The encoder that writes `image` as PNG at zlib `level`: libdeflate when the setting allows it, the output is
    /// not interlaced and `hc_pngsave_takes` takes the image (plain 8-bit, at most 16 MiB, no metadata); else libpng.
    func pngSaveEngine(for image: VipsImageRef, level: Int, interlaced: Bool) -> ImageEngine {
        guard pngSave == .halcyon, !interlaced, let level = Int32(exactly: level) else { return .libvips }
        let takes = withExtendedLifetime(image) { hc_pngsave_takes(image.pointer, level) == 1 }
        return takes ? .halcyon : .libvips
    }

    /// The encoder that writes `image` as JPEG: libjpeg on the calling thread when the setting allows it and
    /// `hc_jpegsave_takes` takes the image (8-bit 3-band sRGB or 1-band, at most 65500 pixels a side); else libvips'
    /// saver, which converts any other image first.
    func jpegSaveEngine(for image: VipsImageRef) -> ImageEngine {
        guard jpegSave == .halcyon else { return .libvips }
        let takes = withExtendedLifetime(image) { hc_jpegsave_takes(image.pointer) == 1 }
        return takes ? .halcyon : .libvips
    }

    /// The encoder that writes `image` as WebP: libwebp on the calling thread when the setting allows it and
    /// `hc_webpsave_takes` takes the image (a still 8-bit sRGB image of 3 or 4 bands, at most 16383 pixels a side); else
    /// libvips' saver.
    func webpSaveEngine(for image: VipsImageRef) -> ImageEngine {
        guard webpSave == .halcyon else { return .libvips }
        let takes = withExtendedLifetime(image) { hc_webpsave_takes(image.pointer) == 1 }
        return takes ? .halcyon : .libvips
    }

    /// The encoder that writes `image` as AVIF: libheif on the calling thread when the setting allows it and
    /// `hc_avifsave_takes` takes the image (a still 8-bit sRGB image of 3 or 4 bands); else libvips' saver.
    func avifSaveEngine(for image: VipsImageRef) -> ImageEngine {
        guard avifSave == .halcyon else { return .libvips }
        let takes = withExtendedLifetime(image) { hc_avifsave_takes(image.pointer) == 1 }
        return takes ? .halcyon : .libvips
    }

    /// The loader that shrinks the PNG in `buffer` by `shrink`: Halcyon's when the setting allows it and
    /// `hc_png_load_shrunk_takes` takes the file by its header (8-bit grey or RGB, not interlaced, no transparency,
    /// background or unknown chunk; shrink 1...1024); else libvips'. A file that proves damaged while Halcyon's loader
    /// decodes it goes to libvips' loader too (the loader's result 1), as a file it does not take would.
    func pngLoadEngine(for buffer: EncodedBuffer, shrink: Int) -> ImageEngine {
        guard pngLoad == .halcyon, let shrink = Int32(exactly: shrink) else { return .libvips }
        let takes = withExtendedLifetime(buffer) {
            hc_png_load_shrunk_takes(buffer.bytes.baseAddress, buffer.count, shrink) == 1
        }
        return takes ? .halcyon : .libvips
    }

    /// The loader that scales the WebP in `buffer` while it decodes: Halcyon's when the setting allows it and
    /// `hc_webp_load_scaled_takes` takes the file by its header (a still image); else libvips' thumbnail. A file that
    /// proves damaged while Halcyon's loader decodes it goes to libvips too (the loader's result 1).
    func webpLoadEngine(for buffer: EncodedBuffer) -> ImageEngine {
        guard webpLoad == .halcyon else { return .libvips }
        let takes = withExtendedLifetime(buffer) { hc_webp_load_scaled_takes(buffer.bytes.baseAddress, buffer.count) == 1 }
        return takes ? .halcyon : .libvips
    }
}
