import Foundation
@testable import Halcyon
import Testing

/// libpng allocates and zeroes a chunk's declared length before reading it: the decoder cuts a PNG before a chunk
/// (other than image data) that runs past the end of the data.
@Suite struct PNGChunkOverrunTests {
    /// A 48×32 PNG whose chunk list ends in `type` declaring `length` bytes, followed by `tail` bytes only.
    static func overrunning(_ type: String, length: UInt32, tail: Int, beforeImageData: Bool) -> (file: Data, cut: Int) {
        let pixels = PNGShrinkLoaderTests.samples(width: 48, height: 32, bands: 3)
        let whole = PNGFile.make(pixels: pixels, width: 48, height: 32, bands: 3)
        // Without IEND; before the image data, right after IHDR (8 + 25 bytes).
        let prefix = beforeImageData ? whole.prefix(33) : whole.prefix(whole.count - 12)
        let header = PNGFile.be32(Int(length)) + Array(type.utf8)
        return (prefix + Data(header + [UInt8](repeating: 0x61, count: tail)), prefix.count)
    }

    /// The process's peak resident memory, in bytes.
    static func peakResidentBytes() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss * 1024
    }

    @Test("a text chunk declaring 2 GB in a 2 KB file is cut before libvips reads it: a corrupt PNG, no 2 GB allocation")
    func hugeDeclaredTextChunk() throws {
        let (file, cut) = Self.overrunning("tEXt", length: 0x7FFF_0000, tail: 40, beforeImageData: true)
        #expect(file.count < 2_048)
        #expect(PNGChunkOverrun.cut(file) == file.prefix(cut))
        let before = Self.peakResidentBytes()
        #expect {
            _ = try ImageDecoder.decode(file)
        } throws: { error in
            guard case .processorError(reason: .corruptData(format: .png, _))? = error as? HalcyonError else { return false }
            return true
        }
        let grown = Self.peakResidentBytes() - before
        #expect(grown < 1 << 30, "the peak resident memory grew by \(grown >> 20) MiB")
    }

    @Test("chunks that fit are left alone; truncated image data is left to the decoder's fail-on level", arguments: [
        ("whole file", false), ("IDAT past the end", true),
    ])
    func othersAreKept(name: String, truncatedImageData: Bool) throws {
        let pixels = PNGShrinkLoaderTests.samples(width: 48, height: 32, bands: 3)
        let whole = PNGFile.make(pixels: pixels, width: 48, height: 32, bands: 3, extra: [("tEXt", Array("Title\0kept".utf8))])
        let file = truncatedImageData ? whole.prefix(whole.count - 200) : whole
        #expect(PNGChunkOverrun.cut(file) == nil, "\(name)")
        let after = Self.overrunning("zTXt", length: 5_000, tail: 100, beforeImageData: false)
        #expect(PNGChunkOverrun.cut(after.file) == after.file.prefix(after.cut), "a chunk after the image data is cut too")
    }
}
