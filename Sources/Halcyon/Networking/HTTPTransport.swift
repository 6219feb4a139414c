import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import Tracing

/// What one HTTP download produced.
struct FetchOutcome: Sendable {
    var data: Data
    var response: ImageDownloadResponse
    var metrics: NetworkMetrics
}

/// The downloader settings one fetch runs with, snapshotted when it starts.
struct FetchSettings: Sendable {
    var timeout: TimeInterval
    var maxResponseBytes: Int
    var maxRedirects: Int
    var credentials: [String: HTTPCredential]
    var connectionGate: (any ImageDownloaderConnectionGate)? = nil
    /// The downloader's delegate when the fetch started.
    var delegate: (any ImageDownloaderDelegate)? = nil
}

/// Runs one ``SessionDataTask`` over AsyncHTTPClient: redirects, credentials,
/// resume, status validation, limits, progress and the idle timeout.
///
/// Redirects are followed here, not by AsyncHTTPClient, so the redirect
/// handler and the limits see every hop. The timeout is an idle timeout, as
/// `URLRequest.timeoutInterval`: the download fails when nothing arrives for
/// that long, before the response head or between body chunks.
struct HTTPTransport: Sendable {
    let client: HTTPClient
    let downloader: ImageDownloader
    let settings: FetchSettings
    let resumable: ResumableDataStore
    let idleMonitor: IdleMonitor

    // MARK: - Entry

    func fetch(_ task: SessionDataTask) async -> Result<FetchOutcome, HalcyonError> {
        let timeout = task.request.timeoutInterval ?? settings.timeout
        let activity = idleMonitor.watch(task, timeout: timeout)
        let result: Result<FetchOutcome, HalcyonError>
        do {
            result = .success(try await run(task, activity: activity))
        } catch let error as HalcyonError {
            result = .failure(error)
        } catch {
            result = .failure(Self.map(error, url: task.url, timeout: timeout))
        }
        // A timeout that fired after the body was complete loses to the result.
        if activity.end(), case .failure = result {
            return .failure(.responseError(reason: .timedOut(url: task.url, after: timeout)))
        }
        return result
    }

    // MARK: - Request loop

    private func run(_ task: SessionDataTask, activity: IdleMonitor.Watch) async throws -> FetchOutcome {
        let start = ContinuousClock.now
        let startDate = Date()
        var request = task.request
        let resume = resumable.take(task.url)
        if let resume {
            request.setValue("bytes=\(resume.data.count)-", forHTTPHeaderField: "Range")
            request.setValue(resume.validator, forHTTPHeaderField: "If-Range")
        }

        do {
            return try await follow(request, task: task, resume: resume, activity: activity, start: start, startDate: startDate)
        } catch {
            // A transport failure or timeout before new bytes arrived keeps the earlier partial body.
            if let resume, !(error is HalcyonError), !resumable.contains(task.url) {
                resumable.store(resume, for: task.url)
            }
            throw error
        }
    }

    private func follow(
        _ initial: ImageDownloadRequest,
        task: SessionDataTask,
        resume: ResumableDataStore.Entry?,
        activity: IdleMonitor.Watch,
        start: ContinuousClock.Instant,
        startDate: Date
    ) async throws -> FetchOutcome {
        let queueDuration = (start - task.enqueuedAt).timeInterval
        var request = initial
        var redirectCount = 0
        // The gate is told when each hop it let go has ended: at the next hop, or when this returns or throws.
        var endHop: (@Sendable () -> Void)?
        defer { endHop?() }
        while true {
            endHop?()
            endHop = nil
            activity.touch()
            var hopClient = client
            if let gate = settings.connectionGate {
                // The gate vets this hop; what it vetted (its URL) is what is sent.
                let connection = try await gate.connection(for: request.url)
                endHop = connection.finished
                hopClient = connection.client ?? client
                request.url = connection.url
            }
            let (answer, response) = try await send(try wireRequest(for: request), on: hopClient)
            // An answer whose body is not read (a refused head, an error) is cancelled; after a read this does nothing.
            defer { answer.finish() }
            activity.touch()
            let head = Self.head(of: response, url: request.url)

            if let location = redirectLocation(response) {
                redirectCount += 1
                guard redirectCount <= settings.maxRedirects else {
                    throw HalcyonError.requestError(reason: .tooManyRedirects(url: task.url, limit: settings.maxRedirects))
                }
                request = try await redirected(
                    request, to: location, answer: answer, response: response, head: head, task: task, activity: activity)
                continue
            }

            let headDuration = (ContinuousClock.now - start).timeInterval
            return try await receiveBody(
                answer, head: head, task: task, resume: resume, activity: activity,
                measure: { received, resumed in
                    NetworkMetrics(
                        originalURL: task.url, url: head.url, statusCode: head.statusCode,
                        redirectCount: redirectCount, startDate: startDate, queueDuration: queueDuration,
                        responseHeadDuration: headDuration, totalDuration: (ContinuousClock.now - start).timeInterval,
                        receivedBytes: received, resumedBytes: resumed, expectedBytes: head.expectedContentLength)
                })
        }
    }

    /// Sends one hop's request and waits for the head of its answer; the collector then reads (or drops) its body.
    ///
    /// An idempotent request whose connection closed before any of an answer arrived is sent once more: a pooled
    /// keep-alive connection the origin closed just as it was reused (common after a redirect without
    /// `Connection: close`). The closed connection has left the pool; the second attempt takes another pooled
    /// connection or a new one, and its failure is final. Both attempts share the idle timeout's window.
    private func send(_ wire: HTTPClient.Request, on client: HTTPClient) async throws -> (ResponseCollector, ResponseCollector.Head) {
        do {
            return try await exchange(wire, on: client)
        } catch where Self.closedBeforeAnswer(error) && Self.isIdempotent(wire.method) && !Task.isCancelled {
            return try await exchange(wire, on: client)
        }
    }

    /// Starts `wire` on `client` and waits for the head of its answer.
    ///
    /// The request is a client span, child of the task's trace context, from the start until the head arrives;
    /// its context goes to the origin in the request's headers (`traceparent` with W3C propagation).
    private func exchange(_ wire: HTTPClient.Request, on client: HTTPClient) async throws -> (ResponseCollector, ResponseCollector.Head) {
        var wire = wire
        let span = startSpan(wire.method.rawValue, context: ServiceContext.current ?? .topLevel, ofKind: .client)
        defer { span.end() }
        span.attributes["http.request.method"] = wire.method.rawValue
        span.attributes["server.address"] = wire.host
        span.attributes["server.port"] = wire.port
        InstrumentationSystem.instrument.inject(span.context, into: &wire.headers, using: TraceHeaderInjector())
        let answer = ResponseCollector()
        answer.start(wire, on: client, deadline: .now() + .hours(24))
        do {
            let head = try await answer.head()
            span.attributes["http.response.status_code"] = Int(head.status.code)
            if head.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
            return (answer, head)
        } catch {
            span.recordError(error)
            answer.finish()
            throw error
        }
    }

    /// Methods a client may send again after a failure (RFC 9110, 9.2.2).
    private static func isIdempotent(_ method: HTTPMethod) -> Bool {
        switch method {
        case .GET, .HEAD, .OPTIONS, .TRACE, .PUT, .DELETE: true
        default: false
        }
    }

    /// Whether `error` says the connection closed under a request before an answer's head arrived.
    private static func closedBeforeAnswer(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError { return error == .remoteConnectionClosed }
        if let error = error as? ChannelError { return error == .ioOnClosedChannel || error == .eof }
        if let error = error as? IOError { return error.errnoCode == ECONNRESET || error.errnoCode == EPIPE }
        return false
    }

    /// The request for a redirect to `location`: checked, the redirect's body drained, `See Other` turned into a
    /// GET, credentials dropped across origins, then handed to the task's redirect handler, which may change it or
    /// block the redirect.
    private func redirected(
        _ request: ImageDownloadRequest, to location: String, answer: ResponseCollector, response: ResponseCollector.Head,
        head: ImageDownloadResponse, task: SessionDataTask, activity: IdleMonitor.Watch
    ) async throws -> ImageDownloadRequest {
        guard let target = URL(string: location, relativeTo: request.url)?.absoluteURL,
              ImageDownloader.isFetchable(target) else {
            throw HalcyonError.requestError(reason: .invalidRedirect(url: request.url, location: location))
        }
        try await drain(answer, url: request.url, activity: activity)
        var next = request
        next.url = target
        if response.status == .seeOther { next.httpMethod = "GET" }
        if !Self.sameOrigin(request.url, target) { next.setValue(nil, forHTTPHeaderField: "Authorization") }
        if let handler = task.redirectHandler {
            guard let handled = await handler.handleHTTPRedirection(for: task, response: head, newRequest: next) else {
                throw HalcyonError.requestError(reason: .redirectBlocked(url: request.url, location: target))
            }
            // What the handler made is checked like the redirect's own target.
            guard ImageDownloader.isFetchable(handled.url) else {
                throw HalcyonError.requestError(reason: .invalidRedirect(url: request.url, location: handled.url.absoluteString))
            }
            next = handled
        }
        return next
    }

    // MARK: - Body

    private func receiveBody(
        _ answer: ResponseCollector,
        head: ImageDownloadResponse,
        task: SessionDataTask,
        resume: ResumableDataStore.Entry?,
        activity: IdleMonitor.Watch,
        measure: (Int, Int) -> NetworkMetrics
    ) async throws -> FetchOutcome {
        let url = task.url
        try validateHead(head, url: url, resuming: resume != nil)
        let prefix = try resumedPrefix(head: head, resume: resume, url: url)
        let resumedBytes = prefix.count

        let limit = settings.maxResponseBytes
        if let declared = head.expectedContentLength.map({ $0 + resumedBytes }), declared > limit {
            throw HalcyonError.responseError(reason: .tooLarge(url: url, limit: limit, received: declared))
        }
        // With a Content-Encoding the length counts encoded bytes, not the decoded body.
        let encoding = head.headers["content-encoding"]?.lowercased() ?? "identity"
        let expectedTotal = encoding == "identity" ? head.expectedContentLength.map { $0 + resumedBytes } : nil

        let body = try await readBody(
            answer, prefix: prefix, head: head, task: task, activity: activity,
            limit: limit, expectedTotal: expectedTotal)

        if let expectedTotal, body.count < expectedTotal {
            throw HalcyonError.responseError(reason: .truncatedBody(url: url, expected: expectedTotal, received: body.count))
        }
        guard body.count > 0 else { throw HalcyonError.responseError(reason: .emptyBody(url: url)) }
        let data = body.joined()
        return FetchOutcome(data: data, response: head, metrics: measure(data.count - resumedBytes, resumedBytes))
    }

    /// Checks the status code (delegate, or 200, 206 and 304), refuses a 206 that answers no resume's `Range`
    /// request (it is a part, never the image), refuses 304 and asks the delegate about the head.
    private func validateHead(_ head: ImageDownloadResponse, url: URL, resuming: Bool) throws {
        let delegate = settings.delegate
        let valid = delegate?.isValidStatusCode(head.statusCode, for: downloader)
            ?? ImageDownloader.isAcceptableStatus(head.statusCode)
        guard valid, head.statusCode != 206 || resuming else {
            throw HalcyonError.responseError(reason: .invalidHTTPStatusCode(url: url, statusCode: head.statusCode))
        }
        if head.statusCode == 304 {
            throw HalcyonError.responseError(reason: .notModified(url: url))
        }
        if let delegate, delegate.imageDownloader(downloader, didReceive: head) == .cancel {
            throw HalcyonError.responseError(reason: .rejected(url: url, message: "cancelled by the delegate on the response head"))
        }
    }

    /// The earlier partial body a 206 answer continues, after checking its Content-Range; empty otherwise.
    private func resumedPrefix(head: ImageDownloadResponse, resume: ResumableDataStore.Entry?, url: URL) throws -> Data {
        var prefix = Data()
        if let resume, head.statusCode == 206 {
            let contentRange = head.headers["content-range"]
            guard let contentRange, contentRange.lowercased().hasPrefix("bytes \(resume.data.count)-") else {
                throw HalcyonError.responseError(reason: .invalidRangeResponse(url: url, contentRange: contentRange))
            }
            prefix = resume.data
        }
        return prefix
    }

    /// Reads the body after `prefix`, enforcing the limit and reporting progress as chunks arrive;
    /// on a transport failure keeps the partial body for a resume.
    private func readBody(
        _ answer: ResponseCollector,
        prefix: Data,
        head: ImageDownloadResponse,
        task: SessionDataTask,
        activity: IdleMonitor.Watch,
        limit: Int,
        expectedTotal: Int?
    ) async throws -> BodyAccumulator {
        let url = task.url
        let validator = ResumableDataStore.validator(for: head)
        let reading = ResponseCollector.Reading(limit: limit, url: url, activity: activity, task: task, expectedTotal: expectedTotal)
        do {
            return try await answer.readBody(reading, after: BodyAccumulator(prefix: prefix, expectedTotal: expectedTotal))
        } catch let failure as ResponseCollector.Failure {
            let (error, body) = (failure.cause, failure.received)
            // A compressed body that inflates past the client's size limit (a decompression bomb) is too large; none
            // of it is kept for a resume.
            if case .limit? = error as? NIOHTTPDecompression.DecompressionError {
                throw HalcyonError.responseError(reason: .tooLarge(url: url, limit: limit, received: body.count))
            }
            if let message = Self.decodingFailure(error) {
                let coding = head.value(forHTTPHeaderField: "Content-Encoding") ?? ""
                throw HalcyonError.responseError(reason: .contentDecodingFailed(url: url, encoding: coding, message: message))
            }
            if let validator, body.count > 0, !(error is HalcyonError) {
                resumable.store(.init(data: body.joined(), validator: validator), for: url)
            }
            if error is HalcyonError || Task.isCancelled { throw error }
            if let expectedTotal, body.count < expectedTotal {
                throw HalcyonError.responseError(reason: .truncatedBody(url: url, expected: expectedTotal, received: body.count))
            }
            throw error
        }
    }

    /// Reads and drops the body of a redirect answer so its connection can be reused.
    private func drain(_ answer: ResponseCollector, url: URL, activity: IdleMonitor.Watch) async throws {
        let reading = ResponseCollector.Reading(limit: settings.maxResponseBytes, url: url, activity: activity)
        do {
            _ = try await answer.readBody(reading, after: BodyAccumulator(prefix: Data()))
        } catch let failure as ResponseCollector.Failure {
            throw failure.cause
        }
    }

    // MARK: - Helpers

    /// The AsyncHTTPClient request for `request`, with credentials and the default headers.
    private func wireRequest(for request: ImageDownloadRequest) throws -> HTTPClient.Request {
        let method = request.httpMethod == "GET" ? HTTPMethod.GET : HTTPMethod(rawValue: request.httpMethod.uppercased())
        var wire = try HTTPClient.Request(url: request.url.absoluteString, method: method)
        for field in request.orderedHeaderFields {
            wire.headers.add(name: field.name, value: field.value)
        }
        if !settings.credentials.isEmpty, request.value(forHTTPHeaderField: "Authorization") == nil,
           let host = request.url.host?.lowercased(), let credential = settings.credentials[host] {
            wire.headers.add(name: "Authorization", value: credential.authorizationHeaderValue)
        }
        if request.value(forHTTPHeaderField: "Accept-Encoding") == nil {
            wire.headers.add(name: "Accept-Encoding", value: "gzip, deflate")
        }
        return wire
    }

    private func redirectLocation(_ response: ResponseCollector.Head) -> String? {
        ImageDownloader.redirectStatuses.contains(Int(response.status.code)) ? response.headers.first(name: "location") : nil
    }

    private static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased() && a.port == b.port
    }

    private static func head(of response: ResponseCollector.Head, url: URL) -> ImageDownloadResponse {
        ImageDownloadResponse(url: url, statusCode: Int(response.status.code), fields: response.headers.lazy.map { ($0.name, $0.value) })
    }

    /// What went wrong in NIO's decompressor, for a body its coding does not decode; nil for any other error.
    static func decodingFailure(_ error: any Error) -> String? {
        if case .inflationError(let code)? = error as? NIOHTTPDecompression.DecompressionError {
            return "the compressed data is corrupt or not in its coding (zlib error \(code))"
        }
        switch error as? NIOHTTPDecompression.ExtraDecompressionError {
        case .invalidTrailingData?: return "data follows the end of the compressed body (a second gzip member is not decoded)"
        case .truncatedData?: return "the compressed body ends before its compressed data does"
        default: return nil
        }
    }

    /// Turns a transport error into a ``HalcyonError`` with the URL and the cause.
    static func map(_ error: any Error, url: URL, timeout: TimeInterval) -> HalcyonError {
        if error is CancellationError { return .requestError(reason: .taskCancelled(task: nil, token: nil)) }
        if let error = error as? InvalidResponseStatus {
            return .responseError(reason: .invalidHTTPStatusCode(url: url, statusCode: error.code))
        }
        if let error = error as? UnsupportedContentEncoding {
            return .responseError(reason: .unsupportedContentEncoding(url: url, encoding: error.encoding))
        }
        if let message = decodingFailure(error) {
            return .responseError(reason: .contentDecodingFailed(url: url, encoding: "", message: message))
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .cancelled:
                return .requestError(reason: .taskCancelled(task: nil, token: nil))
            case .connectTimeout, .readTimeout, .deadlineExceeded, .writeTimeout:
                return .responseError(reason: .timedOut(url: url, after: timeout))
            case .alreadyShutdown:
                return .requestError(reason: .downloaderShutDown(url: url))
            default:
                return .responseError(reason: .networkError(url: url, message: String(describing: error)))
            }
        }
        if error is NIOConnectionError {
            return .requestError(reason: .cannotConnect(url: url, message: String(describing: error)))
        }
        // A reset, broken pipe or abort comes after the connection was made: a network error, not "cannot connect".
        if let error = error as? IOError, ![ECONNRESET, EPIPE, ECONNABORTED].contains(error.errnoCode) {
            return .requestError(reason: .cannotConnect(url: url, message: String(describing: error)))
        }
        if case ChannelError.connectTimeout = error {
            return .responseError(reason: .timedOut(url: url, after: timeout))
        }
        return .responseError(reason: .networkError(url: url, message: String(describing: error)))
    }
}

// MARK: - Body

/// The bytes of a body as they arrive, gathered into one `Data`.
///
/// A body that arrives in one read is kept as that read's buffer and becomes
/// `Data` without a copy. From the second chunk on, the bytes are copied as
/// they arrive into one `Data` sized for the announced length, so each read
/// buffer is released at once (the channel's pooled receive buffer is reused,
/// not reallocated) and nothing is joined at the end.
struct BodyAccumulator {
    /// How far beyond the bytes received an announced length may size the storage.
    static let lookahead = 4 * 1024 * 1024
    /// The only chunk so far, as it was read.
    private var first: ByteBuffer?
    /// Every byte so far, once there was more than one piece.
    private var gathered: Data?
    /// The capacity `gathered` was made with; the body fills it exactly when it is as long as announced.
    private var reserved = 0
    private let expected: Int?
    /// Bytes so far, prefix included.
    private(set) var count: Int

    /// An accumulator starting with `prefix` (a resumed body), expecting `expectedTotal` bytes in all when known.
    init(prefix: Data, expectedTotal: Int? = nil) {
        expected = expectedTotal
        count = prefix.count
        if !prefix.isEmpty {
            reserved = Self.capacity(arrived: prefix.count, expected: expectedTotal)
            var start = Data(capacity: reserved)
            start.append(prefix)
            gathered = start
        }
    }

    mutating func append(_ chunk: ByteBuffer) {
        guard chunk.readableBytes > 0 else { return }
        count += chunk.readableBytes
        if var data = gathered {
            gathered = nil
            Self.copy(chunk, to: &data)
            gathered = data
            return
        }
        guard let only = first else {
            first = chunk
            return
        }
        first = nil
        reserved = Self.capacity(arrived: only.readableBytes + chunk.readableBytes, expected: expected)
        var data = Data(capacity: reserved)
        Self.copy(only, to: &data)
        Self.copy(chunk, to: &data)
        gathered = data
    }

    /// Counts `bytes` that are dropped, not kept (a redirect's body).
    mutating func skip(_ bytes: Int) {
        count += bytes
    }

    /// The whole body, holding no more memory than its bytes: when the gathered storage is not exactly full
    /// (no length was announced, the body is not as long as announced, or it outgrew the reservation) the
    /// bytes are copied into storage of their size.
    func joined() -> Data {
        if let gathered {
            return gathered.count == reserved ? gathered : gathered.withUnsafeBytes { Data($0) }
        }
        return first.map { Data(buffer: $0, byteTransferStrategy: .noCopy) } ?? Data()
    }

    /// The storage to reserve once `arrived` bytes are in: the announced length, but at most `lookahead` beyond
    /// what arrived (a length alone does not buy memory); twice what arrived without one. Past it, appends
    /// grow the storage geometrically.
    static func capacity(arrived: Int, expected: Int?) -> Int {
        expected.map { min(max($0, arrived), arrived + lookahead) } ?? 2 * arrived
    }

    private static func copy(_ chunk: ByteBuffer, to data: inout Data) {
        chunk.withUnsafeReadableBytes { data.append($0.bindMemory(to: UInt8.self)) }
    }
}

extension Duration {
    /// This duration in seconds.
    var timeInterval: TimeInterval {
        let parts = components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }
}

/// Writes trace propagation fields into a request's headers.
struct TraceHeaderInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}
