import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// The image service's routes for any Hummingbird 2 application, generic over its request context: image paths
/// (`GET` and `HEAD`), `/info/**`, `/health` and `/metrics`, mounted at any path.
///
/// ```swift
/// let images = try HalcyonImageRoutes<BasicRequestContext>(configuration: configuration, logger: logger)
/// router.addRoutes(images.routes, atPath: "/img")
/// app.addServices(images)  // shuts the downloader and the caches down after the server
/// ```
///
/// Behind a prefix the signature covers the path below it (`/img/{signature}/{options}/{source}` signs
/// `/{options}/{source}`), as imgproxy does behind a path prefix; the path is taken as sent, percent-encoding and
/// empty segments kept. An image request is answered from the response cache first; otherwise its path is parsed
/// once and its signature checked (400, 403), then the image is made under the service's ``Admission``.
///
/// In another application's context each request these routes answer is logged and counted in `/metrics` as
/// `halcyon serve` does, and its errors are JSON answers. Such a context has no connection to watch: a client
/// hanging up is not seen, and its work ends at the request timeout or when the request's task is cancelled.
/// `halcyon serve` (``ImageServer``) mounts the same routes at `/` with ``ServerRequestContext``, which has one.
public struct HalcyonImageRoutes<Context: RequestContext>: Service {
    /// The handlers the routes call.
    public let service: ImageService
    /// Whether ``routes`` has `/metrics`.
    public let servesMetrics: Bool

    /// The routes of `service`; `/metrics` among them unless `servesMetrics` is false.
    public init(service: ImageService, servesMetrics: Bool = true) {
        self.service = service
        self.servesMetrics = servesMetrics
    }

    /// The routes of a new ``ImageService`` built from `configuration` (see
    /// ``ImageService/init(configuration:logger:resolver:)``); throws on an invalid configuration.
    ///
    /// Run the routes as a `Service` of the application (`app.addServices(_:)`), or call ``shutdown()`` once the
    /// server has stopped.
    public init(configuration: ServerConfiguration, logger: Logger) throws {
        self.init(service: try ImageService(configuration: configuration, logger: logger))
    }

    /// `/health`, `/metrics` (when served), `/info/**` and every other path as an image path, for `GET` and `HEAD`,
    /// to add with `addRoutes(_:atPath:)`.
    public var routes: RouteCollection<Context> {
        let service = self.service
        let collection = RouteCollection(context: Context.self)
        collection.get("health") { request, context in try await service.healthRoute(request, context: context) }
        collection.head("health") { request, context in
            try await service.healthRoute(request, context: context).createHeadResponse()
        }
        if servesMetrics { addMetrics(to: collection) }
        collection.get("info/**") { request, context in try await service.info(request, context: context) }
        collection.get("**") { request, context in try await service.image(request, context: context) }
        collection.head("**") { request, context in try await service.image(request, context: context) }
        return collection
    }

    /// `/metrics` alone (`GET` and `HEAD`), for an application of its own on another port.
    public var metricsRoutes: RouteCollection<Context> {
        let collection = RouteCollection(context: Context.self)
        addMetrics(to: collection)
        return collection
    }

    /// Waits for the graceful shutdown, then shuts the service down (``ImageService/shutdown()``).
    ///
    /// Add it to the application's services after the server's, so it stops after the server has answered the
    /// requests in flight (a `ServiceGroup` stops its services in reverse order; `app.addServices(_:)` does this).
    public func run() async throws {
        try? await gracefulShutdown()
        await service.shutdown()
    }

    /// Shuts the service down (``ImageService/shutdown()``); once.
    public func shutdown() async {
        await service.shutdown()
    }

    private func addMetrics(to collection: RouteCollection<Context>) {
        let service = self.service
        collection.get("metrics") { request, context in try await service.metricsRoute(request, context: context) }
        collection.head("metrics") { request, context in
            try await service.metricsRoute(request, context: context).createHeadResponse()
        }
    }
}

extension ImageService {
    /// Answers an image request (`GET` or `HEAD`) in any request context; its image path is the request's path below
    /// the route's mount prefix (the whole path at `/`), as sent.
    ///
    /// The response cache answers first; else the path is parsed and its signature checked (400, 403), then the
    /// image is made (see ``HalcyonImageRoutes``, which routes every image path here).
    public func image(_ request: Request, context: some RequestContext) async throws -> Response {
        let path = Self.pathBelowMount(request.uri.path, endpoint: context.endpointPath)
        return try await respond(request, context: context, loggedPath: path) { record, channel in
            try await self.image(request, path: path, record: record, channel: channel)
        }
    }

    /// Answers `GET {mount}/info/{signature}/{options}/{source}` in any request context: the source's header
    /// information as JSON, signed like image paths (the signature covers what follows it).
    public func info(_ request: Request, context: some RequestContext) async throws -> Response {
        let path = Self.pathBelowMount(request.uri.path, endpoint: context.endpointPath)
        return try await respond(request, context: context) { record, channel in
            try await self.info(path: path, record: record, channel: channel)
        }
    }

    /// The `/health` answer (``healthResponse()``) in any request context.
    func healthRoute(_ request: Request, context: some RequestContext) async throws -> Response {
        try await respond(request, context: context) { record, _ in
            record.route = "health"
            return try await self.healthResponse()
        }
    }

    /// The `/metrics` answer (``metricsResponse()``) in any request context.
    func metricsRoute(_ request: Request, context: some RequestContext) async throws -> Response {
        try await respond(request, context: context) { record, _ in
            record.route = "metrics"
            return self.metricsResponse()
        }
    }

    /// Runs `handler` with the request's record and connection: a ``ServerRequestContext``'s own (its router's
    /// log middleware renders, logs and counts the answer), else a new record and no connection, the answer then
    /// rendered, logged (as `loggedPath`, when given) and counted here.
    func respond<Context: RequestContext>(
        _ request: Request, context: Context, loggedPath: String? = nil,
        _ handler: (RequestRecord, (any Channel)?) async throws -> Response
    ) async throws -> Response {
        if let own = context as? ServerRequestContext { return try await handler(own.record, own.channel) }
        let record = RequestRecord()
        let log = RequestLogMiddleware(logger: logger, metrics: metrics, negativeCacheTTL: configuration.negativeCacheTTL)
        return try await log.answer(request, context: context, record: record, path: loggedPath) {
            try await handler(record, nil)
        }
    }

    /// `path` below the mount prefix of the route `endpoint` (its router path, ending in `**`; nil: the whole path):
    /// as many non-empty segments as the route has before `**` are dropped, as the router matched them, and the
    /// rest is kept as sent (its percent-encoding, empty segments and trailing slash).
    static func pathBelowMount(_ path: String, endpoint: String?) -> String {
        let depth = max(0, (endpoint?.split(separator: "/").count ?? 1) - 1)
        var rest = path[...]
        for _ in 0..<depth {
            rest = rest.drop { $0 == "/" }
            rest = rest.drop { $0 != "/" }
        }
        return String(rest)
    }
}
