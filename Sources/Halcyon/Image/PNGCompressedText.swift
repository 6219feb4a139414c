import Foundation

/// Caps the compressed text a PNG may carry into the decoder: zTXt chunks and compressed iTXt chunks.
///
/// libvips inflates every text chunk of a PNG into the image's metadata while it reads the header, with no size
/// limit and no way to stop it: a few hundred KB of such chunks can inflate to gigabytes, a minute of CPU that
/// neither a timeout nor a cancel ends. Past ``maxBytes`` or ``maxChunks`` in all, the file's compressed text
/// chunks are dropped before libvips sees it (the pixels do not change; uncompressed tEXt and iTXt stay).
enum PNGCompressedText {
    /// Most bytes of compressed text chunk data kept.
    static let maxBytes = 16 * 1024
    /// Most compressed text chunks kept.
    static let maxChunks = 16

    /// `png` without its compressed text chunks when they pass the limits; nil when it keeps them (or is no PNG,
    /// or its chunks cannot be walked, which the decoder reports).
    static func capped(_ png: Data) -> Data? {
        png.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Data? in
            guard let drops = compressedChunks(in: bytes) else { return nil }
            var kept = Data(capacity: bytes.count)
            var start = 0
            for drop in drops {
                kept.append(contentsOf: bytes[start..<drop.lowerBound])
                start = drop.upperBound
            }
            kept.append(contentsOf: bytes[start...])
            return kept
        }
    }

    /// The byte ranges of the compressed text chunks when they pass the limits, else nil.
    private static func compressedChunks(in bytes: UnsafeRawBufferPointer) -> [Range<Int>]? {
        let chunks = PNGChunkList(bytes)
        var ranges: [Range<Int>] = []
        var total = 0
        for chunk in chunks {
            guard chunk.fits, chunk.length <= Int(Int32.max) else { break }
            if isCompressedText(chunk.type, body: chunks.body(of: chunk)) {
                ranges.append(chunk.range)
                total += chunk.length
            }
        }
        return total > maxBytes || ranges.count > maxChunks ? ranges : nil
    }

    /// Whether a chunk is zTXt, or iTXt with its compression flag set (the byte after the keyword's NUL).
    private static func isCompressedText(_ type: UInt32, body: Slice<UnsafeRawBufferPointer>) -> Bool {
        if type == 0x7A54_5874 { return true }  // zTXt
        guard type == 0x6954_5874 else { return false }  // iTXt
        guard let nul = body.prefix(80).firstIndex(of: 0), nul + 1 < body.endIndex else { return true }
        return body[nul + 1] != 0
    }
}
