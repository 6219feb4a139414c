import Foundation
@testable import Halcyon
import Testing

/// Bodies in content codings: decoded when the client can (`gzip`, `x-gzip`, `deflate`, with `identity` around
/// them), a typed error naming the coding when it cannot, never undecoded bytes taken for the image.
@Suite("ImageDownloader content codings")
struct ImageDownloaderContentCodingTests {
    /// The origin's answers: the path names the `Content-Encoding`; the body is the PNG in that coding.
    private static func origin(png: Data) async throws -> RawHTTPOrigin {
        let raw = Array(png)
        return try await RawHTTPOrigin.start { path, _ in
            let head = "HTTP/1.1 200 OK\r\nContent-Type: image/png"
            switch path {
            case "/x-gzip": return RawHTTPOrigin.answer(head + "\r\nContent-Encoding: x-gzip", body: Data(PNGFile.gzipStored(raw)))
            case "/upper": return RawHTTPOrigin.answer(head + "\r\nContent-Encoding: GZip", body: Data(PNGFile.gzipStored(raw)))
            case "/listed":
                return RawHTTPOrigin.answer(head + "\r\nContent-Encoding: identity, gzip", body: Data(PNGFile.gzipStored(raw)))
            case "/two-fields":
                return RawHTTPOrigin.answer(head + "\r\nContent-Encoding: identity\r\nContent-Encoding: deflate",
                                            body: Data(PNGFile.zlibStored(raw)))
            case "/deflate": return RawHTTPOrigin.answer(head + "\r\nContent-Encoding: deflate", body: Data(PNGFile.zlibStored(raw)))
            case "/identity": return RawHTTPOrigin.answer(head + "\r\nContent-Encoding: identity", body: png)
            case "/br": return RawHTTPOrigin.answer(head + "\r\nContent-Encoding: br", body: png)
            case "/zstd": return RawHTTPOrigin.answer(head + "\r\nContent-Encoding: zstd", body: png)
            case "/stacked":
                return RawHTTPOrigin.answer(head + "\r\nContent-Encoding: gzip, gzip",
                                            body: Data(PNGFile.gzipStored(PNGFile.gzipStored(raw))))
            case "/redirect":
                return RawHTTPOrigin.answer("HTTP/1.1 302 Found\r\nLocation: /x-gzip\r\nContent-Encoding: br", body: Data("moved".utf8))
            case "/redirect-empty-gzip":
                return RawHTTPOrigin.answer("HTTP/1.1 302 Found\r\nLocation: /x-gzip\r\nContent-Encoding: gzip")
            case "/redirect-broken-deflate":
                return RawHTTPOrigin.answer("HTTP/1.1 301 Moved\r\nLocation: /deflate\r\nContent-Encoding: deflate", body: Data("moved".utf8))
            default: return RawHTTPOrigin.answer("HTTP/1.1 404 Not Found")
            }
        }
    }

    /// Runs `body` with the PNG, its origin and a downloader, and shuts the two down after.
    private static func withOrigin(_ body: (Data, RawHTTPOrigin, ImageDownloader) async throws -> Void) async throws {
        let png = try TestImages.encodedGradient(.png(), width: 40, height: 30)
        let origin = try await Self.origin(png: png)
        try await origin.withDownloader(name: "codings") { downloader in try await body(png, origin, downloader) }
    }

    @Test("a body its coding shrank over 200 times (a flat 3 MB PNG in gzip or deflate) is decoded: only the size limit bounds inflation")
    func highlyCompressedBody() async throws {
        let flat = PNGFile.make(pixels: [UInt8](repeating: 90, count: 1000 * 1000 * 3), width: 1000, height: 1000, bands: 3)
        let gzip = try Gzipped.encode(flat), deflate = try Gzipped.encode(flat, coding: "deflate")
        #expect(flat.count > 200 * gzip.count && flat.count > 200 * deflate.count, "\(flat.count) to \(gzip.count), \(deflate.count)")
        let origin = try await RawHTTPOrigin.start { path, _ in
            RawHTTPOrigin.answer("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Encoding: \(path.dropFirst())",
                                 body: path == "/gzip" ? gzip : deflate)
        }
        try await origin.withDownloader(name: "flat") { downloader in
            for path in ["/gzip", "/deflate"] {
                do {
                    let result = try await downloader.downloadImage(with: origin.url(path))
                    #expect(result.originalData == flat, "\(path)")
                    #expect(result.image.size == CGSize(width: 1000, height: 1000), "\(path)")
                } catch {
                    Issue.record("\(path): \(error)")
                }
            }
        }
    }

    @Test("gzip, x-gzip and deflate are decoded, in any case and with identity listed around them; a redirect's coding is never decoded")
    func decodable() async throws {
        try await Self.withOrigin { png, origin, downloader in
            for path in ["/x-gzip", "/upper", "/listed", "/two-fields", "/deflate", "/identity", "/redirect",
                         "/redirect-empty-gzip", "/redirect-broken-deflate"] {
                do {
                    let result = try await downloader.downloadImage(with: origin.url(path))
                    #expect(result.originalData == png, "\(path)")
                    #expect(result.image.size == CGSize(width: 40, height: 30), "\(path)")
                } catch {
                    Issue.record("\(path): \(error)")
                }
            }
        }
    }

    @Test("A coding the client cannot decode, or two stacked, is unsupportedContentEncoding naming it")
    func undecodable() async throws {
        try await Self.withOrigin { _, origin, downloader in
            for (path, named) in [("/br", "br"), ("/zstd", "zstd"), ("/stacked", "gzip, gzip")] {
                #expect(await Self.refusedEncoding(downloader, origin.url(path)) == named, "\(path)")
            }
        }
    }

    @Test("A body that does not decode in its coding is contentDecodingFailed naming the coding and what was wrong")
    func corrupt() async throws {
        let png = Array(try TestImages.encodedGradient(.png(), width: 40, height: 30))
        let gzip = PNGFile.gzipStored(png), zlib = PNGFile.zlibStored(png)
        var badCRC = gzip
        badCRC[badCRC.count - 6] ^= 0xFF
        let bodies: [String: (coding: String, body: [UInt8], says: String)] = [
            "/not-gzip": ("gzip", png, "corrupt"),
            "/bad-crc": ("x-gzip", badCRC, "corrupt"),
            "/raw-deflate": ("deflate", Array(zlib.dropFirst(2).dropLast(4)), "corrupt"),
            "/two-members": ("gzip", gzip + gzip, "follows the end"),
            "/cut": ("gzip", Array(gzip.prefix(gzip.count / 2)), "ends before"),
        ]
        let origin = try await RawHTTPOrigin.start { path, _ in
            guard let answer = bodies[path] else { return RawHTTPOrigin.answer("HTTP/1.1 404 Not Found") }
            return RawHTTPOrigin.answer("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Encoding: \(answer.coding)",
                                        body: Data(answer.body))
        }
        try await origin.withDownloader(name: "corrupt") { downloader in
            for (path, answer) in bodies.sorted(by: { $0.key < $1.key }) {
                do {
                    _ = try await downloader.downloadImage(with: origin.url(path))
                    Issue.record("\(path): decoded")
                } catch {
                    guard case .responseError(.contentDecodingFailed(_, let coding, let message))? = error as? HalcyonError else {
                        Issue.record("\(path): expected contentDecodingFailed, got \(error)")
                        continue
                    }
                    // x-gzip is named as what it is read as.
                    let named = answer.coding == "x-gzip" ? "gzip" : answer.coding
                    #expect(coding == named && message.contains(answer.says), "\(path): \(coding): \(message)")
                }
            }
        }
    }

    /// The coding an `unsupportedContentEncoding` failure of `url` names; nil, recorded, for a success or another error.
    private static func refusedEncoding(_ downloader: ImageDownloader, _ url: URL) async -> String? {
        do {
            _ = try await downloader.downloadImage(with: url)
            Issue.record("\(url.path): decoded")
        } catch {
            if case .responseError(.unsupportedContentEncoding(let at, let encoding)) = error, at == url { return encoding }
            Issue.record("\(url.path): expected unsupportedContentEncoding, got \(error)")
        }
        return nil
    }
}
