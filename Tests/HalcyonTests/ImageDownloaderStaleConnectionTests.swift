import Foundation
@testable import Halcyon
import NIOCore
import Testing

/// A keep-alive connection the origin closes just as the downloader reuses it: the request is sent once more on a
/// new connection when it is idempotent and nothing of an answer arrived, as browsers and URLSession do.
@Suite struct ImageDownloaderStaleConnectionTests {
    /// How downloading `url` ends.
    func outcome(_ downloader: ImageDownloader, _ url: URL, options: DownloadOptions = .default) async -> Result<ImageLoadingResult, HalcyonError> {
        do {
            return .success(try await downloader.downloadImage(with: url, options: options))
        } catch {
            return .failure(error)
        }
    }

    /// An origin answering `answers[path]` to the first request of each connection and closing the connection,
    /// unanswered, on any later request: what an origin whose keep-alive ends at the wrong moment does.
    func origin(_ answers: [String: [UInt8]], requests: CallCounter) async throws -> RawHTTPOrigin {
        try await RawHTTPOrigin.start { path, index in
            requests.increment()
            guard index == 0 else { return nil }
            return answers[path] ?? RawHTTPOrigin.answer("HTTP/1.1 404 Not Found")
        }
    }

    /// Runs `body` with a new downloader (5 s timeout) against `origin`, then shuts both down.
    func run(_ origin: RawHTTPOrigin, _ body: (ImageDownloader) async throws -> Void) async rethrows {
        try await origin.withDownloader(name: "stale", body)
    }

    static let image = RawHTTPOrigin.answer("HTTP/1.1 200 OK\r\nContent-Type: image/png", body: ImageDownloaderTests.png)

    /// A redirect without `Connection: close` leaves its connection pooled; the next hop reuses it and the origin
    /// closes it. Before: 502-like `networkError` (remoteConnectionClosed) for 6 of 40 such requests in `halcyon serve`.
    @Test func redirectHopOnClosedConnectionIsResent() async throws {
        let requests = CallCounter()
        let redirect = RawHTTPOrigin.answer("HTTP/1.1 302 Found\r\nLocation: /image")
        let origin = try await origin(["/start": redirect, "/image": Self.image], requests: requests)
        await run(origin) { downloader in
            let result = await outcome(downloader, origin.url("/start"))
            #expect((try? result.get().originalData) == ImageDownloaderTests.png, "\(result)")
        }
        // The 302, the hop on the closed connection, and the hop sent again.
        #expect(requests.count == 3)
    }

    /// A second download to the same origin reuses the first one's connection, which the origin closes.
    @Test func nextDownloadOnClosedConnectionIsResent() async throws {
        let requests = CallCounter()
        let origin = try await origin(["/a": Self.image, "/b": Self.image], requests: requests)
        try await run(origin) { downloader in
            _ = try await downloader.downloadImage(with: origin.url("/a"))
            let second = await outcome(downloader, origin.url("/b"))
            #expect((try? second.get().originalData) == ImageDownloaderTests.png, "\(second)")
        }
        #expect(requests.count == 3)
    }

    /// A request is sent again once at most: an origin that closes every connection unanswered fails the download
    /// after two requests.
    @Test func resentOnceAtMost() async throws {
        let requests = CallCounter()
        let origin = try await RawHTTPOrigin.start { _, _ in
            requests.increment()
            return nil
        }
        await run(origin) { downloader in
            let result = await outcome(downloader, origin.url("/x"))
            guard case .failure(.responseError(.networkError)) = result else {
                Issue.record("expected networkError, got \(result)")
                return
            }
        }
        #expect(requests.count == 2)
    }

    /// A request that is not idempotent (a modifier made it a POST) is never sent twice.
    @Test func postIsNotResent() async throws {
        let requests = CallCounter()
        let origin = try await origin(["/a": Self.image, "/b": Self.image], requests: requests)
        let post = DownloadOptions(requestModifier: AnyModifier { request in
            var request = request
            request.httpMethod = "POST"
            return request
        })
        try await run(origin) { downloader in
            _ = try await downloader.downloadImage(with: origin.url("/a"))
            let result = await outcome(downloader, origin.url("/b"), options: post)
            guard case .failure(.responseError(.networkError)) = result else {
                Issue.record("expected networkError, got \(result)")
                return
            }
        }
        #expect(requests.count == 2)
    }

    /// A reset or broken pipe comes after the connection was made: a network error, not "cannot connect" (the
    /// server said 502 `source_unreachable`, "cannot connect to the source", for an origin that reset after the request).
    @Test func resetIsANetworkError() throws {
        let url = try #require(URL(string: "http://127.0.0.1:9/x.png"))
        for code in [ECONNRESET, EPIPE] {
            guard case .responseError(.networkError) = HTTPTransport.map(IOError(errnoCode: code, reason: "read"), url: url, timeout: 5) else {
                Issue.record("errno \(code) is not a network error")
                continue
            }
        }
        guard case .requestError(.cannotConnect) = HTTPTransport.map(IOError(errnoCode: ECONNREFUSED, reason: "connect"), url: url, timeout: 5) else {
            Issue.record("a refused connection is not cannotConnect")
            return
        }
    }
}
