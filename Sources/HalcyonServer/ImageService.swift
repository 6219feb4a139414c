import Crypto
import Foundation
import Halcyon
import Hummingbird
import Logging
import NIOCore

/// The request handler: routes `/health`, `/metrics` and image paths, and
/// answers each image request through the ``HalcyonManager`` (its caches and
/// coalescing) with the safety checks and response headers of the service.
public final class ImageService: Sendable {
    /// The settings.
    public let configuration: ServerConfiguration
    /// The manager all processing goes through.
    public let manager: HalcyonManager
    /// The metrics.
    public let metrics: ServerMetrics
    private let signer: URLSigner?
    private let resolver: SourceResolver
    private let limiter: InFlightLimiter
    private let responses: ResponseCache
    private let health: HealthCheck
    private let logger: Logger
    private let encodeQueue = DispatchQueue(label: "halcyon.server.encode", qos: .userInitiated, attributes: .concurrent)
    private let serveMetricsHere: Bool

    /// Makes the handler; `configuration` must have passed ``ServerConfiguration/validate()``.
    public init(configuration: ServerConfiguration, manager: HalcyonManager, metrics: ServerMetrics, logger: Logger) throws(ServerConfiguration.ConfigurationError) {
        self.configuration = configuration
        self.manager = manager
        self.metrics = metrics
        self.logger = logger
        let pairs = try configuration.keyPairs()
        signer = pairs.isEmpty ? nil : URLSigner(pairs: pairs)
        resolver = SourceResolver(localRoot: configuration.localRoot, allowedPrefixes: configuration.allowedSources)
        limiter = InFlightLimiter(limit: configuration.maxInFlight, queue: configuration.maxQueue)
        responses = ResponseCache(limit: configuration.responseCacheMegabytes * 1024 * 1024, lifetime: 300)
        health = HealthCheck()
        serveMetricsHere = configuration.metricsPort == nil
    }

    /// The decoding limits from the configuration.
    var decodingLimits: ImageDecodingOptions {
        var options = ImageDecodingOptions()
        options.maxPixelCount = Int(configuration.maxSourceMegapixels * 1_000_000)
        options.maxFrameCount = configuration.maxFrames
        return options
    }

    // MARK: - Entry

    /// Answers one request.
    public func respond(to request: Request) async -> Response {
        let start = ContinuousClock.now
        let path = request.uri.path
        let route: String
        let response: Response
        if path == "/health" {
            route = "health"
            response = await healthResponse()
        } else if path == "/metrics" && serveMetricsHere {
            route = "metrics"
            response = metricsResponse()
        } else {
            route = "image"
            metrics.enter()
            response = await imageResponse(request)
            metrics.leave()
        }
        metrics.request(route: route, status: Int(response.status.code))
        metrics.total(ContinuousClock.now - start)
        return response
    }

    /// The `/metrics` answer.
    public func metricsResponse() -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.render())))
    }

    private func healthResponse() async -> Response {
        let ok = await withCheckedContinuation { continuation in
            encodeQueue.async { continuation.resume(returning: self.health.check()) }
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        if ok {
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        return errorResponse(ServerError(status: 503, code: "unhealthy", message: "libvips cannot make and encode an image"))
    }

    // MARK: - Image requests

    private func imageResponse(_ request: Request) async -> Response {
        do {
            return try await image(request)
        } catch let error as ServerError {
            return errorResponse(error)
        } catch let error as HalcyonError {
            return errorResponse(ServerError.from(error))
        } catch {
            return errorResponse(ServerError(status: 500, code: "internal", message: "internal error"))
        }
    }

    private func image(_ request: Request) async throws -> Response {
        guard request.method == .get || request.method == .head else {
            throw ServerError(status: 405, code: "method_not_allowed", message: "only GET and HEAD are served")
        }
        if let length = request.headers[.contentLength], length != "0" {
            throw ServerError(status: 413, code: "request_body_not_allowed", message: "requests must not have a body")
        }
        if request.headers[.transferEncoding] != nil {
            throw ServerError(status: 413, code: "request_body_not_allowed", message: "requests must not have a body")
        }

        let parsed: ImageRequestPath
        do {
            parsed = try ImageURLParser.parse(request.uri.path)
        } catch {
            throw ServerError(status: 400, code: "invalid_path", message: error.message)
        }
        if let signer {
            guard signer.verify(signature: parsed.signature, path: parsed.signedPath) else {
                throw ServerError(status: 403, code: "invalid_signature", message: "the signature does not match")
            }
        }
        let options: ProcessingOptions
        do {
            options = try ProcessingOptions.parse(parsed.options, maxDimension: configuration.maxResultDimension)
        } catch {
            throw ServerError(status: 400, code: "invalid_option", message: "option \"\(error.option)\": \(error.message)")
        }
        let source: Source
        do {
            source = try resolver.resolve(parsed.source)
        } catch {
            switch error {
            case .invalid(let message): throw ServerError(status: 400, code: "invalid_source", message: message)
            case .notAllowed: throw ServerError(status: 403, code: "source_not_allowed", message: "the source is not under an allowed prefix")
            case .escapesRoot: throw ServerError(status: 403, code: "path_escape", message: "the local path leaves the root")
            case .notFound: throw ServerError(status: 404, code: "source_not_found", message: "no such local file")
            case .hardLinked: throw ServerError(status: 403, code: "hard_linked", message: "the local file has more than one hard link")
            }
        }

        // Output format: extension or f:, else Accept, else the source's.
        let explicit = parsed.outputExtension ?? options.format
        let negotiated = explicit == nil ? Self.negotiate(accept: request.headers[.accept]) : nil
        let processor = options.processor(limits: decodingLimits)
        let responseKey = "\(source.cacheKey)@\(processor?.identifier ?? "")#\((explicit ?? negotiated)?.rawValue ?? "source")#\(options.quality ?? 0)"

        if let cached = responses.value(for: responseKey) {
            metrics.cache("response")
            return success(cached, request: request, varyAccept: explicit == nil)
        }

        if case .provider(let provider) = source, let url = provider.contentURL,
           let size = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int,
           size > configuration.maxSourceBytes {
            throw ServerError(status: 422, code: "source_too_large", message: "the source is larger than \(configuration.maxSourceBytes) bytes")
        }

        guard await limiter.acquire() else {
            var headers = HTTPFields()
            headers[.retryAfter] = "1"
            return errorResponse(ServerError(status: 429, code: "too_many_requests", message: "too many requests in flight"), extra: headers)
        }
        defer { limiter.release() }

        let entry = try await withRequestTimeout {
            try await self.produce(source: source, processor: processor, explicit: explicit, negotiated: negotiated, quality: options.quality)
        }
        responses.store(entry, for: responseKey)
        return success(entry, request: request, varyAccept: explicit == nil)
    }

    /// Retrieves, checks and encodes the image.
    private func produce(
        source: Source, processor: (any ImageProcessor)?, explicit: ImageFormat?, negotiated: ImageFormat?, quality: Int?
    ) async throws -> ResponseCache.Entry {
        var items: HalcyonOptionsInfo = [
            .retryFailed,
            .maxPixelCount(decodingLimits.maxPixelCount),
            .maxFrameCount(decodingLimits.maxFrameCount),
            .callbackQueue(.untouch),
        ]
        if let processor { items.append(.processor(processor)) }
        // A local file is its own durable copy: its results stay in memory, and
        // the disk cache keeps what came over the network.
        if case .provider = source { items.append(.cacheMemoryOnly) }
        let started = ContinuousClock.now
        let result = try await manager.retrieveImage(with: source, options: items)
        let image = result.image
        metrics.cache(Self.cacheName(result.cacheType))
        let downloadSeconds = result.metrics?.totalDuration ?? 0
        if downloadSeconds > 0 { metrics.download(.milliseconds(Int64(downloadSeconds * 1000))) }

        let limit = configuration.maxResultDimension
        guard image.width <= limit, image.height <= limit else {
            throw ServerError(status: 422, code: "result_too_large",
                              message: "the result of \(image.width)x\(image.height) exceeds \(limit) pixels per side")
        }
        let format = explicit ?? negotiated ?? image.originalFormat
        let encoding = Self.encoding(for: format, quality: quality, hasAlpha: image.hasAlpha)
        let body: Data = try await withCheckedThrowingContinuation { continuation in
            encodeQueue.async {
                do throws(HalcyonError) {
                    continuation.resume(returning: try ImageEncoder.encode(image, as: encoding))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        let processing = (ContinuousClock.now - started) - .milliseconds(Int64(downloadSeconds * 1000))
        metrics.processing(max(.zero, processing))
        let digest = SHA256.hash(data: body)
        let etag = "\"" + Data(digest.prefix(16)).hexString + "\""
        return ResponseCache.Entry(body: body, contentType: encoding.format.mimeType, etag: etag)
    }

    private func withRequestTimeout<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        let timeout = configuration.requestTimeout
        return try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
                throw ServerError(status: 504, code: "request_timeout", message: "the request took longer than \(timeout) s")
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    // MARK: - Responses

    private func success(_ entry: ResponseCache.Entry, request: Request, varyAccept: Bool) -> Response {
        var headers = HTTPFields()
        headers[.eTag] = entry.etag
        headers[.lastModified] = entry.lastModified
        headers[.cacheControl] = "public, max-age=\(configuration.cacheMaxAge)"
        headers[.contentSecurityPolicy] = "default-src 'none'; sandbox"
        headers[.xContentTypeOptions] = "nosniff"
        if varyAccept { headers[.vary] = "Accept" }
        if let match = request.headers[.ifNoneMatch], Self.matches(match, etag: entry.etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = entry.contentType
        headers[.contentLength] = String(entry.body.count)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: entry.body)))
    }

    private func errorResponse(_ error: ServerError, extra: HTTPFields = HTTPFields()) -> Response {
        metrics.error(code: error.code)
        // No Cache-Control on errors: only successes are declared cacheable.
        var headers = extra
        headers[.contentType] = "application/json"
        headers[.contentSecurityPolicy] = "default-src 'none'; sandbox"
        headers[.xContentTypeOptions] = "nosniff"
        let body = error.body
        headers[.contentLength] = String(body.count)
        return Response(status: HTTPResponse.Status(code: error.status), headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    // MARK: - Helpers

    /// AVIF, then WebP when `Accept` lists them and this libvips writes them; nil otherwise.
    static func negotiate(accept: String?) -> ImageFormat? {
        guard let accept = accept?.lowercased() else { return nil }
        let listed = Set(accept.split(separator: ",").compactMap { part -> String? in
            let fields = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let type = fields.first else { return nil }
            if fields.dropFirst().contains(where: { $0.replacingOccurrences(of: " ", with: "") == "q=0" }) { return nil }
            return type
        })
        if listed.contains("image/avif"), ImageEncodingFormat.avif().isAvailable { return .avif }
        if listed.contains("image/webp"), ImageEncodingFormat.webp().isAvailable { return .webp }
        return nil
    }

    static func encoding(for format: ImageFormat, quality: Int?, hasAlpha: Bool) -> ImageEncodingFormat {
        switch format {
        case .jpeg: return .jpeg(quality: quality ?? 85)
        case .webp: return .webp(quality: quality ?? 80)
        case .avif: return .avif(quality: quality ?? 60)
        case .png: return .png()
        case .gif: return .gif
        case .tiff: return .tiff
        case .heic, .bmp, .unknown: return hasAlpha ? .png() : .jpeg(quality: quality ?? 85)
        }
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
