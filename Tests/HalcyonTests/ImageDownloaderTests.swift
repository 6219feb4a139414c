import Foundation
@testable import Halcyon
import Testing

/// Behaviour of ``ImageDownloader`` against a real loopback server.
@Suite struct ImageDownloaderTests {
    // MARK: - Fixtures

    static let png: Data = {
        var pixels = [UInt8](repeating: 0, count: 64 * 48 * 4)
        for index in 0..<(64 * 48) {
            pixels[index * 4] = UInt8(index % 251)
            pixels[index * 4 + 1] = UInt8((index / 64) * 5 % 256)
            pixels[index * 4 + 2] = 200
            pixels[index * 4 + 3] = 255
        }
        return (try? Image(rgbaPixels: pixels, width: 64, height: 48).encoded(as: .png())) ?? Data()
    }()

    /// Runs `body` with a fresh server and downloader, shutting both down afterwards.
    func withServer(
        _ configure: (ImageDownloader) -> Void = { _ in },
        _ body: (TestHTTPServer, ImageDownloader) async throws -> Void
    ) async throws {
        let server = try await TestHTTPServer.start(image: Self.png)
        let downloader = ImageDownloader(name: "test")
        configure(downloader)
        do {
            try await body(server, downloader)
        } catch {
            await downloader.shutdown()
            await server.shutdown()
            throw error
        }
        await downloader.shutdown()
        await server.shutdown()
    }

    /// The error a download fails with, or nil when it succeeds.
    func failure(_ downloader: ImageDownloader, _ url: URL, options: DownloadOptions = .default) async -> HalcyonError? {
        do {
            _ = try await downloader.downloadImage(with: url, options: options)
            return nil
        } catch {
            return error
        }
    }

    /// Starts a completion-handler download and returns its task and a way to await its single result.
    func start(
        _ downloader: ImageDownloader, _ url: URL, options: DownloadOptions = .default, calls: CallCounter = CallCounter()
    ) -> (DownloadTask?, () async -> Result<ImageLoadingResult, HalcyonError>) {
        let box = ResultBox()
        let task = downloader.downloadImage(with: url, options: options) { result in
            calls.increment()
            box.set(result)
        }
        return (task, { await box.value() })
    }

    // MARK: - Basic downloads

    @Test func downloadsAndDecodesAnImage() async throws {
        try await withServer { server, downloader in
            let url = server.url("/image/basic")
            let result = try await downloader.downloadImage(with: url)
            #expect(result.image.width == 64)
            #expect(result.image.height == 48)
            #expect(result.originalData == Self.png)
            #expect(result.url == url)
            #expect(result.metrics.statusCode == 200)
            #expect(result.metrics.receivedBytes == Self.png.count)
            #expect(result.metrics.redirectCount == 0)
            #expect(result.metrics.totalDuration >= result.metrics.responseHeadDuration)
            #expect(result.response.value(forHTTPHeaderField: "ETag") == "\"v1\"")
        }
    }

    @Test func completionHandlerRunsOnceOnTheCallbackQueue() async throws {
        try await withServer { server, downloader in
            let queue = DispatchQueue(label: "callbacks")
            let key = DispatchSpecificKey<Int>()
            queue.setSpecific(key: key, value: 7)
            let onQueue = Locked(false)
            let calls = CallCounter()
            let box = ResultBox()
            let task = downloader.downloadImage(with: server.url("/image/queue"), options: DownloadOptions(callbackQueue: .dispatch(queue))) { result in
                onQueue.withLock { $0 = DispatchQueue.getSpecific(key: key) == 7 }
                calls.increment()
                box.set(result)
            }
            #expect(task != nil)
            let result = await box.value()
            #expect((try? result.get())?.image.width == 64)
            #expect(onQueue.withLock { $0 })
            try await Task.sleep(for: .milliseconds(50))
            #expect(calls.count == 1)
        }
    }

    @Test func serverServesRegisteredFiles() async throws {
        let jpeg = try Image(data: Self.png).encoded(as: .jpeg())
        let server = try await TestHTTPServer.start(image: Self.png, files: ["a.jpg": jpeg])
        let downloader = ImageDownloader(name: "files")
        let result = try await downloader.downloadImage(with: server.url("/files/a.jpg"))
        let missing = await failure(downloader, server.url("/files/missing.jpg"))
        await downloader.shutdown()
        await server.shutdown()
        #expect(result.image.originalFormat == .jpeg)
        guard case .responseError(.invalidHTTPStatusCode(_, 404)) = missing else {
            Issue.record("expected 404, got \(String(describing: missing))")
            return
        }
    }

    @Test func downloadDataSkipsDecoding() async throws {
        try await withServer { server, downloader in
            let result = try await downloader.downloadData(with: server.url("/image/raw"))
            #expect(result.data == Self.png)
            #expect(result.response.statusCode == 200)
        }
    }

    @Test func downloadDataWithACompletionHandlerSharesTheRequest() async throws {
        try await withServer { server, downloader in
            let target = "/slow/data?delay=30&chunks=2"
            let dataResult = Locked<Result<ImageDataLoadingResult, HalcyonError>?>(nil)
            let task = downloader.downloadData(with: server.url(target)) { result in dataResult.withLock { $0 = result } }
            let image = try await downloader.downloadImage(with: server.url(target))
            #expect(task != nil)
            #expect(await server.wait { dataResult.withLock { $0 } != nil })
            #expect((try? dataResult.withLock { $0 }?.get())?.data == image.originalData)
            #expect(server.hits(target) == 1)
        }
    }

    @Test func invalidURLFailsAtOnce() async throws {
        let downloader = ImageDownloader(name: "invalid")
        let box = ResultBox()
        let task = downloader.downloadImage(with: URL(string: "file:///tmp/x.png")!) { box.set($0) }
        #expect(task != nil, "the task is returned; the failure comes through the handler")
        guard case .failure(.requestError(.invalidURL)) = await box.value() else {
            Issue.record("expected invalidURL")
            return
        }
        let error = await failure(downloader, URL(string: "ftp://example.com/a.png")!)
        guard case .requestError(.invalidURL) = error else {
            Issue.record("expected invalidURL, got \(String(describing: error))")
            return
        }
        await downloader.shutdown()
    }

    // MARK: - Coalescing

    @Test func hundredConcurrentRequestsShareOneHit() async throws {
        try await withServer { server, downloader in
            let target = "/slow/shared?delay=20&chunks=3"
            let url = server.url(target)
            let widths = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<100 {
                    group.addTask { try await downloader.downloadImage(with: url).image.width }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(widths.count == 100)
            #expect(widths.allSatisfy { $0 == 64 })
            #expect(server.hits(target) == 1)
        }
    }

    @Test func decodesOncePerProcessorAndFansOut() async throws {
        try await withServer { server, downloader in
            let counts = Locked([String: Int]())
            func processor(_ name: String) -> any ImageProcessor {
                GeneralProcessor(identifier: name) { item, options throws(HalcyonError) in
                    counts.withLock { $0[name, default: 0] += 1 }
                    return try DefaultImageProcessor.default.process(item: item, options: options)
                }
            }
            let url = server.url("/slow/fanout?delay=30&chunks=2")
            var waits: [() async -> Result<ImageLoadingResult, HalcyonError>] = []
            for index in 0..<20 {
                var options = DownloadOptions()
                options.processor = processor(index.isMultiple(of: 2) ? "a" : "b")
                waits.append(start(downloader, url, options: options).1)
            }
            for wait in waits {
                #expect((try? await wait().get())?.image.width == 64)
            }
            #expect(counts.withLock { $0 } == ["a": 1, "b": 1])
            #expect(server.hits("/slow/fanout?delay=30&chunks=2") == 1)
        }
    }

    @Test func modifiedURLIsTheCoalescingKey() async throws {
        try await withServer { server, downloader in
            let target = server.url("/slow/rewritten?delay=30&chunks=2")
            let options = DownloadOptions(requestModifier: AnyModifier { request in
                var request = request
                request.url = target
                return request
            })
            async let first = downloader.downloadImage(with: server.url("/image/one"), options: options)
            async let second = downloader.downloadImage(with: server.url("/image/two"), options: options)
            let results = try await [first, second]
            #expect(results.map(\.url) == [target, target])
            #expect(server.hits("/slow/rewritten?delay=30&chunks=2") == 1)
            #expect(server.hits("/image/one") == 0)
        }
    }

    @Test func cancellingOneOfTwoLetsTheOtherComplete() async throws {
        try await withServer { server, downloader in
            let url = server.url("/slow/two?delay=60&chunks=3")
            let (firstTask, firstResult) = start(downloader, url)
            let (_, secondResult) = start(downloader, url)
            firstTask?.cancel()
            guard case .failure(.requestError(.taskCancelled)) = await firstResult() else {
                Issue.record("the cancelled caller must get taskCancelled")
                return
            }
            #expect((try? await secondResult().get())?.image.width == 64)
            #expect(server.hits("/slow/two?delay=60&chunks=3") == 1)
            #expect(server.clientClosedWhileOpen == 0)
        }
    }

    @Test func cancellingEveryCallerClosesTheConnection() async throws {
        try await withServer { server, downloader in
            let url = server.url("/hang/all")
            let (first, firstResult) = start(downloader, url)
            let (second, secondResult) = start(downloader, url)
            #expect(await server.wait { server.inFlight == 1 })
            #expect(first?.sessionTask === second?.sessionTask)
            first?.cancel()
            second?.cancel()
            guard case .failure(.requestError(.taskCancelled)) = await firstResult(),
                  case .failure(.requestError(.taskCancelled)) = await secondResult() else {
                Issue.record("both callers must get taskCancelled")
                return
            }
            #expect(await server.wait { server.clientClosedWhileOpen == 1 })
            #expect(await server.wait { downloader.activeRequestCount == 0 })
        }
    }

    @Test func cancelURLAndCancelAllStopEveryCaller() async throws {
        try await withServer({ $0.maxConcurrentDownloads = 2 }) { server, downloader in
            let calls = CallCounter()
            let shared = server.url("/hang/shared")
            let waits = [
                start(downloader, shared, calls: calls).1,
                start(downloader, shared, calls: calls).1,
                start(downloader, server.url("/hang/other"), calls: calls).1,
                start(downloader, server.url("/hang/waiting"), calls: calls).1,
            ]
            #expect(await server.wait { server.inFlight == 2 })
            downloader.cancel(url: shared)
            for wait in waits.prefix(2) {
                guard case .failure(.requestError(.taskCancelled)) = await wait() else {
                    Issue.record("expected taskCancelled")
                    return
                }
            }
            #expect(await server.wait { server.hits("/hang/waiting") == 1 })
            downloader.cancelAll()
            for wait in waits.suffix(2) {
                guard case .failure(.requestError(.taskCancelled)) = await wait() else {
                    Issue.record("expected taskCancelled")
                    return
                }
            }
            #expect(await server.wait { server.clientClosedWhileOpen == 3 })
            #expect(downloader.activeRequestCount == 0)
            #expect(calls.count == 4)
        }
    }

    @Test func cancellingTheSwiftTaskCancelsTheDownload() async throws {
        try await withServer { server, downloader in
            let url = server.url("/hang/swift")
            let task = Task { await failure(downloader, url) }
            #expect(await server.wait { server.inFlight == 1 })
            task.cancel()
            guard case .requestError(.taskCancelled) = await task.value else {
                Issue.record("expected taskCancelled")
                return
            }
            #expect(await server.wait { server.clientClosedWhileOpen == 1 })
        }
    }

    @Test func noCallbackIsLostOrCalledTwice() async throws {
        try await withServer { server, downloader in
            let calls = CallCounter()
            var tasks: [DownloadTask] = []
            var waits: [() async -> Result<ImageLoadingResult, HalcyonError>] = []
            for index in 0..<200 {
                let url = server.url("/slow/race\(index % 4)?delay=5&chunks=2")
                let (task, wait) = start(downloader, url, calls: calls)
                if let task { tasks.append(task) }
                waits.append(wait)
                if index.isMultiple(of: 3) { tasks.randomElement()?.cancel() }
            }
            for task in tasks where Bool.random() { task.cancel() }
            for wait in waits { _ = await wait() }
            try await Task.sleep(for: .milliseconds(100))
            #expect(calls.count == 200)
        }
    }

    // MARK: - Limits and order

    @Test func concurrencyLimitIsRespected() async throws {
        try await withServer({ $0.maxConcurrentDownloads = 3 }) { server, downloader in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<12 {
                    group.addTask { _ = try await downloader.downloadImage(with: server.url("/slow/limit\(index)?delay=20&chunks=2")) }
                }
                try await group.waitForAll()
            }
            #expect(server.maxInFlight <= 3)
            #expect(server.maxInFlight >= 2)
            #expect(server.totalHits == 12)
        }
    }

    @Test func defaultSettings() {
        let downloader = ImageDownloader(name: "defaults")
        #expect(downloader.downloadTimeout == 15)
        #expect(downloader.maxConcurrentDownloads == 6)
        #expect(downloader.maxResponseBytes == 50 * 1024 * 1024)
        #expect(downloader.executionOrder == .fifo)
        #expect(ImageDownloader.default.name == "default")
    }

    @Test func lifoStartsTheNewestWaitingRequestFirst() async throws {
        try await withServer({ $0.maxConcurrentDownloads = 1; $0.executionOrder = .lifo }) { server, downloader in
            let (blockerTask, blocker) = start(downloader, server.url("/hang/blocker"))
            #expect(await server.wait { server.inFlight == 1 })
            let waits = (1...4).map { start(downloader, server.url("/image/lifo\($0)")).1 }
            blockerTask?.cancel()
            _ = await blocker()
            for wait in waits { _ = await wait() }
            #expect(server.requestOrder == ["/hang/blocker", "/image/lifo4", "/image/lifo3", "/image/lifo2", "/image/lifo1"])
        }
    }

    @Test func fifoWithPriorityStartsTheHighestPriorityFirst() async throws {
        try await withServer({ $0.maxConcurrentDownloads = 1 }) { server, downloader in
            let (blockerTask, blocker) = start(downloader, server.url("/hang/blocker"))
            #expect(await server.wait { server.inFlight == 1 })
            let low = DownloadOptions(downloadPriority: 0.1)
            let high = DownloadOptions(downloadPriority: 0.9)
            let waits = [
                start(downloader, server.url("/image/a"), options: low).1,
                start(downloader, server.url("/image/b"), options: low).1,
                start(downloader, server.url("/image/c"), options: high).1,
            ]
            blockerTask?.cancel()
            _ = await blocker()
            for wait in waits { _ = await wait() }
            #expect(server.requestOrder == ["/hang/blocker", "/image/c", "/image/a", "/image/b"])
        }
    }

    @Test func contentLengthOverTheLimitFailsBeforeTheBody() async throws {
        try await withServer({ $0.maxResponseBytes = 100_000 }) { server, downloader in
            let error = await failure(downloader, server.url("/huge/declared?bytes=4000000&declare=1"))
            guard case .responseError(.tooLarge(_, let limit, let received)) = error else {
                Issue.record("expected tooLarge, got \(String(describing: error))")
                return
            }
            #expect(limit == 100_000)
            #expect(received == 4_000_000)
        }
    }

    @Test func streamedBodyOverTheLimitFails() async throws {
        try await withServer({ $0.maxResponseBytes = 100_000 }) { server, downloader in
            let error = await failure(downloader, server.url("/huge/chunked?bytes=4000000&declare=0"))
            guard case .responseError(.tooLarge(_, 100_000, let received)) = error else {
                Issue.record("expected tooLarge, got \(String(describing: error))")
                return
            }
            #expect(received > 100_000)
            #expect(received < 4_000_000)
        }
    }

    // MARK: - Timeouts and broken responses

    @Test func delayedHeadersTimeOut() async throws {
        try await withServer({ $0.downloadTimeout = 0.3 }) { server, downloader in
            let started = Date()
            let error = await failure(downloader, server.url("/delayed/late?delay=10000"))
            guard case .responseError(.timedOut(_, let after)) = error else {
                Issue.record("expected timedOut, got \(String(describing: error))")
                return
            }
            #expect(after == 0.3)
            // Far below the 10 s delay; generous because parallel suites load the 2 cores.
            #expect(Date().timeIntervalSince(started) < 5)
        }
    }

    @Test func stalledBodyTimesOut() async throws {
        try await withServer({ $0.downloadTimeout = 0.3 }) { server, downloader in
            let error = await failure(downloader, server.url("/wrong-length/stall"))
            guard case .responseError(.timedOut) = error else {
                Issue.record("expected timedOut, got \(String(describing: error))")
                return
            }
            #expect(await server.wait { server.clientClosedWhileOpen == 1 })
        }
    }

    @Test func slowButSteadyBodyDoesNotTimeOut() async throws {
        // 6 chunks 250 ms apart: 1.5 s in all, longer than the 1 s idle timeout, never idle that long.
        try await withServer({ $0.downloadTimeout = 1 }) { server, downloader in
            let result = try await downloader.downloadImage(with: server.url("/slow/steady?delay=250&chunks=6"))
            #expect(result.originalData == Self.png)
        }
    }

    @Test func truncatedBodyIsReported() async throws {
        try await withServer { server, downloader in
            let error = await failure(downloader, server.url("/truncated/t"))
            guard case .responseError(.truncatedBody(_, let expected, let received)) = error else {
                Issue.record("expected truncatedBody, got \(String(describing: error))")
                return
            }
            #expect(expected == Self.png.count)
            #expect(received == Self.png.count / 2)
        }
    }

    @Test func emptyBodyIsReported() async throws {
        try await withServer { server, downloader in
            let error = await failure(downloader, server.url("/empty/e"))
            guard case .responseError(.emptyBody) = error else {
                Issue.record("expected emptyBody, got \(String(describing: error))")
                return
            }
        }
    }

    @Test(arguments: [404, 500])
    func badStatusIsReportedWithTheCode(code: Int) async throws {
        try await withServer { server, downloader in
            let url = server.url("/status/\(code)")
            let error = await failure(downloader, url)
            guard case .responseError(.invalidHTTPStatusCode(let failedURL, let status)) = error else {
                Issue.record("expected invalidHTTPStatusCode, got \(String(describing: error))")
                return
            }
            #expect(status == code)
            #expect(failedURL == url)
        }
    }

    @Test func refusedConnectionIsReported() async throws {
        let server = try await TestHTTPServer.start(image: Self.png)
        let url = server.url("/image/closed")
        await server.shutdown()
        let downloader = ImageDownloader(name: "refused")
        let error = await failure(downloader, url)
        await downloader.shutdown()
        guard case .requestError(.cannotConnect(let failedURL, _)) = error else {
            Issue.record("expected cannotConnect, got \(String(describing: error))")
            return
        }
        #expect(failedURL == url)
    }

    @Test func undecodableBodyIsAProcessorError() async throws {
        try await withServer { server, downloader in
            let error = await failure(downloader, server.url("/huge/zeros?bytes=1000&declare=1"))
            guard case .processorError = error else {
                Issue.record("expected a processor error, got \(String(describing: error))")
                return
            }
        }
    }

    @Test func gzipBodyIsDecompressed() async throws {
        try await withServer { server, downloader in
            let result = try await downloader.downloadImage(with: server.url("/gzip/g"))
            #expect(result.originalData == Self.png)
            #expect(server.headers("/gzip/g").first?["accept-encoding"]?.contains("gzip") == true)
        }
    }

    @Test func progressIsReportedWhileStreaming() async throws {
        try await withServer { server, downloader in
            let progress = Locked([(Int64, Int64)]())
            var options = DownloadOptions()
            options.progressBlock = { received, total in progress.withLock { $0.append((received, total)) } }
            _ = try await downloader.downloadImage(with: server.url("/slow/progress?delay=60&chunks=4"), options: options)
            let seen = progress.withLock { $0 }
            #expect(seen.count >= 2)
            #expect(seen.last?.0 == Int64(Self.png.count))
            #expect(seen.allSatisfy { $0.1 == Int64(Self.png.count) })
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.0 < $1.0 })
        }
    }
}

// MARK: - Helpers

/// Counts calls from any thread.
final class CallCounter: Sendable {
    private let value = Locked(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// Holds one result and lets a test await it.
final class ResultBox: Sendable {
    private let state = Locked<(Result<ImageLoadingResult, HalcyonError>?, [CheckedContinuation<Result<ImageLoadingResult, HalcyonError>, Never>])>((nil, []))

    func set(_ result: Result<ImageLoadingResult, HalcyonError>) {
        let waiters = state.withLock { state in
            state.0 = result
            defer { state.1 = [] }
            return state.1
        }
        waiters.forEach { $0.resume(returning: result) }
    }

    func value() async -> Result<ImageLoadingResult, HalcyonError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<ImageLoadingResult, HalcyonError>? in
                if let result = state.0 { return result }
                state.1.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Records delegate calls and answers as configured; one lock.
final class RecordingDelegate: ImageDownloaderDelegate {
    private struct State {
        var events: [String] = []
        var disposition: ResponseDisposition = .allow
        var rewrite: (@Sendable (Data) -> Data?)?
        var validCodes: Range<Int> = 200..<400
    }

    private let state = Locked(State())

    var events: [String] { state.withLock { $0.events } }
    var disposition: ResponseDisposition {
        get { state.withLock { $0.disposition } }
        set { state.withLock { $0.disposition = newValue } }
    }
    var rewrite: (@Sendable (Data) -> Data?)? {
        get { state.withLock { $0.rewrite } }
        set { state.withLock { $0.rewrite = newValue } }
    }
    var validCodes: Range<Int> {
        get { state.withLock { $0.validCodes } }
        set { state.withLock { $0.validCodes = newValue } }
    }

    private func record(_ event: String) { state.withLock { $0.events.append(event) } }

    func imageDownloader(_ downloader: ImageDownloader, willDownloadImageForURL url: URL, with request: ImageDownloadRequest) {
        record("willDownload")
    }

    func imageDownloader(_ downloader: ImageDownloader, didFinishDownloadingImageForURL url: URL, with response: ImageDownloadResponse?, error: HalcyonError?) {
        record("didFinish")
    }

    func imageDownloader(_ downloader: ImageDownloader, didReceive response: ImageDownloadResponse) -> ResponseDisposition {
        record("didReceive")
        return disposition
    }

    func imageDownloader(_ downloader: ImageDownloader, didDownload data: Data, for url: URL) -> Data? {
        record("didDownloadData")
        guard let rewrite else { return data }
        return rewrite(data)
    }

    func imageDownloader(_ downloader: ImageDownloader, didDownload image: Image, for url: URL, with response: ImageDownloadResponse) {
        record("didDownloadImage")
    }

    func isValidStatusCode(_ code: Int, for downloader: ImageDownloader) -> Bool {
        validCodes.contains(code)
    }
}
