import Foundation
@testable import Halcyon
import Testing

/// ``ImageDownloaderTests`` continued: redirects, request modifiers and credentials, the delegate, resumable downloads.
extension ImageDownloaderTests {
    // MARK: - Large bodies

    @Test func largeChunkedBodyArrivesWholeWithProgress() async throws {
        try await withServer({ $0.maxResponseBytes = 8_000_000 }) { server, downloader in
            let progress = Locked([Int64]())
            var options = DownloadOptions()
            options.progressBlock = { received, _ in progress.withLock { $0.append(received) } }
            let result = try await downloader.downloadData(with: server.url("/huge/whole?bytes=3000000&declare=0"), options: options)
            #expect(result.data.count == 3_000_000)
            #expect(result.data.allSatisfy { $0 == 0 })
            let seen = progress.withLock { $0 }
            #expect(seen.count >= 2)
            #expect(seen.last == 3_000_000)
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 < $1 })
        }
    }

    // MARK: - Coalescing with header fields

    @Test func headersThatDoNotChangeTheAnswerShareTheDownload() async throws {
        try await withServer { server, downloader in
            let target = "/slow/accept?delay=60&chunks=2"
            let accept = DownloadOptions(requestModifier: AnyModifier { request in
                var request = request
                request.setValue("image/webp", forHTTPHeaderField: "Accept")
                return request
            })
            let validated = DownloadOptions(requestModifier: AnyModifier { request in
                var request = request
                request.setValue("\"v1\"", forHTTPHeaderField: "If-None-Match")
                return request
            })
            async let plain = downloader.downloadData(with: server.url(target))
            async let withAccept = downloader.downloadData(with: server.url(target), options: accept)
            async let revalidation = downloader.downloadData(with: server.url(target), options: validated)
            let results = try await [plain, withAccept, revalidation]
            #expect(Set(results.map(\.data)).count == 1)
            // The plain and the Accept caller share one request; the revalidation is a download of its own.
            #expect(server.hits(target) == 2)
        }
    }

    // MARK: - Redirects

    @Test func redirectChainIsFollowed() async throws {
        try await withServer { server, downloader in
            let result = try await downloader.downloadImage(with: server.url("/redirect/3"))
            #expect(result.metrics.redirectCount == 3)
            #expect(result.metrics.url == server.url("/redirect/0"))
            #expect(result.originalData == Self.png)
        }
    }

    @Test func redirectLoopStopsAtTheLimit() async throws {
        try await withServer { server, downloader in
            let error = await failure(downloader, server.url("/loop/a"))
            guard case .requestError(.tooManyRedirects(_, 10)) = error else {
                Issue.record("expected tooManyRedirects, got \(String(describing: error))")
                return
            }
            #expect(server.hits("/loop/a") + server.hits("/loop/b") == 11)
        }
    }

    @Test func maxRedirectsIsConfigurable() async throws {
        try await withServer({ $0.maxRedirects = 2 }) { server, downloader in
            let error = await failure(downloader, server.url("/redirect/3"))
            guard case .requestError(.tooManyRedirects(_, 2)) = error else {
                Issue.record("expected tooManyRedirects, got \(String(describing: error))")
                return
            }
        }
    }

    @Test func redirectHandlerCanBlock() async throws {
        try await withServer { server, downloader in
            var options = DownloadOptions()
            options.redirectHandler = AnyRedirectHandler { _, _, _ in nil }
            let error = await failure(downloader, server.url("/redirect/1"), options: options)
            guard case .requestError(.redirectBlocked(_, let location)) = error else {
                Issue.record("expected redirectBlocked, got \(String(describing: error))")
                return
            }
            #expect(location == server.url("/redirect/0"))
            #expect(server.hits("/redirect/0") == 0)
        }
    }

    @Test func redirectHandlerCanRewrite() async throws {
        try await withServer { server, downloader in
            var options = DownloadOptions()
            options.redirectHandler = AnyRedirectHandler { _, response, request in
                #expect(response.statusCode == 302)
                var request = request
                request.url = server.url("/image/rewritten")
                request.setValue("yes", forHTTPHeaderField: "X-Rewritten")
                return request
            }
            let result = try await downloader.downloadImage(with: server.url("/redirect/1"), options: options)
            #expect(result.originalData == Self.png)
            #expect(server.hits("/image/rewritten") == 1)
            #expect(server.headers("/image/rewritten").first?["x-rewritten"] == "yes")
        }
    }

    @Test func redirectToANonHTTPLocationFails() async throws {
        try await withServer { server, downloader in
            let error = await failure(downloader, server.url("/redirect-to?location=file:///etc/passwd"))
            guard case .requestError(.invalidRedirect) = error else {
                Issue.record("expected invalidRedirect, got \(String(describing: error))")
                return
            }
        }
    }

    /// A port that does not fit 16 bits is an invalid URL, as a source or as a redirect's target: the HTTP
    /// client stopped the whole process on one.
    @Test func portOutOfRangeIsAnInvalidURL() async throws {
        try await withServer { server, downloader in
            for text in ["http://127.0.0.1:99999/x.png", "http://127.0.0.1:65536/x.png", "HTTP://127.0.0.1:70000/x.png"] {
                let error = await failure(downloader, try #require(URL(string: text)))
                guard case .requestError(.invalidURL) = error else {
                    Issue.record("\(text): expected invalidURL, got \(String(describing: error))")
                    continue
                }
            }
            let location = "http://127.0.0.1:99999/x.png".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let error = await failure(downloader, server.url("/redirect-to?location=\(location)"))
            guard case .requestError(.invalidRedirect) = error else {
                Issue.record("expected invalidRedirect, got \(String(describing: error))")
                return
            }
            // A redirect handler's rewrite is checked too.
            var options = DownloadOptions()
            options.redirectHandler = AnyRedirectHandler { _, _, request in
                var request = request
                request.url = URL(string: "http://127.0.0.1:70000/x.png") ?? request.url
                return request
            }
            let rewritten = await failure(downloader, server.url("/redirect/1"), options: options)
            guard case .requestError(.invalidRedirect) = rewritten else {
                Issue.record("expected invalidRedirect for the handler's URL, got \(String(describing: rewritten))")
                return
            }
        }
    }

    /// A status code below 100 is an invalid status, not a crash: AsyncHTTPClient skipped it as informational and
    /// then stopped the process on its body or end.
    @Test(arguments: [
        "HTTP/1.1 099 X\r\nContent-Length: 5\r\n\r\nhello",
        "HTTP/1.1 000 X\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 099 X\r\nConnection: close\r\n\r\n",
    ])
    func statusBelow100IsAnInvalidStatus(_ response: String) async throws {
        let origin = try await RawHTTPOrigin.start(response: response)
        let downloader = ImageDownloader(name: "raw-status")
        downloader.downloadTimeout = 5
        let error = await failure(downloader, origin.url("/x.png"))
        guard case .responseError(.invalidHTTPStatusCode(_, let code)) = error else {
            Issue.record("expected invalidHTTPStatusCode, got \(String(describing: error))")
            await downloader.shutdown()
            await origin.shutdown()
            return
        }
        #expect(code < 100)
        await downloader.shutdown()
        await origin.shutdown()
    }

    /// A redirect status without a `Location` is an invalid status (it was taken as the image, and the server
    /// answered 422 `unsupported_image` or `source_empty`).
    @Test(arguments: [
        "HTTP/1.1 301 Moved Permanently\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 302 Found\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n<p>moved</p>\n",
    ])
    func redirectWithoutLocationIsAnInvalidStatus(_ response: String) async throws {
        let origin = try await RawHTTPOrigin.start(response: response)
        let downloader = ImageDownloader(name: "no-location")
        downloader.downloadTimeout = 5
        // Without a delegate, and with one that keeps the default status check.
        let delegate = DefaultsDelegate()
        for withDelegate in [false, true] {
            downloader.delegate = withDelegate ? delegate : nil
            let error = await failure(downloader, origin.url("/moved.png"))
            guard case .responseError(.invalidHTTPStatusCode(_, let code)) = error else {
                Issue.record("expected invalidHTTPStatusCode (delegate: \(withDelegate)), got \(String(describing: error))")
                continue
            }
            #expect(code == 301 || code == 302)
        }
        await downloader.shutdown()
        await origin.shutdown()
    }

    /// A redirect whose own body passes the size limit is too large (it was "cancelled", which the server
    /// answered 503).
    @Test func oversizedRedirectBodyIsTooLarge() async throws {
        let origin = try await RawHTTPOrigin.start { _, _ in
            RawHTTPOrigin.answer("HTTP/1.1 302 Found\r\nLocation: /next", body: Data(count: 4096))
        }
        let downloader = ImageDownloader(name: "redirect-body")
        downloader.downloadTimeout = 5
        downloader.maxResponseBytes = 1000
        let error = await failure(downloader, origin.url("/big"))
        guard case .responseError(.tooLarge(_, 1000, let received)) = error else {
            Issue.record("expected tooLarge, got \(String(describing: error))")
            await downloader.shutdown()
            await origin.shutdown()
            return
        }
        #expect(received > 1000)
        await downloader.shutdown()
        await origin.shutdown()
    }

    /// A compressed body inflating past the size limit (a decompression bomb: 5 KB of deflate to 5 MB of zeros,
    /// against 1 MB) is too large, not a network error (it was `networkError`, which the server answered 502
    /// `source_failed`), and stops inflating at the limit.
    @Test func decompressionBombIsTooLarge() async throws {
        let bomb = Data(PNGFile.zlibZerosDense(runs: 20_000))
        let origin = try await RawHTTPOrigin.start { _, _ in
            RawHTTPOrigin.answer("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Encoding: deflate", body: bomb)
        }
        let downloader = ImageDownloader(name: "bomb")
        downloader.downloadTimeout = 5
        downloader.maxResponseBytes = 1 << 20
        let error = await failure(downloader, origin.url("/bomb.png"))
        guard case .responseError(.tooLarge(_, _, let received)) = error else {
            Issue.record("expected tooLarge, got \(String(describing: error))")
            await downloader.shutdown()
            await origin.shutdown()
            return
        }
        #expect(received <= (1 << 20) + 256 * 1024, "stopped after \(received) bytes")
        await downloader.shutdown()
        await origin.shutdown()
    }

    // MARK: - Request modifiers, headers and credentials

    @Test func requestModifierReturningNilIsAnEmptyRequest() async throws {
        try await withServer { server, downloader in
            let sync = DownloadOptions(requestModifier: AnyModifier { _ in nil })
            let box = ResultBox()
            let task = downloader.downloadImage(with: server.url("/image/nil"), options: sync) { box.set($0) }
            #expect(task != nil, "the task is returned; the failure comes through the handler")
            guard case .failure(.requestError(.emptyRequest)) = await box.value() else {
                Issue.record("expected emptyRequest")
                return
            }
            let asyncOptions = DownloadOptions(requestModifier: AnyAsyncModifier { _ in nil })
            guard case .requestError(.emptyRequest) = await failure(downloader, server.url("/image/nil"), options: asyncOptions) else {
                Issue.record("expected emptyRequest from the async modifier")
                return
            }
            #expect(server.totalHits == 0)
        }
    }

    @Test func headersFromTheDownloaderAndModifiersAreSent() async throws {
        try await withServer({ $0.httpHeaders = ["X-Client": "halcyon"] }) { server, downloader in
            let options = DownloadOptions(requestModifier: AnyAsyncModifier { request in
                try? await Task.sleep(for: .milliseconds(5))
                var request = request
                request.setValue("42", forHTTPHeaderField: "X-Trace")
                return request
            })
            _ = try await downloader.downloadImage(with: server.url("/image/headers"), options: options)
            let headers = server.headers("/image/headers").first ?? [:]
            #expect(headers["x-client"] == "halcyon")
            #expect(headers["x-trace"] == "42")
        }
    }

    @Test func authRequiredFailsWithoutCredentials() async throws {
        try await withServer { server, downloader in
            guard case .responseError(.invalidHTTPStatusCode(_, 401)) = await failure(downloader, server.url("/auth/none")) else {
                Issue.record("expected 401")
                return
            }
        }
    }

    @Test func basicCredentialIsSentToItsHost() async throws {
        try await withServer({ $0.setCredential(.basic(username: "user", password: "pass"), forHost: "127.0.0.1") }) { server, downloader in
            let result = try await downloader.downloadImage(with: server.url("/auth/basic"))
            #expect(result.originalData == Self.png)
        }
    }

    @Test func bearerCredentialIsSent() async throws {
        try await withServer({ $0.setCredential(.bearer(token: "secret"), forHost: "127.0.0.1") }) { server, downloader in
            _ = try await downloader.downloadImage(with: server.url("/auth/bearer"))
            #expect(server.headers("/auth/bearer").first?["authorization"] == "Bearer secret")
        }
    }

    @Test func credentialForAnotherHostIsNotSent() async throws {
        try await withServer({ $0.setCredential(.bearer(token: "secret"), forHost: "example.com") }) { server, downloader in
            guard case .responseError(.invalidHTTPStatusCode(_, 401)) = await failure(downloader, server.url("/auth/other")) else {
                Issue.record("expected 401")
                return
            }
            #expect(server.headers("/auth/other").first?["authorization"] == nil)
        }
    }

    // MARK: - Delegate

    @Test func delegateSeesEveryStage() async throws {
        let delegate = RecordingDelegate()
        try await withServer({ $0.delegate = delegate }) { server, downloader in
            _ = try await downloader.downloadImage(with: server.url("/image/delegate"))
            #expect(delegate.events == ["willDownload", "didReceive", "didDownloadData", "didFinish", "didDownloadImage"])
        }
    }

    @Test func delegateCanCancelOnTheResponseHead() async throws {
        let delegate = RecordingDelegate()
        delegate.disposition = .cancel
        try await withServer({ $0.delegate = delegate }) { server, downloader in
            guard case .responseError(.rejected) = await failure(downloader, server.url("/image/head")) else {
                Issue.record("expected rejected")
                return
            }
        }
    }

    @Test func delegateCanRejectOrRewriteData() async throws {
        let delegate = RecordingDelegate()
        try await withServer({ $0.delegate = delegate }) { server, downloader in
            delegate.rewrite = { _ in nil }
            guard case .responseError(.rejected) = await failure(downloader, server.url("/image/reject")) else {
                Issue.record("expected rejected")
                return
            }
            delegate.rewrite = { _ in Self.png }
            let result = try await downloader.downloadImage(with: server.url("/huge/rewrite?bytes=100&declare=1"))
            #expect(result.originalData == Self.png)
        }
    }

    @Test func delegateDecidesWhichStatusIsValid() async throws {
        let delegate = RecordingDelegate()
        delegate.validCodes = 201..<202
        try await withServer({ $0.delegate = delegate }) { server, downloader in
            guard case .responseError(.invalidHTTPStatusCode(_, 200)) = await failure(downloader, server.url("/image/strict")) else {
                Issue.record("expected 200 to be refused")
                return
            }
        }
    }

    // MARK: - Resumable downloads

    @Test func interruptedDownloadResumesWithRange() async throws {
        try await withServer { server, downloader in
            let url = server.url("/range/resume")
            guard case .responseError(.truncatedBody) = await failure(downloader, url) else {
                Issue.record("the first attempt must be truncated")
                return
            }
            let result = try await downloader.downloadImage(with: url)
            #expect(result.originalData == Self.png)
            #expect(result.metrics.statusCode == 206)
            #expect(result.metrics.resumedBytes == Self.png.count / 2)
            #expect(result.metrics.receivedBytes == Self.png.count - Self.png.count / 2)
            let second = server.headers("/range/resume").last ?? [:]
            #expect(second["range"] == "bytes=\(Self.png.count / 2)-")
            #expect(second["if-range"] == "\"r1\"")
        }
    }

    @Test func cancelledDownloadKeepsItsPartialBodyButUsesItOnlyOn206() async throws {
        try await withServer { server, downloader in
            let target = "/slow/partial?delay=80&chunks=4"
            let url = server.url(target)
            let firstChunk = CallCounter()
            let options = DownloadOptions(progressBlock: { _, _ in firstChunk.increment() })
            let (task, result) = start(downloader, url, options: options)
            #expect(await server.wait { firstChunk.count >= 1 })
            task?.cancel()
            guard case .failure(.requestError(.taskCancelled)) = await result() else {
                Issue.record("expected taskCancelled")
                return
            }
            // The partial body is kept when the transport sees the cancellation, just after the caller was told.
            #expect(await server.wait { downloader.hasResumableData(for: url) })
            // The slow route ignores Range and answers 200: the kept bytes must be dropped.
            let second = try await downloader.downloadImage(with: url)
            #expect(second.originalData == Self.png)
            #expect(second.metrics.statusCode == 200)
            #expect(second.metrics.resumedBytes == 0)
            let headers = server.headers(target)
            #expect(headers.count == 2)
            #expect(headers.last?["range"]?.hasPrefix("bytes=") == true)
            #expect(headers.last?["if-range"] == "\"v1\"")
        }
    }

    /// A content-coded body is kept decoded, and a `Range` counts bytes of the coded one: resuming would append coded
    /// bytes to decoded ones. So a coded body that breaks off keeps nothing for a resume.
    @Test func codedBodyIsNotResumed() async throws {
        let flat = PNGFile.make(pixels: [UInt8](repeating: 90, count: 1000 * 1000 * 3), width: 1000, height: 1000, bands: 3)
        let gzip = try Gzipped.encode(flat)
        let head = "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Encoding: gzip\r\nAccept-Ranges: bytes\r\n"
            + "ETag: \"g1\"\r\nContent-Length: \(gzip.count)\r\n\r\n"
        // Every answer breaks off halfway, after about half of the image has been decoded.
        let origin = try await RawHTTPOrigin.start(responseBytes: Array(head.utf8) + Array(gzip.prefix(gzip.count / 2)))
        try await origin.withDownloader(name: "coded") { downloader in
            let url = origin.url("/coded.png")
            let error = await failure(downloader, url)
            #expect(error != nil)
            #expect(!downloader.hasResumableData(for: url), "a decoded partial body was kept for a Range in coded bytes")
        }
    }

    @Test func responseWithoutValidatorIsNotResumed() async throws {
        try await withServer { server, downloader in
            let url = server.url("/truncated/novalidator")
            _ = await failure(downloader, url)
            _ = await failure(downloader, url)
            #expect(server.headers("/truncated/novalidator").allSatisfy { $0["range"] == nil })
        }
    }

    @Test func shutdownFailsRunningRequests() async throws {
        let server = try await TestHTTPServer.start(image: Self.png)
        let downloader = ImageDownloader(name: "closing")
        let (_, result) = start(downloader, server.url("/hang/shutdown"))
        #expect(await server.wait { server.inFlight == 1 })
        await downloader.shutdown()
        guard case .failure(.requestError(.downloaderShutDown)) = await result() else {
            Issue.record("expected downloaderShutDown")
            await server.shutdown()
            return
        }
        #expect(await server.wait { server.clientClosedWhileOpen == 1 })
        await server.shutdown()
    }

    @Test func shutDownDownloaderRefusesRequests() async throws {
        let downloader = ImageDownloader(name: "closed")
        await downloader.shutdown()
        guard case .requestError(.downloaderShutDown) = await failure(downloader, URL(string: "http://127.0.0.1:9/x.png")!) else {
            Issue.record("expected downloaderShutDown")
            return
        }
    }

    // MARK: - Workers

    /// A worker that ran a cancelled request hands its next one to a fresh worker: cancellation is sticky on a task.
    @Test func cancellingARunningRequestDoesNotCancelTheOneStartedInItsSlot() async throws {
        try await withServer({ $0.maxConcurrentDownloads = 1 }) { server, downloader in
            let (first, firstResult) = start(downloader, server.url("/hang/first"))
            #expect(await server.wait { server.inFlight == 1 })
            let (_, secondResult) = start(downloader, server.url("/image/second.png"))
            first?.cancel()
            guard case .failure(.requestError(.taskCancelled)) = await firstResult() else {
                Issue.record("the cancelled request must get taskCancelled")
                return
            }
            #expect((try? await secondResult().get())?.image.width == 64)
        }
    }

    /// An idle timeout stops only its own request, even though the worker that ran it goes on with the next.
    @Test func idleTimeoutDoesNotFailTheRequestStartedInItsSlot() async throws {
        try await withServer({ $0.maxConcurrentDownloads = 1; $0.downloadTimeout = 0.3 }) { server, downloader in
            let (_, firstResult) = start(downloader, server.url("/wrong-length/stall"))
            let queued = (0..<3).map { start(downloader, server.url("/image/after-\($0).png")) }
            guard case .failure(.responseError(.timedOut)) = await firstResult() else {
                Issue.record("the stalled request must time out")
                return
            }
            for (_, result) in queued {
                #expect((try? await result().get())?.image.width == 64)
            }
        }
    }

    /// Requests that queue behind one slot all complete; one worker runs them back to back, in submission order.
    @Test func queuedRequestsRunBackToBackInOneSlot() async throws {
        try await withServer({ $0.maxConcurrentDownloads = 1 }) { server, downloader in
            let order = Locked<[Int]>([])
            let results = (0..<20).map { index in
                let box = ResultBox()
                downloader.downloadImage(with: server.url("/image/queued-\(index).png")) { result in
                    order.withLock { $0.append(index) }
                    box.set(result)
                }
                return box
            }
            for box in results {
                #expect((try? await box.value().get())?.image.width == 64)
            }
            // Requests reach the origin one at a time and in submission order. Completions may arrive out of
            // order: the decode of one download runs on the decode queue while the slot's next download starts.
            #expect(server.requestOrder == (0..<20).map { "/image/queued-\($0).png" })
            #expect(server.maxInFlight == 1)
            #expect(order.withLock { $0 }.sorted() == Array(0..<20))
            #expect(downloader.activeRequestCount == 0)
        }
    }

    /// With a delegate, the request that takes a freed slot starts before the delegate's hooks for the one that
    /// ended run: a slow data hook does not hold the next download back.
    @Test func nextRequestStartsWhileTheDelegateDataHookRuns() async throws {
        try await withServer({ $0.maxConcurrentDownloads = 1 }) { server, downloader in
            let delegate = RecordingDelegate()
            downloader.delegate = delegate
            let calls = Locked(0)
            let sawNextStart = Locked(false)
            delegate.rewrite = { data in
                guard calls.withLock({ value -> Bool in
                    value += 1
                    return value == 1
                }) else { return data }
                // Blocks this thread on purpose, as a slow hook would; gives up after 5 s.
                let deadline = Date().addingTimeInterval(5)
                while Date() < deadline, server.hits("/image/second.png") == 0 { Thread.sleep(forTimeInterval: 0.01) }
                sawNextStart.withLock { $0 = server.hits("/image/second.png") > 0 }
                return data
            }
            let (_, firstResult) = start(downloader, server.url("/image/first.png"))
            let (_, secondResult) = start(downloader, server.url("/image/second.png"))
            #expect((try? await firstResult().get())?.image.width == 64)
            #expect((try? await secondResult().get())?.image.width == 64)
            #expect(sawNextStart.withLock { $0 }, "the second download must start while the first one's data hook runs")
        }
    }
}

/// A delegate that implements nothing, so every hook keeps its default.
private final class DefaultsDelegate: ImageDownloaderDelegate {}
