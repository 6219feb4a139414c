import Foundation
import Halcyon
import Testing

/// The statuses the downloader takes as the image: 200, and 206 only for a resume it asked for. Another 2xx or a
/// 3xx it does not follow is an invalid status (they were served as the image).
@Suite("Downloader status acceptance")
struct ImageDownloaderStatusTests {
    /// Status lines answered with a PNG body, each on its own path; the 3xx ones also with a `Location`.
    static let refused: [(path: String, head: String)] = [
        ("/201", "HTTP/1.1 201 Created"), ("/203", "HTTP/1.1 203 Non-Authoritative Information"),
        ("/206", "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/100"), ("/226", "HTTP/1.1 226 IM Used"),
        ("/299", "HTTP/1.1 299 Whatever"), ("/300", "HTTP/1.1 300 Multiple Choices"),
        ("/399", "HTTP/1.1 399 Whatever"), ("/300-location", "HTTP/1.1 300 Multiple Choices\r\nLocation: /ok.png"),
        ("/305-location", "HTTP/1.1 305 Use Proxy\r\nLocation: /ok.png"), ("/399-location", "HTTP/1.1 399 Whatever\r\nLocation: /ok.png"),
    ]

    /// A loopback origin answering each path of ``refused`` with its head and `png`, and any other with 200.
    static func origin(png: Data) async throws -> RawHTTPOrigin {
        try await RawHTTPOrigin.start { path, _ in
            let head = refused.first { $0.path == path }?.head ?? "HTTP/1.1 200 OK"
            return RawHTTPOrigin.answer("\(head)\r\nContent-Type: image/png", body: png)
        }
    }

    /// The status in `path`'s name (`/305-location` is 305).
    static func status(of path: String) -> Int { Int(path.dropFirst().prefix(3)) ?? 0 }

    @Test("another 2xx, or a 3xx the downloader does not follow, is invalidHTTPStatusCode; 200 is the image")
    func onlyTwoHundred() async throws {
        let png = try TestImages.encodedGradient(.png(), width: 20, height: 10)
        let origin = try await Self.origin(png: png)
        try await origin.withDownloader(name: "status-acceptance") { downloader in
            for (path, _) in Self.refused {
                do throws(HalcyonError) {
                    let result = try await downloader.downloadData(with: origin.url(path))
                    Issue.record("\(path): taken as the image (\(result.data.count) bytes)")
                } catch {
                    guard case .responseError(.invalidHTTPStatusCode(_, let code)) = error else {
                        Issue.record("\(path): expected invalidHTTPStatusCode, got \(error)")
                        continue
                    }
                    #expect(code == Self.status(of: path), "\(path)")
                }
            }
            let ok = try await downloader.downloadImage(with: origin.url("/ok.png"))
            #expect(ok.image.width == 20)
        }
    }
}
