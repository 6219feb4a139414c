import Foundation
@testable import Halcyon
import Testing

/// A zlib stream of one dynamic deflate block holding `raw` as literals, whose distance code has the given code
/// lengths (no distance is ever used): literals 0-253 take 8 bits; 254, 255, end-of-block and length 257 take 9.
enum DynamicDeflate {
    /// The canonical codes (RFC 1951, 3.2.2) of `lengths`.
    static func canonical(_ lengths: [Int]) -> [UInt64] {
        let longest = lengths.max() ?? 0
        var counts = [Int](repeating: 0, count: longest + 1)
        for length in lengths where length > 0 { counts[length] += 1 }
        var next = [UInt64](repeating: 0, count: longest + 2)
        var code: UInt64 = 0
        for bits in 1...max(1, longest) {
            code = (code + UInt64(bits > 1 ? counts[bits - 1] : 0)) << 1
            next[bits] = code
        }
        return lengths.map { length in
            guard length > 0 else { return 0 }
            defer { next[length] += 1 }
            return next[length]
        }
    }

    /// Appends a dynamic block's header: its two codes' lengths under a complete code-length code over the lengths
    /// used (of n values, 2^L - n take L - 1 bits, the rest L), each length sent as itself.
    static func header(_ bits: inout DeflateBits, literals: [Int], distances: [Int], final: Bool) {
        let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
        let used = Set(literals + distances).sorted()
        let longest = (1...4).first { 1 << $0 >= used.count } ?? 4
        var lengthCode = [Int](repeating: 0, count: 19)
        for (index, symbol) in used.enumerated() { lengthCode[symbol] = index < (1 << longest) - used.count ? longest - 1 : longest }
        let sent = (order.lastIndex { lengthCode[$0] > 0 } ?? 3) + 1
        bits.put(final ? 1 : 0, 1)
        bits.put(2, 2)  // dynamic Huffman codes
        bits.put(UInt64(literals.count - 257), 5)
        bits.put(UInt64(distances.count - 1), 5)
        bits.put(UInt64(sent - 4), 4)
        for index in 0..<sent { bits.put(UInt64(lengthCode[order[index]]), 3) }
        let lengthCodes = canonical(lengthCode)
        for length in literals + distances { bits.code(lengthCodes[length], lengthCode[length]) }
    }

    /// zlib's header, the deflate bits and the Adler-32 of `raw`.
    static func wrapped(_ bits: DeflateBits, raw: [UInt8]) -> [UInt8] {
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in raw {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return [0x78, 0x01] + bits.finished() + PNGFile.be32(Int(b << 16 | a))
    }

    /// The zlib stream: header, the block, Adler-32 of `raw`.
    static func zlib(_ raw: [UInt8], distanceLengths: [Int]) -> [UInt8] {
        let literals = [Int](repeating: 8, count: 254) + [9, 9, 9, 9]
        var bits = DeflateBits()
        header(&bits, literals: literals, distances: distanceLengths, final: true)
        let codes = canonical(literals)
        for byte in raw { bits.code(codes[Int(byte)], literals[Int(byte)]) }
        bits.code(codes[256], literals[256])
        return wrapped(bits, raw: raw)
    }

    /// A 64×48 RGB PNG (filter 0 rows) in such a stream, every CRC right.
    static func png(distanceLengths: [Int]) -> (png: Data, pixels: [UInt8]) {
        let (width, height) = (64, 48)
        let pixels = PNGShrinkLoaderTests.samples(width: width, height: height, bands: 3)
        let raw = PNGFile.filtered(pixels, rowBytes: width * 3, height: height, bytesPerPixel: 3, filters: [0])
        let plain = PNGFile.make(pixels: pixels, width: width, height: height, bands: 3)
        let header = PNGFile.chunks(of: plain).first { $0.type == "IHDR" }?.body ?? []
        let file = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + PNGFile.chunk("IHDR", header)
            + PNGFile.chunk("IDAT", zlib(raw, distanceLengths: distanceLengths)) + PNGFile.chunk("IEND", [])
        return (Data(file), pixels)
    }
}

/// The shrinking PNG loader and libvips agree on which deflate streams are damaged: zlib (behind libpng) refuses an
/// incomplete Huffman code that ISA-L takes, so the loader must leave such a stream to libvips.
@Suite("PNG inflate agreement")
struct PNGInflateAgreementTests {
    @Test("a complete distance code (two 1-bit codes) takes the loader and decodes to libvips' pixels")
    func completeCodeTakesLoader() throws {
        let (png, _) = DynamicDeflate.png(distanceLengths: [1, 1])
        let (image, fast) = try PNGShrinkLoaderTests.decodeCounting(png, side: 40)
        #expect(fast, "the shrinking loader took a valid dynamic block")
        #expect(try image.rgbaPixels() == ImageDecoder.decode(png).rgbaPixels())
    }

    @Test("an incomplete distance code (two 2-bit codes; zlib: invalid distances set) is left to libvips",
          arguments: [[2, 2], [2], [1, 0, 3], [3, 3, 3]])
    func incompleteCodeGoesToLibvips(lengths: [Int]) throws {
        let (png, _) = DynamicDeflate.png(distanceLengths: lengths)
        PNGShrinkLoaderTests.expectLeftToLibvips(png, side: 16, "the shrinking loader took a stream zlib refuses")
    }

    @Test("empty IDAT chunks inside and after the image data are read past (the check once read beyond an empty last one)")
    func emptyIDATChunks() throws {
        let (png, _) = DynamicDeflate.png(distanceLengths: [1, 1])
        let chunks = PNGFile.chunks(of: png)
        let stream = chunks.filter { $0.type == "IDAT" }.flatMap(\.body)
        let middle = stream.count / 2
        var file: [UInt8] = Array(png.prefix(8)) + PNGFile.chunk("IHDR", chunks[0].body)
        file += PNGFile.chunk("IDAT", Array(stream[..<middle])) + PNGFile.chunk("IDAT", []) + PNGFile.chunk("IDAT", Array(stream[middle...]))
        file += PNGFile.chunk("IDAT", [])
        let (image, fast) = try PNGShrinkLoaderTests.decodeCounting(Data(file), side: 40)
        #expect(fast, "the shrinking loader took the file")
        #expect(try image.rgbaPixels() == ImageDecoder.decode(png).rgbaPixels())
    }

    @Test("the server answers the same for the stream whether a resize (the loader's path) or a plain re-encode asks")
    func serverPathsAgree() async throws {
        let (png, _) = DynamicDeflate.png(distanceLengths: [2, 2])
        let fixture = try await ServerFixture.start(image: png)
        defer { Task { await fixture.stop() } }
        let resized = try await fixture.get(fixture.signedPath("rs:fit:2:12", source: fixture.source("/image/incomplete")))
        let plain = try await fixture.get(fixture.signedPath("q:90", source: fixture.source("/image/incomplete")))
        #expect(resized.status == plain.status && resized.errorCode == plain.errorCode,
                "rs:fit:2:12 \(resized.status) \(resized.errorCode ?? "") vs q:90 \(plain.status) \(plain.errorCode ?? "")")
        #expect(plain.status == 422 && plain.errorCode == "corrupt_image", "\(plain.status) \(plain.errorCode ?? "")")
        await fixture.stop()
    }
}
