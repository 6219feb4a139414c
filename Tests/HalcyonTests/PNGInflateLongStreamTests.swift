import Foundation
@testable import Halcyon
import Testing

/// A zlib stream of three dynamic blocks whose last two start past the first 32 KiB of output, where every distance
/// code of the shrinking loader's inflater is within reach: 33,000 literals; then literals
/// and length/distance pairs of every length and distance symbol with their extra bits; then literals under a
/// distance code of the given lengths. Every byte is 0-4, so any copy of earlier bytes is a valid filter type.
enum LongDeflate {
    static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
                               4097, 6145, 8193, 12289, 16385, 24577]
    static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    /// A complete literal/length code of all 286 symbols (0-225 in 8 bits, the rest in 9) and a complete distance
    /// code of all 30 (two in 4 bits, the rest in 5).
    static let literals = [Int](repeating: 8, count: 226) + [Int](repeating: 9, count: 60)
    static let distances = [4, 4] + [Int](repeating: 5, count: 28)

    /// The stream's deflate bits and the bytes they inflate to, `count` of them.
    static func stream(count: Int, distanceLengths: [Int]) -> (bits: DeflateBits, raw: [UInt8]) {
        var bits = DeflateBits()
        var raw: [UInt8] = []
        var seed: UInt32 = 11
        func literal(_ codes: [UInt64], _ lengths: [Int]) {
            seed = seed &* 1_103_515_245 &+ 12345
            let byte = Int(seed >> 16) % 5
            raw.append(UInt8(byte))
            bits.code(codes[byte], lengths[byte])
        }
        let codes = DynamicDeflate.canonical(literals), distanceCodes = DynamicDeflate.canonical(distances)
        DynamicDeflate.header(&bits, literals: literals, distances: distances, final: false)
        while raw.count < 33_000 { literal(codes, literals) }
        bits.code(codes[256], literals[256])
        DynamicDeflate.header(&bits, literals: literals, distances: distances, final: false)
        var pair = 0
        while raw.count < count - 4_000 {
            literal(codes, literals)
            let symbol = pair % 29, code = (pair * 7) % 30
            let extra = pair % (1 << lengthExtra[symbol]), distanceExtraBits = (pair * 13) % (1 << distanceExtra[code])
            let length = lengthBase[symbol] + extra, distance = distanceBase[code] + distanceExtraBits
            bits.code(codes[257 + symbol], literals[257 + symbol])
            bits.put(UInt64(extra), lengthExtra[symbol])
            bits.code(distanceCodes[code], distances[code])
            bits.put(UInt64(distanceExtraBits), distanceExtra[code])
            for _ in 0..<length { raw.append(raw[raw.count - distance]) }
            pair += 1
        }
        bits.code(codes[256], literals[256])
        let last = [Int](repeating: 8, count: 254) + [9, 9, 9, 9]
        let lastCodes = DynamicDeflate.canonical(last)
        DynamicDeflate.header(&bits, literals: last, distances: distanceLengths, final: true)
        while raw.count < count { literal(lastCodes, last) }
        bits.code(lastCodes[256], last[256])
        return (bits, raw)
    }

    /// A 160×120 RGB PNG whose image data is such a stream, every CRC right.
    static func png(distanceLengths: [Int]) -> Data {
        let (width, height) = (160, 120)
        let (bits, raw) = stream(count: height * (1 + width * 3), distanceLengths: distanceLengths)
        let plain = PNGFile.make(pixels: [UInt8](repeating: 0, count: width * height * 3), width: width, height: height, bands: 3)
        let header = PNGFile.chunks(of: plain).first { $0.type == "IHDR" }?.body ?? []
        let file = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + PNGFile.chunk("IHDR", header)
            + PNGFile.chunk("IDAT", DynamicDeflate.wrapped(bits, raw: raw)) + PNGFile.chunk("IEND", [])
        return Data(file)
    }
}

/// The shrinking loader's inflater reads blocks that start past the first 32 KiB as zlib reads them: lengths and
/// distances of every symbol with their extra bits, and the next block's header where zlib finds it.
@Suite("PNG inflate agreement past the first window")
struct PNGInflateLongStreamTests {
    @Test("a stream of pairs of every length and distance symbol, then a complete distance code, takes the loader")
    func completeCodeTakesLoader() throws {
        let png = LongDeflate.png(distanceLengths: [1, 1])
        let (image, fast) = try PNGShrinkLoaderTests.decodeCounting(png, side: 160)
        #expect(fast, "the shrinking loader took a valid stream")
        #expect(try image.rgbaPixels() == ImageDecoder.decode(png).rgbaPixels())
    }

    @Test("an incomplete distance code in a block past the first window is left to libvips",
          arguments: [[2, 2], [2], [3, 3, 3]])
    func incompleteCodeGoesToLibvips(lengths: [Int]) throws {
        let png = LongDeflate.png(distanceLengths: lengths)
        PNGShrinkLoaderTests.expectLeftToLibvips(png, side: 80, "the shrinking loader took a stream zlib refuses")
    }
}
