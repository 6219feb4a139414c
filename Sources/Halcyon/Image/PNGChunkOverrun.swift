import Foundation

/// Cuts a PNG before a chunk whose declared length runs past the end of the data.
///
/// libpng allocates and zeroes a chunk's declared length before it reads the chunk's bytes, up to 2 GiB for a text,
/// profile or EXIF chunk: a 250-byte file that declares a 1.9 GB `tEXt` chunk took libvips' header read 1.9 GB of
/// memory and 4 s. Such a chunk cannot be read whole, so libpng fails on it anyway ("not enough data"); cut before
/// it, the file fails the same way without the allocation. Image data (`IDAT`) is read in pieces, not allocated by
/// its length, and is left as it is: a truncated image still decodes as far as its fail-on level allows.
enum PNGChunkOverrun {
    private static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// `png` up to the start of its first chunk other than image data whose length runs past the end; nil when no
    /// chunk does (or it is no PNG).
    static func cut(_ png: Data) -> Data? {
        let end = png.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Int? in overrunningChunk(in: bytes) }
        return end.map { png.prefix($0) }
    }

    /// The offset of the first chunk other than IDAT whose declared length runs past the end, else nil.
    private static func overrunningChunk(in bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count > 8, bytes.prefix(8).elementsEqual(signature) else { return nil }
        var offset = 8
        while offset + 8 <= bytes.count {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = (bytes[offset + 4], bytes[offset + 5], bytes[offset + 6], bytes[offset + 7])
            let isImageData = type == (0x49, 0x44, 0x41, 0x54)  // IDAT
            if offset + 12 + length > bytes.count {
                return isImageData ? nil : offset
            }
            if type == (0x49, 0x45, 0x4E, 0x44) { return nil }  // IEND
            offset += 12 + length
        }
        return nil
    }
}
