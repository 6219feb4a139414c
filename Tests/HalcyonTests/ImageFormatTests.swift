import Foundation
import Testing
@testable import Halcyon

@Suite("ImageFormat")
struct ImageFormatTests {
    @Test("sniffs the formats Halcyon writes from their encoded bytes")
    func sniffsEncodedFormats() throws {
        var encodings: [ImageEncodingFormat] = [.jpeg(), .png(), .gif, .webp(), .tiff]
        if ImageEncodingFormat.avif().isAvailable { encodings.append(.avif()) }
        for encoding in encodings {
            let data = try TestImages.encodedGradient(encoding, width: 16, height: 16)
            #expect(ImageFormat(sniffing: data) == encoding.format, "\(encoding)")
        }
    }

    @Test("sniffs HEIC, BMP and both TIFF byte orders from their signatures")
    func sniffsSignatures() {
        let heic = Data([0, 0, 0, 24] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8))
        #expect(ImageFormat(sniffing: heic) == .heic)
        let avifByCompatibleBrand = Data([0, 0, 0, 28] + Array("ftypmif1".utf8) + [0, 0, 0, 0] + Array("mif1avifmiaf".utf8))
        #expect(ImageFormat(sniffing: avifByCompatibleBrand) == .avif)
        #expect(ImageFormat(sniffing: Data(Array("BM".utf8) + [UInt8](repeating: 0, count: 30))) == .bmp)
        #expect(ImageFormat(sniffing: Data([0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0])) == .tiff)
        #expect(ImageFormat(sniffing: Data([0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8])) == .tiff)
    }

    @Test("unknown, empty and too-short data sniff as unknown")
    func unknownData() {
        #expect(ImageFormat(sniffing: Data()) == .unknown)
        #expect(ImageFormat(sniffing: Data([0xFF, 0xD8])) == .unknown)
        #expect(ImageFormat(sniffing: Data("<html>not an image</html>".utf8)) == .unknown)
        #expect(ImageFormat(sniffing: Data(Array("RIFF....WAVE".utf8))) == .unknown)
    }

    @Test("MIME types and file extensions")
    func mimeAndExtension() {
        #expect(ImageFormat.jpeg.mimeType == "image/jpeg")
        #expect(ImageFormat.jpeg.fileExtension == "jpg")
        #expect(ImageFormat.webp.mimeType == "image/webp")
        #expect(ImageFormat.avif.fileExtension == "avif")
        #expect(ImageFormat.unknown.mimeType == "application/octet-stream")
        #expect(ImageFormat.unknown.fileExtension == "")
        #expect(ImageFormat(fileExtension: "JPEG") == .jpeg)
        #expect(ImageFormat(fileExtension: "tif") == .tiff)
        #expect(ImageFormat(fileExtension: "txt") == nil)
    }
}
