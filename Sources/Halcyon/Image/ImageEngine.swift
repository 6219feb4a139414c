/// The code that runs an image step for which Halcyon has an engine of its own beside libvips'.
///
/// The steps are the Lanczos-3 reduce, the shrinking PNG loader and the PNG encoder (``ImageEngines``).
/// Each of Halcyon's engines takes only the inputs its C capability check accepts; libvips takes every input.
package enum ImageEngine: String, Sendable, CaseIterable {
    /// Halcyon's own C code (`halcyon_reduce.c`, `halcyon_png.c`, `halcyon_pngsave.c`).
    case halcyon
    /// libvips' operation (`vips_resize`, libvips' PNG loader, libvips' `pngsave` through libpng).
    case libvips
}
