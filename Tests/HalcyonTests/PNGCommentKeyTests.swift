import Foundation
@testable import Halcyon
import Testing

/// A source's PNG text whose keyword PNG cannot carry (libvips keeps it as `png-comment-N-KEY`) is dropped when
/// the image is encoded as PNG again; before, libvips' saver failed the whole encode ("bad png comment key").
@Suite("PNG comment keys on encode")
struct PNGCommentKeyTests {
    /// Keywords libpng refuses or libvips' saver cannot name: empty, a space, a control character, 80 bytes.
    static let badKeys: [[UInt8]] = [[], [0x20], [0x01], [UInt8](repeating: 0x6B, count: 80)]

    /// An 8×6 RGB PNG with a tEXt chunk of keyword `key`, then one `Title` = `kept`.
    static func png(key: [UInt8]) -> Data {
        let pixels = (0..<(8 * 6 * 3)).map { UInt8($0 * 5 % 256) }
        return PNGFile.make(pixels: pixels, width: 8, height: 6, bands: 3, extra: [
            ("tEXt", key + [0] + Array("dropped".utf8)), ("tEXt", Array("Title".utf8) + [0] + Array("kept".utf8)),
        ])
    }

    /// The text chunks of `png`, as keyword and the rest of the body.
    static func textChunks(_ png: Data) -> [(key: String, body: [UInt8])] {
        PNGFile.chunks(of: png).filter { ["tEXt", "zTXt", "iTXt"].contains($0.type) }.map { chunk in
            let nul = chunk.body.firstIndex(of: 0) ?? chunk.body.endIndex
            return (String(decoding: chunk.body[..<nul], as: UTF8.self), Array(chunk.body[nul...]))
        }
    }

    @Test("text with a keyword PNG cannot carry is dropped; the rest is written", arguments: badKeys)
    func unwritableKeyDropped(key: [UInt8]) throws {
        let source = try ImageDecoder.decode(Self.png(key: key))
        #expect(source.vips.stringField("png-comment-1-Title") == "kept", "libvips read both comments")
        let encoded = try ImageEncoder.encode(source, as: .png())
        let texts = Self.textChunks(encoded)
        #expect(texts.map(\.key) == ["Title"], "\(key.count)-byte key: \(texts.map(\.key))")
        let again = try ImageDecoder.decode(encoded)
        #expect(again.width == 8 && again.height == 6)
        #expect(try again.rgbaPixels() == source.rgbaPixels())
    }

    @Test("halcyon process on a PNG with an empty text keyword writes the image and exits 0")
    func processExitsZero() async throws {
        let scratch = try CLIExitCodeTests.scratch(with: ["empty-key.png": Self.png(key: [])])
        defer { scratch.remove() }
        try FileManager.default.createDirectory(at: scratch.output, withIntermediateDirectories: true)
        let output = scratch.output.appendingPathComponent("o.png")
        let run = try await CLIRun.run(["process", scratch.root.appendingPathComponent("empty-key.png").path, output.path],
                                       cacheHome: scratch.cache)
        #expect(run.exitCode == 0, "\(run.stderr)")
        let written = try Data(contentsOf: output)
        #expect(Self.textChunks(written).map(\.key) == ["Title"])
        #expect(try ImageDecoder.decode(written).width == 8)
    }
}
