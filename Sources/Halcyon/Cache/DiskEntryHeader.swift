import Foundation

/// The header at the front of every disk cache entry file, and its binary form.
///
/// Layout, little-endian, in a 64-byte preamble followed by the metadata and
/// then the payload:
///
/// | offset | size | field |
/// |-------:|-----:|-------|
/// | 0  | 4 | magic `HLCY` |
/// | 4  | 2 | format version (1) |
/// | 6  | 2 | reserved, 0 |
/// | 8  | 4 | metadata length |
/// | 12 | 4 | reserved, 0 |
/// | 16 | 8 | payload length |
/// | 24 | 8 | stored date, seconds since 1970 as a `Double` bit pattern |
/// | 32 | 8 | expiration date, same encoding |
/// | 40 | 8 | XXH64 of the payload |
/// | 48 | 8 | XXH64 of the preamble (this field zeroed) and the metadata |
/// | 56 | 8 | sliding lifetime in seconds as a `Double` bit pattern; 0 for a fixed date |
///
/// The metadata is five optional UTF-8 strings (original key, content type,
/// ETag, Last-Modified, Cache-Control), each a 4-byte length (`0xFFFFFFFF` for
/// absent) and its bytes. An entry is valid only if the file is exactly
/// `64 + metadata length + payload length` bytes and both hashes match, so a
/// truncated, extended, torn or bit-flipped file is always detected.
struct DiskEntryHeader: Sendable, Equatable {
    static let preambleSize = 64
    static let magic: UInt32 = 0x5943_4C48  // "HLCY" read as little-endian
    static let version: UInt16 = 1
    /// Largest metadata block accepted when reading, to refuse absurd lengths before allocating.
    static let maxMetadataLength = 16 << 20

    var metadata: CacheEntryMetadata
    var payloadLength: Int
    var storedDate: Date
    var expirationDate: Date
    var payloadHash: UInt64
    /// Seconds a read with `.cacheTime` extends the entry by; 0 when the expiration is a fixed date or never.
    var lifetime: TimeInterval

    /// Why bytes are not a valid entry.
    enum Defect: Error, Equatable, CustomStringConvertible {
        case tooShort(size: Int)
        case badMagic
        case unsupportedVersion(UInt16)
        case sizeMismatch(expected: Int, actual: Int)
        case headerChecksumMismatch
        case payloadChecksumMismatch
        case badMetadata

        var description: String {
            switch self {
            case .tooShort(let size): return "file of \(size) bytes is shorter than the \(DiskEntryHeader.preambleSize)-byte header"
            case .badMagic: return "not a Halcyon cache entry (bad magic)"
            case .unsupportedVersion(let version): return "unsupported entry format version \(version)"
            case .sizeMismatch(let expected, let actual): return "entry should be \(expected) bytes but the file has \(actual) (truncated or extended)"
            case .headerChecksumMismatch: return "header checksum mismatch"
            case .payloadChecksumMismatch: return "payload checksum mismatch"
            case .badMetadata: return "metadata block is malformed"
            }
        }
    }

    // MARK: - Encoding

    /// The preamble and metadata bytes to write in front of the payload.
    func encoded() -> [UInt8] {
        let metadataBytes = Self.encodeMetadata(metadata)
        var bytes = [UInt8](repeating: 0, count: Self.preambleSize)
        bytes.reserveCapacity(Self.preambleSize + metadataBytes.count)
        Self.writePreamble(into: &bytes, metadataLength: metadataBytes.count, header: self)
        bytes.append(contentsOf: metadataBytes)
        let headerHash = bytes.withUnsafeBytes { EntryChecksum.hash($0) }
        Self.put(headerHash, into: &bytes, at: 48)
        return bytes
    }

    /// The 64-byte preamble for this header, whose metadata encodes to `metadataBytes`.
    ///
    /// Used to re-date an entry in place: only the dates and header hash change.
    func encodedPreamble(metadataBytes: UnsafeRawBufferPointer) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.preambleSize)
        Self.writePreamble(into: &bytes, metadataLength: metadataBytes.count, header: self)
        let headerHash = bytes.withUnsafeBytes { EntryChecksum.hash($0, metadataBytes) }
        Self.put(headerHash, into: &bytes, at: 48)
        return bytes
    }

    private static func writePreamble(into bytes: inout [UInt8], metadataLength: Int, header: DiskEntryHeader) {
        put(magic, into: &bytes, at: 0)
        put(version, into: &bytes, at: 4)
        put(UInt32(truncatingIfNeeded: metadataLength), into: &bytes, at: 8)
        put(UInt64(header.payloadLength), into: &bytes, at: 16)
        put(header.storedDate.timeIntervalSince1970.bitPattern, into: &bytes, at: 24)
        put(header.expirationDate.timeIntervalSince1970.bitPattern, into: &bytes, at: 32)
        put(header.payloadHash, into: &bytes, at: 40)
        put(header.lifetime.bitPattern, into: &bytes, at: 56)
    }

    private static func put<I: FixedWidthInteger>(_ value: I, into bytes: inout [UInt8], at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for (index, byte) in raw.enumerated() { bytes[offset + index] = byte }
        }
    }

    static func encodeMetadata(_ metadata: CacheEntryMetadata) -> [UInt8] {
        var bytes: [UInt8] = []
        for field in [metadata.originalKey, metadata.contentType, metadata.etag, metadata.lastModified, metadata.cacheControl] {
            guard let field else {
                bytes.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF])
                continue
            }
            let utf8 = Array(field.utf8)
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: utf8)
        }
        return bytes
    }

    // MARK: - Decoding

    /// The lengths a preamble announces, checked against the file size; no hash is checked yet.
    struct Layout {
        var metadataLength: Int
        var payloadLength: Int
        var headerLength: Int { DiskEntryHeader.preambleSize + metadataLength }
    }

    /// Reads the lengths from `preamble` (at least 64 bytes) and checks them against `fileSize`.
    static func layout(of preamble: UnsafeRawBufferPointer, fileSize: Int) throws(Defect) -> Layout {
        guard fileSize >= preambleSize, preamble.count >= preambleSize else { throw .tooShort(size: fileSize) }
        guard load(UInt32.self, preamble, 0) == magic else { throw .badMagic }
        let version = load(UInt16.self, preamble, 4)
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let metadataLength = Int(load(UInt32.self, preamble, 8))
        let rawPayloadLength = load(UInt64.self, preamble, 16)
        guard metadataLength <= maxMetadataLength, rawPayloadLength <= UInt64(Int.max / 2) else {
            throw .sizeMismatch(expected: Int.max, actual: fileSize)
        }
        let payloadLength = Int(rawPayloadLength)
        let expected = preambleSize + metadataLength + payloadLength
        guard expected == fileSize else { throw .sizeMismatch(expected: expected, actual: fileSize) }
        return Layout(metadataLength: metadataLength, payloadLength: payloadLength)
    }

    /// Parses and verifies the header in `bytes` (preamble plus metadata, at least `layout.headerLength` bytes).
    ///
    /// Checks the header hash; the payload hash is returned for the caller to
    /// check. Without `decodingMetadata` the metadata strings are left empty
    /// (they are still covered by the hash), which saves allocations on hits.
    static func decode(_ bytes: UnsafeRawBufferPointer, layout: Layout, decodingMetadata: Bool = true) throws(Defect) -> DiskEntryHeader {
        guard bytes.count >= layout.headerLength else { throw .tooShort(size: bytes.count) }
        let stored = load(UInt64.self, bytes, 48)
        let metadataBytes = UnsafeRawBufferPointer(rebasing: bytes[preambleSize..<layout.headerLength])
        var state = EntryChecksum.State()
        state.update(UnsafeRawBufferPointer(rebasing: bytes[0..<48]))
        withUnsafeBytes(of: UInt64(0)) { state.update($0) }
        state.update(UnsafeRawBufferPointer(rebasing: bytes[56..<layout.headerLength]))
        guard state.finish() == stored else { throw .headerChecksumMismatch }
        let metadata = decodingMetadata ? try decodeMetadata(metadataBytes) : CacheEntryMetadata()
        return DiskEntryHeader(
            metadata: metadata,
            payloadLength: layout.payloadLength,
            storedDate: Date(timeIntervalSince1970: Double(bitPattern: load(UInt64.self, bytes, 24))),
            expirationDate: Date(timeIntervalSince1970: Double(bitPattern: load(UInt64.self, bytes, 32))),
            payloadHash: load(UInt64.self, bytes, 40),
            lifetime: Double(bitPattern: load(UInt64.self, bytes, 56)))
    }

    private static func decodeMetadata(_ bytes: UnsafeRawBufferPointer) throws(Defect) -> CacheEntryMetadata {
        var offset = 0
        var fields: [String?] = []
        for _ in 0..<5 {
            guard bytes.count - offset >= 4 else { throw .badMetadata }
            let length = load(UInt32.self, bytes, offset)
            offset += 4
            if length == 0xFFFF_FFFF {
                fields.append(nil)
                continue
            }
            let count = Int(length)
            guard bytes.count - offset >= count else { throw .badMetadata }
            guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]), as: UTF8.self) else {
                throw .badMetadata
            }
            fields.append(text)
            offset += count
        }
        guard offset == bytes.count else { throw .badMetadata }
        return CacheEntryMetadata(originalKey: fields[0], contentType: fields[1], etag: fields[2],
                                  lastModified: fields[3], cacheControl: fields[4])
    }

    private static func load<I: FixedWidthInteger>(_ type: I.Type, _ bytes: UnsafeRawBufferPointer, _ offset: Int) -> I {
        I(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: I.self))
    }
}
