import Foundation

/// Which engine each step with an engine of Halcyon's own may use: the process-wide setting behind
/// ``VipsImageRef/resized(horizontal:vertical:engines:)``, the PNG, JPEG, WebP and AVIF encoders, the shrinking PNG
/// loader and the scaling WebP loader.
///
/// `.halcyon` for a step means Halcyon's engine runs wherever its C capability check takes the input
/// (`hc_reduce_supports`, `hc_png_load_shrunk_takes`, `hc_webp_load_scaled_takes`, `hc_pngsave_takes`,
/// `hc_jpegsave_takes`, `hc_webpsave_takes`, `hc_avifsave_takes`) and libvips runs everywhere else;
/// `.libvips` means libvips always runs. The choice itself is made in Swift (`ImageEngines+Choice.swift`);
/// the C layer only offers each engine and its check.
///
/// The default is ``preferred`` (Halcyon's engines where they apply). ``current`` is the process-wide
/// setting: tests and benchmarks may set it, and it starts from the environment variable
/// `HALCYON_LIBVIPS_ONLY`, read once, on first use: a comma-separated list of `reduce`, `png-load`,
/// `webp-load`, `png-save`, `jpeg-save`, `webp-save`, `avif-save` or `all`, naming the steps that always run in libvips (for
/// before/after comparisons).
package struct ImageEngines: Sendable, Hashable {
    /// The Lanczos-3 reduce: `halcyon_reduce.c`'s fixed-point reduce or `vips_resize`.
    package var reduce: ImageEngine
    /// Shrink-on-load of a plain PNG: `halcyon_png.c`'s box-shrinking loader or libvips' loader and thumbnail.
    package var pngLoad: ImageEngine
    /// Shrink-on-load of a still WebP: `halcyon_webpload.c`'s libwebp decode on the calling thread, scaled by libwebp,
    /// or libvips' thumbnail, which has libwebp scale the same way but decode with its filtering thread.
    package var webpLoad: ImageEngine
    /// PNG encoding: `halcyon_pngsave.c`'s libdeflate encoder or libvips' saver (libpng).
    package var pngSave: ImageEngine
    /// JPEG encoding: `halcyon_jpegsave.c`'s libjpeg encoder on the calling thread or libvips' saver, which compresses
    /// on its thread pool while the caller waits. Both write the same bytes.
    package var jpegSave: ImageEngine
    /// AVIF encoding: `halcyon_avifsave.c`'s libheif encoder on the calling thread, libaom on one thread, or libvips'
    /// saver, which encodes on its thread pool (libaom on 4 threads) while the caller waits. Both write the same bytes.
    package var avifSave: ImageEngine
    /// WebP encoding: `halcyon_webpsave.c`'s libwebp encoder on the calling thread or libvips' saver, which encodes on
    /// its thread pool while the caller waits. Both write the same bytes.
    package var webpSave: ImageEngine

    /// The engines for each step; every step prefers Halcyon's engine unless told otherwise.
    package init(
        reduce: ImageEngine = .halcyon, pngLoad: ImageEngine = .halcyon, webpLoad: ImageEngine = .halcyon,
        pngSave: ImageEngine = .halcyon, jpegSave: ImageEngine = .halcyon, avifSave: ImageEngine = .halcyon,
        webpSave: ImageEngine = .halcyon
    ) {
        self.reduce = reduce
        self.pngLoad = pngLoad
        self.webpLoad = webpLoad
        self.pngSave = pngSave
        self.jpegSave = jpegSave
        self.avifSave = avifSave
        self.webpSave = webpSave
    }

    /// Halcyon's engine for every step, wherever it takes the input: the default.
    package static let preferred = ImageEngines()

    /// libvips for every step.
    package static let libvipsOnly = ImageEngines(
        reduce: .libvips, pngLoad: .libvips, webpLoad: .libvips, pngSave: .libvips, jpegSave: .libvips, avifSave: .libvips,
        webpSave: .libvips
    )

    /// The environment variable ``current`` starts from.
    package static let environmentVariable = "HALCYON_LIBVIPS_ONLY"

    /// The process-wide setting every image step reads when it is not handed one.
    ///
    /// Tests that need one engine hand an `ImageEngines` to the step rather than set this: suites running beside
    /// them in the same process read it too.
    package static var current: ImageEngines {
        get { setting.withLock { $0 } }
        set { setting.withLock { $0 = newValue } }
    }

    private static let setting = Locked(fromEnvironment(ProcessInfo.processInfo.environment))

    /// ``preferred`` with the steps named in `HALCYON_LIBVIPS_ONLY` given to libvips; unknown names are logged
    /// (warning) and ignored.
    static func fromEnvironment(_ environment: [String: String]) -> ImageEngines {
        guard let value = environment[environmentVariable] else { return .preferred }
        let (engines, unknown) = parse(libvipsOnly: value)
        if !unknown.isEmpty {
            let names = unknown.joined(separator: ", ")
            VipsRuntime.logger.warning("\(environmentVariable): unknown step(s) \(names) (use reduce, png-load, webp-load, png-save, jpeg-save, webp-save, avif-save or all)")
        }
        return engines
    }

    /// ``preferred`` with the steps in `list` (comma-separated `reduce`, `png-load`, `webp-load`, `png-save`, `jpeg-save`,
    /// `webp-save`, `avif-save`, `all`; case and
    /// spaces ignored) given to libvips, and the names it did not know.
    static func parse(libvipsOnly list: String) -> (engines: ImageEngines, unknown: [String]) {
        var engines = ImageEngines.preferred
        var unknown: [String] = []
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        for name in names where !name.isEmpty {
            switch name {
            case "reduce": engines.reduce = .libvips
            case "png-load": engines.pngLoad = .libvips
            case "webp-load": engines.webpLoad = .libvips
            case "png-save": engines.pngSave = .libvips
            case "jpeg-save": engines.jpegSave = .libvips
            case "avif-save": engines.avifSave = .libvips
            case "webp-save": engines.webpSave = .libvips
            case "all": engines = .libvipsOnly
            default: unknown.append(name)
            }
        }
        return (engines, unknown)
    }
}
