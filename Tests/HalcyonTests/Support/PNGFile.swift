import Foundation

/// PNG files put together byte by byte, for the shrinking PNG loader's tests:
/// any row filter on any row, the image data split over IDAT chunks of any
/// size, extra chunks; the deflate stream is written as stored blocks.
enum PNGFile {
    /// A PNG of `pixels` (8-bit samples, `bands` 1 to 4, or 16-bit ones, two bytes big-endian, with `depth` 16).
    ///
    /// With `streamRows`, the image data holds that many rows of `pixels` instead of `height`.
    static func make(
        pixels: [UInt8], width: Int, height: Int, bands: Int, depth: Int = 8, filters: [UInt8] = [0],
        idatSize: Int = 1 << 20, extra: [(type: String, body: [UInt8])] = [], streamRows: Int? = nil
    ) -> Data {
        let colourType: UInt8 = [1: 0, 2: 4, 3: 2, 4: 6][bands] ?? 2
        let header = be32(width) + be32(height) + [UInt8(depth), colourType, 0, 0, 0]
        let rowBytes = width * bands * depth / 8
        let raw = filtered(pixels, rowBytes: rowBytes, height: streamRows ?? height, bytesPerPixel: max(1, bands * depth / 8), filters: filters)
        return assemble(header: header, extra: extra, stream: zlibStored(raw), idatSize: idatSize)
    }

    /// The same PNG with its image data in IDAT chunks of `idatSize` bytes and `extra` chunks before them.
    static func rechunked(_ png: Data, idatSize: Int, extra: [(type: String, body: [UInt8])] = []) -> Data {
        let all = chunks(of: png)
        let header = all.first { $0.type == "IHDR" }?.body ?? []
        let stream = all.filter { $0.type == "IDAT" }.flatMap(\.body)
        return assemble(header: header, extra: extra, stream: stream, idatSize: idatSize)
    }

    /// Every chunk of `png`, in order.
    static func chunks(of png: Data) -> [(type: String, body: [UInt8])] {
        let bytes = [UInt8](png)
        var result: [(type: String, body: [UInt8])] = []
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            result.append((type, Array(bytes[offset + 8..<min(bytes.count, offset + 8 + length)])))
            offset += 12 + length
        }
        return result
    }

    /// `png` with the body of its first chunk of `type` (its last with `last`) changed by `change`. The CRC is
    /// made right again, unless `keepingCRC` leaves the old one (a damaged chunk).
    static func changing(
        _ png: Data, chunk type: String, last: Bool = false, keepingCRC: Bool = false, _ change: (inout [UInt8]) -> Void
    ) -> Data {
        let all = chunks(of: png)
        let indices = all.indices.filter { all[$0].type == type }
        let target = last ? indices.last : indices.first
        var file: [UInt8] = Array(png.prefix(8))
        for (index, (name, body)) in all.enumerated() {
            guard index == target else {
                file += chunk(name, body)
                continue
            }
            var changed = body
            change(&changed)
            let typed = Array(name.utf8) + changed
            let crc = TestImages.crc32(keepingCRC ? Array(name.utf8) + body : typed)
            file += be32(changed.count) + typed + be32(Int(crc))
        }
        return Data(file)
    }

    /// One chunk: length, type, body, CRC.
    static func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + body
        return be32(body.count) + typed + be32(Int(TestImages.crc32(typed)))
    }

    /// The rows of `pixels`, each behind its filter byte; row `y` takes `filters[y % filters.count]`.
    static func filtered(_ pixels: [UInt8], rowBytes: Int, height: Int, bytesPerPixel bpp: Int, filters: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((rowBytes + 1) * height)
        for y in 0..<height {
            let filter = filters[y % filters.count]
            out.append(filter)
            for i in 0..<rowBytes {
                let value = Int(pixels[y * rowBytes + i])
                let left = i >= bpp ? Int(pixels[y * rowBytes + i - bpp]) : 0
                let up = y > 0 ? Int(pixels[(y - 1) * rowBytes + i]) : 0
                let corner = y > 0 && i >= bpp ? Int(pixels[(y - 1) * rowBytes + i - bpp]) : 0
                let predicted: Int
                switch filter {
                case 1: predicted = left
                case 2: predicted = up
                case 3: predicted = (left + up) / 2
                case 4: predicted = paeth(left, up, corner)
                default: predicted = 0
                }
                out.append(UInt8(truncatingIfNeeded: value - predicted))
            }
        }
        return out
    }

    /// A zlib stream of `1 + 258 × runs` zero bytes in fixed-Huffman deflate: a literal 0, then `runs` copies of
    /// "258 bytes from 1 back" at 13 bits each (about 1:160), the way a decompression bomb is made.
    static func zlibZeros(runs: Int) -> [UInt8] {
        var stream = DeflateBits()
        stream.put(1, 1)  // final block
        stream.put(1, 2)  // fixed Huffman codes
        stream.code(0x30, 8)  // literal 0
        for _ in 0..<runs {
            stream.code(0xC5, 8)  // length 258 (symbol 285)
            stream.code(0, 5)  // distance 1
        }
        stream.code(0, 7)  // end of block (symbol 256)
        return [0x78, 0x01] + stream.finished() + be32(((1 + 258 * runs) % 65521) << 16 | 1)  // Adler-32 of zeros
    }

    /// Like ``zlibZeros(runs:)`` but with a dynamic Huffman block whose codes for "258 bytes" and "from 1 back"
    /// are one bit each: 2 bits per 258 zeros, about 1:1000, the densest deflate allows.
    static func zlibZerosDense(runs: Int) -> [UInt8] {
        var stream = DeflateBits()
        stream.put(1, 1)  // final block
        stream.put(2, 2)  // dynamic Huffman codes
        stream.put(29, 5)  // 286 literal/length code lengths
        stream.put(0, 5)  // 1 distance code length
        stream.put(14, 4)  // 18 code-length code lengths, in the format's order 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, ...
        for length in [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2] { stream.put(UInt64(length), 3) }
        // Code-length codes: 18 is "0", 1 is "10", 2 is "11". Lengths: literal 0 and end of block 2 bits, 285 and
        // distance 0 one bit.
        stream.code(0b11, 2)  // literal 0: 2
        stream.code(0, 1); stream.put(138 - 11, 7)  // literals 1-138: 0
        stream.code(0, 1); stream.put(117 - 11, 7)  // literals 139-255: 0
        stream.code(0b11, 2)  // end of block: 2
        stream.code(0, 1); stream.put(28 - 11, 7)  // lengths 257-284: 0
        stream.code(0b10, 2)  // length 258 (285): 1
        stream.code(0b10, 2)  // distance 1 (0): 1
        // Literal/length codes: 285 is "0", literal 0 is "10", end of block "11"; distance 1 is "0".
        stream.code(0b10, 2)
        for _ in 0..<runs {
            stream.code(0, 1)
            stream.code(0, 1)
        }
        stream.code(0b11, 2)
        return [0x78, 0x01] + stream.finished() + be32(((1 + 258 * runs) % 65521) << 16 | 1)
    }

    /// A gzip member (RFC 1952) of stored deflate blocks, with its CRC-32 and length.
    static func gzipStored(_ raw: [UInt8]) -> [UInt8] {
        let deflate = zlibStored(raw).dropFirst(2).dropLast(4)
        let crc = TestImages.crc32(raw), size = UInt32(truncatingIfNeeded: raw.count)
        func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        return [0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0, 0, 0xFF] + deflate + le32(crc) + le32(size)
    }

    /// A zlib stream of stored (uncompressed) deflate blocks, with its Adler-32.
    static func zlibStored(_ raw: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65_535, raw.count - offset)
            let final: UInt8 = offset + count == raw.count ? 1 : 0
            out += [final, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8(~count >> 8 & 0xFF)]
            out += raw[offset..<offset + count]
            offset += count
        } while offset < raw.count
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in raw {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return out + be32(Int(b << 16 | a))
    }

    private static func assemble(header: [UInt8], extra: [(type: String, body: [UInt8])], stream: [UInt8], idatSize: Int) -> Data {
        var file: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header)
        for (type, body) in extra { file += chunk(type, body) }
        var offset = 0
        repeat {
            let end = min(stream.count, offset + idatSize)
            file += chunk("IDAT", Array(stream[offset..<end]))
            offset = end
        } while offset < stream.count
        return Data(file + chunk("IEND", []))
    }

    private static func paeth(_ left: Int, _ up: Int, _ corner: Int) -> Int {
        let estimate = left + up - corner
        let (dl, du, dc) = (abs(estimate - left), abs(estimate - up), abs(estimate - corner))
        return dl <= du && dl <= dc ? left : du <= dc ? up : corner
    }

    /// `value` as four big-endian bytes.
    static func be32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}

/// Bits of a deflate stream, least significant first, as RFC 1951 packs them.
struct DeflateBits {
    private(set) var bytes: [UInt8] = []
    private var bits: UInt64 = 0
    private var count = 0

    /// Appends the `width` low bits of `value`, least significant first (header fields, extra bits).
    mutating func put(_ value: UInt64, _ width: Int) {
        bits |= value << UInt64(count)
        count += width
        while count >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: bits))
            bits >>= 8
            count -= 8
        }
    }

    /// Appends a Huffman code of `width` bits, most significant first.
    mutating func code(_ value: UInt64, _ width: Int) {
        put((0..<width).reduce(0) { $0 << 1 | (value >> UInt64($1) & 1) }, width)
    }

    /// The bytes, the last one padded with zero bits.
    func finished() -> [UInt8] {
        count > 0 ? bytes + [UInt8(truncatingIfNeeded: bits)] : bytes
    }
}
