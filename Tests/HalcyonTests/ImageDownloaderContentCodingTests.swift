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
            default: return RawHTTPOrigin.answer("HTTP/1.1 404 Not Found")
            }
        }
    }

    @Test("gzip, x-gzip and deflate are decoded, in any case and with identity listed around them")
    func decodable() async throws {
        let png = try TestImages.encodedGradient(.png(), width: 40, height: 30)
        let origin = try await Self.origin(png: png)
        let downloader = ImageDownloader(name: "codings")
        downloader.downloadTimeout = 5
        for path in ["/x-gzip", "/upper", "/listed", "/two-fields", "/deflate", "/identity", "/redirect"] {
            do {
                let result = try await downloader.downloadImage(with: origin.url(path))
                #expect(result.originalData == png, "\(path)")
                #expect(result.image.size == CGSize(width: 40, height: 30), "\(path)")
            } catch {
                Issue.record("\(path): \(error)")
            }
        }
        await downloader.shutdown()
        await origin.shutdown()
    }

    @Test("A coding the client cannot decode, or two stacked, is unsupportedContentEncoding naming it")
    func undecodable() async throws {
        let png = try TestImages.encodedGradient(.png(), width: 40, height: 30)
        let origin = try await Self.origin(png: png)
        let downloader = ImageDownloader(name: "codings")
        downloader.downloadTimeout = 5
        for (path, named) in [("/br", "br"), ("/zstd", "zstd"), ("/stacked", "gzip, gzip")] {
            do {
                _ = try await downloader.downloadImage(with: origin.url(path))
                Issue.record("\(path): decoded")
            } catch {
                guard case .responseError(.unsupportedContentEncoding(let url, let encoding)) = error else {
                    Issue.record("\(path): expected unsupportedContentEncoding, got \(error)")
                    continue
                }
                #expect(url == origin.url(path) && encoding == named, "\(path): \(encoding)")
            }
        }
        await downloader.shutdown()
        await origin.shutdown()
    }
}
