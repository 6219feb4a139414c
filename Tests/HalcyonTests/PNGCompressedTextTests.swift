import Foundation
@testable import Halcyon
import Testing

/// A PNG's compressed text chunks are inflated by libvips with the header, unbounded: past the limits the decoder
/// drops them first.
@Suite struct PNGCompressedTextTests {
    let width = 48
    let height = 32

    private func png(text: [(type: String, body: [UInt8])]) -> (Data, [UInt8]) {
        let pixels = PNGShrinkLoaderTests.samples(width: width, height: height, bands: 3)
        return (PNGFile.make(pixels: pixels, width: width, height: height, bands: 3, extra: text), pixels)
    }

    /// A zTXt chunk under `keyword` whose text inflates to `1 + 258 × runs` zero bytes.
    private func zTXt(_ keyword: String, runs: Int) -> (type: String, body: [UInt8]) {
        ("zTXt", Array(keyword.utf8) + [0, 0] + PNGFile.zlibZeros(runs: runs))
    }

    @Test("compressed text past the limits is dropped before libvips reads it; the pixels stay")
    func bombIsDropped() throws {
        // 40 chunks of about 13 KB, each inflating to 2 MB: 80 MB of text from about 520 KB.
        let chunks = (0..<40).map { zTXt("Bomb\($0)", runs: 8_000) }
        let (bomb, pixels) = png(text: chunks)
        #expect(bomb.count < 600_000 && bomb.count > PNGCompressedText.maxBytes)
        let image = try ImageDecoder.decode(bomb)
        #expect(!image.vips.hasField("png-comment-0-Bomb0"), "the compressed text was read")
        let (plain, _) = png(text: [])
        #expect(try image.rgbaPixels() == ImageDecoder.decode(plain).rgbaPixels())
        #expect(pixels.count == width * height * 3)
        let capped = try #require(PNGCompressedText.capped(bomb))
        #expect(PNGFile.chunks(of: capped).map(\.type) == PNGFile.chunks(of: plain).map(\.type))
    }

    @Test("a little compressed text, and uncompressed text of any size, are kept")
    func smallTextIsKept() throws {
        let uncompressed = (0..<40).map { ("iTXt", Array("Note\($0)".utf8) + [0, 0, 0, 0, 0] + Array(repeating: 0x61, count: 1_000)) }
        let (file, _) = png(text: [zTXt("Small", runs: 40)] + uncompressed.map { (type: $0.0, body: $0.1) })
        #expect(PNGCompressedText.capped(file) == nil)
        let image = try ImageDecoder.decode(file)
        #expect(image.vips.hasField("png-comment-0-Small"), "a small zTXt chunk is metadata as before")
        let many = (0..<(PNGCompressedText.maxChunks + 1)).map { zTXt("Many\($0)", runs: 2) }
        #expect(PNGCompressedText.capped(png(text: many).0) != nil, "more chunks than the limit are dropped too")
    }
}
