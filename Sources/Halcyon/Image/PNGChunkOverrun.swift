import Foundation

/// Cuts a PNG before a chunk whose declared length runs past the end of the data.
///
/// libpng allocates and zeroes a chunk's declared length before it reads the chunk's bytes, up to 2 GiB for a text,
/// profile or EXIF chunk: a 250-byte file that declares a 1.9 GB `tEXt` chunk took libvips' header read 1.9 GB of
/// memory and 4 s. Such a chunk cannot be read whole, so libpng fails on it anyway ("not enough data"); cut before
/// it, the file fails the same way without the allocation. Image data (`IDAT`) is read in pieces, not allocated by
/// its length, and is left as it is: a truncated image still decodes as far as its fail-on level allows.
enum PNGChunkOverrun {
    /// `png` up to the start of its first chunk other than image data whose length runs past the end; nil when no
    /// chunk does (or it is no PNG).
    static func cut(_ png: Data) -> Data? {
        let overrun = png.withUnsafeBytes { bytes in
            PNGChunkList(bytes).first { !$0.fits && $0.type != PNGChunkList.Chunk.imageData }?.offset
        }
        return overrun.map { png.prefix($0) }
    }
}
