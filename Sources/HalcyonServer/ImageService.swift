import Crypto
import Foundation
import Halcyon
import Hummingbird
import Logging
import NIOCore
import Tracing

/// The handlers of the image service: `/health`, `/metrics`, `/info` and image paths, which
/// ``HalcyonImageRoutes`` routes in any Hummingbird 2 app.
///
/// An image request is answered here: the response cache, the signature, options, source policy, the
/// stored results, the ``Admission`` (a slot with a queue deadline, then memory by estimate from the
/// source's header), Halcyon's `HalcyonManager` (its caches and coalescing), one encode and the response
/// headers. The work stops when the request stops (timeout, client hang-up, shutdown deadline; see
/// ``Admission``).
public final class ImageService: Sendable {
    /// The settings.
    public let configuration: ServerConfiguration
    /// The manager all processing goes through.
    public let manager: HalcyonManager
    /// The metrics.
    public let metrics: ServerMetrics
    /// Slots, memory, timeouts and cancellation of running work.
    public let admission: Admission
    /// The connection-level limits, whose hang-up watch the admission uses.
    public let connections: ConnectionLimits
    /// How the output format and quality are chosen (Accept negotiation, defaults, fallbacks).
    public let encodingPolicy = OutputEncodingPolicy.default
    /// What the `Accept` headers seen negotiate under ``encodingPolicy``, so a cached hit does not parse its header again.
    let negotiatedFormats: NegotiatedFormats
    let signer: URLSigner?
    private let resolver: SourceResolver
    let responses: ResponseCache
    private let results: ResultStorage
    /// The operator's stand-in for failed sources.
    private let fallback: FallbackImage?
    /// The operator's presets.
    let presets: ProcessingOptions.Presets
    /// The image `wm:` draws, when configured.
    let watermark: WatermarkSource?
    private let health: HealthMonitor
    let logger: Logger
    /// The SSRF gate of the downloader, which looks a source's host up before its download takes a slot.
    private let gate: AddressGate
    /// What this service owns and shuts down (``shutdown()``).
    let resources: ImageServiceResources
    /// The shared pipeline's bounded encode queue (as wide as the core count), for CPU work asked outside a render
    /// slot (`/info`'s); an image request's encode runs in its ``renderQueue`` slot instead.
    let encodeQueue = PipelineQueues.shared.encode
    /// The queue a request's work after its download runs in (the shared decode queue): the header, decode,
    /// processing and encode of one request run on one of its threads, in one slot.
    let renderQueue = PipelineQueues.shared.decode

    /// Makes the handlers over `resources`; `configuration` must have passed ``ServerConfiguration/validate()``.
    init(
        configuration: ServerConfiguration, manager: HalcyonManager, results: ResultStorage, metrics: ServerMetrics, logger: Logger,
        resources: ImageServiceResources
    ) throws(ServerConfiguration.ConfigurationError) {
        self.resources = resources
        gate = resources.gate
        self.configuration = configuration
        self.manager = manager
        self.results = results
        self.metrics = metrics
        self.logger = logger
        fallback = try configuration.fallbackImage.map { path throws(ServerConfiguration.ConfigurationError) in try FallbackImage(path: path) }
        presets = try configuration.presetTable()
        watermark = try configuration.watermarkPath.map { path throws(ServerConfiguration.ConfigurationError) in try Self.loadWatermark(path) }
        let pairs = try configuration.keyPairs()
        signer = pairs.isEmpty ? nil : URLSigner(pairs: pairs)
        resolver = SourceResolver(localRoot: configuration.localRoot, allowedPrefixes: configuration.allowedSources)
        responses = ResponseCache(limit: configuration.responseCacheMegabytes * 1024 * 1024, lifetime: 300)
        health = HealthMonitor()
        negotiatedFormats = NegotiatedFormats(policy: encodingPolicy)
        connections = ConnectionLimits(
            maxConnections: configuration.maxConnections, headerTimeout: .nanoseconds(Int64(configuration.headerTimeout * 1e9)),
            writeTimeout: .nanoseconds(Int64(configuration.writeTimeout * 1e9)), metrics: metrics)
        admission = Admission(configuration: configuration, hangUps: connections.hangUps)
    }

    /// The decoding limits and strictness from the configuration.
    var decodingLimits: ImageDecodingOptions {
        var options = ImageDecodingOptions()
        options.maxPixelCount = Int(configuration.maxSourceMegapixels * 1_000_000)
        options.maxFrameCount = configuration.maxAnimationFrames > 1 ? min(configuration.maxFrames, configuration.maxAnimationFrames) : configuration.maxFrames
        options.onlyFirstFrame = configuration.maxAnimationFrames <= 1
        options.strictness = configuration.decodeStrictness
        return options
    }

    // MARK: - Health and metrics

    /// The `/metrics` answer.
    public func metricsResponse() -> Response {
        let counts = connections.counts
        metrics.connections(open: counts.open, waiting: counts.waiting)
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.render())))
    }

    /// The `/health` answer: 200 while libvips makes, resizes and encodes an image (checked at most once a second), else 503.
    public func healthResponse() async throws -> Response {
        guard await health.isHealthy() else {
            throw ServerError(status: 503, code: "unhealthy", message: "libvips cannot make and encode an image")
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
    }

    // MARK: - Image requests

    /// Answers an image request (GET or HEAD) whose image path is `path`: the request's path below the route's
    /// mount prefix, as sent.
    ///
    /// In order: the response cache (a hit answers before anything else is read; an entry exists only for a path
    /// that passed the next steps once), the path parsed once and its signature checked (400, 403), then the
    /// request is read into its ``ImageRequestPlan``, whose key finds a stored result; otherwise the work runs
    /// under the ``admission`` (a slot, then memory from the source's header) and its result is stored under that
    /// key. Without a `channel` there is no hang-up signal (see ``Admission``).
    func image(_ request: Request, path: String, record: RequestRecord, channel: (any Channel)?) async throws -> Response {
        record.route = "image"
        if let answer = cachedAnswer(path: path, headers: request.headers) {
            record.cacheTier = "response"
            return answer.response
        }
        let parsed = try Self.parsePath(path)
        if let signer, !signer.verify(signature: parsed.signature, path: parsed.signedPath) {
            throw ServerError(status: 403, code: "invalid_signature", message: "the signature does not match")
        }
        metrics.enter()
        defer { metrics.leave() }
        try Self.refuseBody(request.headers)
        let plan = try plan(for: request, path: parsed)

        let rawKey = responseCacheKey(path: path, accept: request.headers[.accept])
        if plan.storesResult, let stored = await results.value(for: plan.cacheKey) {
            metrics.cache(stored.tier)
            record.cacheTier = stored.tier
            return remember(stored.entry, rawKey: rawKey, request: request, plan: plan)
        }
        let (limits, maxSide, watermark, identifier) = (decodingLimits, configuration.maxResultDimension, watermark,
                                                        "halcyon.server.plan(\(plan.cacheKey))")
        let work = Work(output: plan.output, record: record) { opened in
            plan.options.processor(limits: limits, maxSide: maxSide, watermark: watermark, identifier: identifier, opened: opened)
        }
        let entry: ResponseCache.Entry
        do {
            try checkLocalSize(plan.source)
            entry = try await admitted(plan.source, work, on: channel)
        } catch let failure as ServerError where fallback != nil && FallbackImage.replaces(failure) {
            return try await fallbackResponse(failure, work: work, channel: channel)
        }
        if plan.storesResult { results.store(entry, for: plan.cacheKey) }
        return remember(entry, rawKey: rawKey, request: request, plan: plan)
    }

    /// The fallback image processed like the request, with `failure`'s status; `failure` itself when there is none.
    private func fallbackResponse(_ failure: ServerError, work: Work, channel: (any Channel)?) async throws -> Response {
        guard let fallback else { throw failure }
        work.record.errorCode = failure.code
        var plain = work
        (plain.output.options.raw, plain.output.options.skipProcessing) = (false, [])
        let work = plain
        let entry = try await admitted(fallback.source, work, on: channel)
        return FallbackImage.response(entry, failure: failure)
    }

    /// The parsed image path, or a 400 naming the problem.
    static func parsePath(_ path: String) throws(ServerError) -> ImageRequestPath {
        do {
            return try ImageURLParser.parse(path)
        } catch {
            throw ServerError(status: 400, code: "invalid_path", message: error.message)
        }
    }

    func resolve(_ text: String) throws(ServerError) -> Source {
        do {
            return try resolver.resolve(text)
        } catch {
            switch error {
            case .invalid(let message): throw ServerError(status: 400, code: "invalid_source", message: message)
            case .notAllowed: throw ServerError(status: 403, code: "source_not_allowed", message: "the source is not under an allowed prefix")
            case .escapesRoot: throw ServerError(status: 403, code: "path_escape", message: "the local path leaves the root")
            case .notFound: throw ServerError(status: 404, code: "source_not_found", message: "no such local file")
            case .hardLinked: throw ServerError(status: 403, code: "hard_linked", message: "the local file has more than one hard link")
            }
        }
    }

    func checkLocalSize(_ source: Source) throws(ServerError) {
        if case .provider(let provider) = source, let url = provider.contentURL,
           let size = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int,
           size > configuration.maxSourceBytes {
            throw ServerError(status: 422, code: "source_too_large", message: "the source is larger than \(configuration.maxSourceBytes) bytes")
        }
    }

    /// What one request's work needs besides its source.
    struct Work: Sendable {
        var output: OutputRequest
        let record: RequestRecord
        /// The chain (nil when nothing is asked), which decodes from the given header when it was opened from the
        /// bytes it is handed; the identifier is the same with or without one.
        let processor: @Sendable (ImageDecoder.OpenedImage?) -> (any ImageProcessor)?
    }

    /// The encoded result of `work` on `source`, produced under the admission for the request on `channel` (nil: no
    /// hang-up signal): a slot,
    /// then ``produce(_:_:ticket:)`` with the ticket that reserves memory for the request's options and output
    /// format; the slot and memory are given back when this returns.
    ///
    /// Throws the admission's 429, 499, 503 and 504, else what `produce` throws.
    private func admitted(_ source: Source, _ work: Work, on channel: (any Channel)?) async throws -> ResponseCache.Entry {
        try await admission.run(on: channel, options: work.output.options, output: work.output.explicit ?? work.output.negotiated) { ticket in
            try await self.produce(source, work, ticket: ticket)
        }
    }

    /// Reads the source, reserves its memory with `ticket` from the header, processes and encodes it; cancelling the
    /// calling task stops every step.
    ///
    /// In order: the host's lookup (DNS waits here, on the request's task, not in a downloader slot); the source's
    /// bytes (`raw` and `skp` answer with them when they apply); the header, whose result size is checked and whose
    /// memory estimate is reserved, suspending while the budget is short; then the manager decodes and processes
    /// the bytes, and the result is encoded. With the manager's memory cache on, an image it holds is used first.
    private func produce(_ source: Source, _ work: Work, ticket: Admission.Ticket) async throws -> ResponseCache.Entry {
        if source.isRemote, let url = source.url {
            do { try await gate.prepare(url) } catch { throw serverError(for: error) }
        }
        let started = ContinuousClock.now
        var downloaded = Duration.zero
        var data: Data?
        if !heldInMemory(source, work) {
            let fetched = try await sourceData(source)
            if source.isRemote {
                downloaded = ContinuousClock.now - started
                metrics.download(downloaded)
            }
            if let entry = try passThrough(fetched, output: work.output) { return entry }
            data = fetched
        }
        // From here the task runs in a render queue slot: its decode, processing and encode run on that thread.
        let entry = try await withTaskExecutorPreference(renderQueue) {
            try await self.render(source, data: data, work, ticket: ticket)
        }
        metrics.processing(max(.zero, (ContinuousClock.now - started) - downloaded))
        metrics.computed()
        return entry
    }

    /// The encoded result from `data` (the source's bytes; nil when the manager's memory cache holds the image): the
    /// header's reservation, the manager's decode and processing, the encode.
    private func render(_ source: Source, data: Data?, _ work: Work, ticket: Admission.Ticket) async throws -> ResponseCache.Entry {
        var input = source
        let processor: (any ImageProcessor)?
        if let data {
            processor = try await work.processor(reserve(data, ticket: ticket))
            input = .provider(RawImageDataProvider(data: data, cacheKey: source.cacheKey))
        } else {
            processor = work.processor(nil)
        }
        let image = try await retrieve(input, processor: processor, record: work.record)
        let span = startSpan("halcyon.encode", context: ServiceContext.current ?? .topLevel)
        defer { span.end() }
        let encoded: (body: Data, format: ImageFormat)
        do {
            encoded = try await encode(image, output: work.output)
        } catch {
            span.recordError(error)
            throw error
        }
        span.attributes["halcyon.format"] = encoded.format.rawValue
        span.attributes["halcyon.bytes"] = encoded.body.count
        return ResponseCache.Entry(body: encoded.body, contentType: encoded.format.mimeType, etag: Self.etag(encoded.body))
    }

    /// Whether the manager's memory cache holds the processed image of `source` for `work` (only when that cache has a
    /// size; otherwise no processor is made here).
    private func heldInMemory(_ source: Source, _ work: Work) -> Bool {
        guard configuration.memoryCacheMegabytes > 0 else { return false }
        let identifier = work.processor(nil)?.identifier ?? ""
        return manager.cache.imageCachedType(forKey: source.cacheKey, processorIdentifier: identifier) == .memory
    }

    /// Opens the header of `data` and hands it to `ticket`, which checks the result's size and reserves the memory
    /// estimate (suspending while the budget is short); throws the 4xx naming the problem, before any decoding.
    /// Returns the opened header, which the render decodes from.
    private func reserve(_ data: Data, ticket: Admission.Ticket) async throws -> ImageDecoder.OpenedImage {
        do throws(HalcyonError) {
            let opened = try ImageDecoder.open(data, options: decodingLimits)
            try await ticket.reserve(opened, source: data)
            return opened
        } catch {
            throw serverError(for: error)
        }
    }

    /// The processed image through the manager, with the server's limits, checked against the result limits.
    private func retrieve(_ source: Source, processor: (any ImageProcessor)?, record: RequestRecord) async throws -> Image {
        // The service keeps results encoded (response cache, result storage); the manager
        // keeps decoded images in memory only when the operator gave that cache a size.
        var items: HalcyonOptionsInfo = [
            .retryFailed,
            .maxPixelCount(decodingLimits.maxPixelCount),
            .maxFrameCount(decodingLimits.maxFrameCount),
            .decodingStrictness(decodingLimits.strictness),
            .callbackQueue(.untouch),
            .cacheMemoryOnly,
        ]
        if let processor { items.append(.processor(processor)) }
        if decodingLimits.onlyFirstFrame { items.append(.onlyLoadFirstFrame) }
        if configuration.memoryCacheMegabytes == 0 { items.append(.forceRefresh) }
        let result: RetrieveImageResult
        do {
            result = try await manager.retrieveImage(with: source, options: items)
        } catch {
            throw serverError(for: error)
        }
        metrics.cache(Self.cacheName(result.cacheType))
        record.cacheTier = Self.cacheName(result.cacheType)
        try checkResult(result.image)
        return result.image
    }

    /// A strong ETag for a body: the first 16 bytes of its SHA-256, quoted.
    static func etag(_ body: Data) -> String {
        "\"" + Data(SHA256.hash(data: body).prefix(16)).hexString + "\""
    }

    /// The watermark image at `path`, decoded once; its name carries the size and modification time.
    static func loadWatermark(_ path: String) throws(ServerConfiguration.ConfigurationError) -> WatermarkSource {
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            let image = try Image(data: data)
            let stamp = ((try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            return WatermarkSource(image: image, name: "\(Data(SHA256.hash(data: data).prefix(8)).hexString)-\(Int(stamp))")
        } catch {
            throw .init(message: "cannot use the watermark image \(path): \(error)")
        }
    }

    /// The answer for a retrieval error; the detail of an SSRF refusal goes to the log only.
    private func serverError(for error: HalcyonError) -> ServerError {
        if case .requestError(let reason) = error, case .connectionRefusedByGate(let url, let detail) = reason {
            logger.notice("source address forbidden", metadata: ["url": "\(url)", "detail": "\(detail)"])
        }
        return ServerError.from(error)
    }

    /// Refuses a result over the per-side or the megapixel limit (a backstop: both are checked from the header first).
    private func checkResult(_ image: Image) throws(ServerError) {
        let limit = configuration.maxResultDimension
        guard image.width <= limit, image.height <= limit else {
            throw ServerError(status: 422, code: "result_too_large",
                              message: "the result of \(image.width)x\(image.height) exceeds \(limit) pixels per side")
        }
        let pixels = image.width * image.height * max(1, image.frameCount)
        let maxPixels = Int(configuration.maxResultMegapixels * 1_000_000)
        guard pixels <= maxPixels else {
            throw ServerError(status: 422, code: "result_too_many_pixels",
                              message: "result of \(image.width)x\(image.height) x \(image.frameCount) frames exceeds \(maxPixels) pixels")
        }
    }

    // MARK: - Helpers

    /// `inline` or `attachment`, with the `fn:` name (or `image`) and the output format's extension, quoted and
    /// percent-encoded (RFC 6266 `filename*`).
    static func contentDisposition(_ options: ProcessingOptions, contentType: String) -> String {
        let base = options.filename ?? "image"
        let ext = ImageFormat.allCases.first { $0.mimeType == contentType }.map(\.fileExtension) ?? "bin"
        let name = base + "." + ext
        let ascii = String(name.unicodeScalars.map { $0.isASCII && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let encoded = name.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ascii
        return (options.attachment ? "attachment" : "inline") + "; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
    }

    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag = String(tag.dropFirst(2)) }
            return tag == etag
        }
    }

    static func cacheName(_ type: CacheType) -> String {
        switch type {
        case .memory: return "memory"
        case .disk: return "disk"
        case .none: return "none"
        }
    }
}
