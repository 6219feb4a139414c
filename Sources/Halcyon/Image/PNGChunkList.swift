/// The chunks of a PNG, in file order, as its chunk headers lay them out (no CRC is checked).
///
/// Empty for bytes that do not start with PNG's signature. The walk goes on while a chunk's 8-byte header is in the
/// buffer, and ends after `IEND` or after a chunk whose declared length runs past the end of the buffer (yielded with
/// ``Chunk/fits`` false), so hostile lengths cannot send it outside the buffer.
struct PNGChunkList: Sequence, IteratorProtocol {
    /// One chunk: where it starts, its declared length and its type.
    struct Chunk {
        /// `IDAT`, as a chunk's four type bytes read big-endian.
        static let imageData: UInt32 = 0x4944_4154
        /// `IEND`.
        static let end: UInt32 = 0x4945_4E44

        /// The offset of the chunk's length field.
        let offset: Int
        /// The declared length of its data.
        let length: Int
        /// Its four type bytes, read big-endian.
        let type: UInt32
        /// Whether its data and CRC are inside the buffer.
        let fits: Bool

        /// The chunk's bytes, from its length field to its CRC.
        var range: Range<Int> { offset..<offset + 12 + length }
    }

    private static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    private let bytes: UnsafeRawBufferPointer
    private var offset: Int

    /// The chunks of `bytes`; the pointer must stay valid while the list is walked.
    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        offset = bytes.count > 8 && bytes.prefix(8).elementsEqual(Self.signature) ? 8 : bytes.count
    }

    /// The data of a chunk that fits.
    func body(of chunk: Chunk) -> Slice<UnsafeRawBufferPointer> {
        bytes[chunk.offset + 8..<chunk.offset + 8 + chunk.length]
    }

    mutating func next() -> Chunk? {
        guard offset + 8 <= bytes.count else { return nil }
        let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        let type = bytes[offset + 4..<offset + 8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let chunk = Chunk(offset: offset, length: length, type: type, fits: offset + 12 + length <= bytes.count)
        offset = chunk.fits && type != Chunk.end ? chunk.range.upperBound : bytes.count
        return chunk
    }
}
