import Foundation
import Halcyon
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The image service as a swift-service-lifecycle `Service`: the HTTP server
/// (and the metrics server on its own port when configured), the manager with
/// its downloader, caches and SSRF gate.
///
/// Run it in a `ServiceGroup`; on graceful shutdown (SIGTERM/SIGINT or
/// `triggerGracefulShutdown()`) the servers stop accepting and finish the
/// requests in flight, then the downloader and gate shut down.
public final class ImageServer: Service {
    /// The settings.
    public let configuration: ServerConfiguration
    /// The request handler.
    public let service: ImageService
    /// The SSRF guard on the downloader.
    public var gate: AddressGate { service.resources.gate }
    private let logger: Logger
    private let ports = Locked<(main: Int?, metrics: Int?)>((nil, nil))

    /// Builds everything (``ImageService/init(configuration:logger:resolver:)``); throws on an invalid
    /// configuration. Source host names are looked up with `resolver` (getaddrinfo unless a test gives its own
    /// blocking function; see ``AddressGate``).
    public init(
        configuration: ServerConfiguration, logger: Logger,
        resolver: @escaping @Sendable (String) -> [IPAddress] = { IPAddress.resolve($0) }
    ) throws {
        self.configuration = configuration
        self.logger = logger
        service = try ImageService(configuration: configuration, logger: logger, resolver: resolver)
    }

    /// The bound main port once listening.
    public var port: Int? { ports.withLock { $0.main } }
    /// The bound metrics port once listening, when it has its own.
    public var metricsPort: Int? { ports.withLock { $0.metrics } }

    /// Waits until the main server (and the metrics server) listen; returns the main port.
    public func waitUntilListening(timeout: Duration = .seconds(20)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let (main, metrics) = ports.withLock { ($0.main, $0.metrics) }
            if let main, configuration.metricsPort == nil || metrics != nil { return main }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw ServerConfiguration.ConfigurationError(message: "the server did not start listening")
    }

    /// Runs the servers until graceful shutdown, then shuts the downloader down.
    ///
    /// On graceful shutdown the servers stop accepting and wait for the
    /// requests in flight; after ``ServerConfiguration/shutdownTimeout`` the
    /// work still running is cancelled (its clients get 503), and a second
    /// later every connection still open is closed (a client that does not
    /// read its answer would otherwise hold the shutdown for the write timeout).
    public func run() async throws {
        if !configuration.isSigned {
            logger.critical("""
                !!! INSECURE MODE: no signing key is set, so ANY client can make this server fetch and process \
                ANY allowed URL. Set HALCYON_KEY and HALCYON_SALT before exposing it. !!!
                """)
        }
        for warning in configuration.warnings { logger.warning("\(warning)") }
        var applications: [any Service] = [mainApplication()]
        if let metrics = metricsApplication() { applications.append(metrics) }
        logger.info("halcyon serve on \(configuration.host):\(configuration.port)")
        defer { logger.info("halcyon serve stopped") }
        // Freed image buffers stay in malloc's arenas (fragmented) unless given back: trim every 5 s.
        let trimmer = Task.detached(priority: .background) {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(5))
                MallocTuning.trim()
            }
        }
        defer { trimmer.cancel() }
        let admission = service.admission
        let connections = service.connections
        let deadline = configuration.shutdownTimeout
        let logger = self.logger
        do {
            try await withGracefulShutdownHandler {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for application in applications {
                        group.addTask { try await application.run() }
                    }
                    try await group.waitForAll()
                }
            } onGracefulShutdown: {
                Task {
                    try await Task.sleep(for: .seconds(deadline))
                    let running = admission.runningCount
                    if running > 0 { logger.notice("shutdown deadline passed: cancelling \(running) requests") }
                    admission.cancelAll()
                    try await Task.sleep(for: .seconds(1))
                    connections.closeAll()
                }
            }
        } catch {
            await cleanUp()
            throw error
        }
        await cleanUp()
    }

    /// The main port: the router with its middleware on HTTP/1 with the connection limits.
    private func mainApplication() -> some Service {
        let service = self.service
        let router = Router(context: ServerRequestContext.self)
        let log = RequestLogMiddleware(logger: logger, metrics: service.metrics, negativeCacheTTL: configuration.negativeCacheTTL)
        router.add(middleware: log)
        if configuration.traceEndpoint != nil { router.add(middleware: RequestTracingMiddleware()) }
        router.add(middleware: MethodGuardMiddleware())
        // The routes any Hummingbird app can mount, here at `/`.
        router.addRoutes(HalcyonImageRoutes(service: service, servesMetrics: configuration.metricsPort == nil).routes)
        // Hummingbird's own idle timeout; the connection policy (cap, head and write timeouts) is the limits'.
        let http = HTTP1Channel.Configuration(idleTimeout: .milliseconds(Int64(configuration.idleTimeout * 1000)))
        let server = ServerHTTP1Channel.builder(configuration: http, limits: service.connections)
        return Application(
            router: router,
            server: server,
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            onServerRunning: { [ports] channel in ports.withLock { $0.main = channel.localAddress?.port } },
            logger: logger)
    }

    /// `/metrics` on its own host and port, when configured.
    private func metricsApplication() -> (any Service)? {
        guard let metricsPort = configuration.metricsPort else { return nil }
        let service = self.service
        let router = Router(context: ServerRequestContext.self)
        router.add(middleware: RequestLogMiddleware(logger: logger, metrics: service.metrics, negativeCacheTTL: configuration.negativeCacheTTL))
        router.add(middleware: MethodGuardMiddleware())
        router.addRoutes(HalcyonImageRoutes(service: service).metricsRoutes)
        let http = HTTP1Channel.Configuration(idleTimeout: .milliseconds(Int64(configuration.idleTimeout * 1000)))
        return Application(
            router: router,
            server: ServerHTTP1Channel.builder(configuration: http, limits: nil),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.metricsHost ?? configuration.host, port: metricsPort), serverName: nil),
            onServerRunning: { [ports] channel in ports.withLock { $0.metrics = channel.localAddress?.port } },
            logger: logger)
    }

    private func cleanUp() async {
        await service.shutdown()
    }
}

extension ImageServer {
    /// Runs a server with `configuration` until SIGTERM or SIGINT (graceful), logging to stderr at `logLevel`.
    ///
    /// `halcyon serve` is this after parsing its configuration. `services` run alongside (a trace exporter) and
    /// stop after the server, so what it sends at shutdown is still exported. `onListening` gets the bound port.
    public static func runUntilSignalled(
        configuration: ServerConfiguration,
        logLevel: Logger.Level = .info,
        services: [any Service] = [],
        onListening: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws {
        // glibc makes up to 8 malloc arenas per core, each keeping freed image
        // buffers: RSS grows far past the budgets under concurrent work. Two
        // arenas keep it near what is live (MALLOC_ARENA_MAX, if set, wins).
        let environment = ProcessInfo.processInfo.environment
        if environment["MALLOC_ARENA_MAX"] == nil { MallocTuning.limitArenas(to: 2) }
        // Blocks under 8 MiB (source bodies, shrunk decodes, a 4 MP progressive JPEG's 8 MB of coefficients)
        // are reused from the arenas rather than mapped, faulted in and zeroed again for every request; larger
        // ones get their own mappings, handed back when freed. The heap top keeps up to 32 MiB free between
        // requests; the 5 s trim in `run()` hands the rest back (MALLOC_MMAP_THRESHOLD_ and
        // MALLOC_TRIM_THRESHOLD_, if set, win).
        if environment["MALLOC_MMAP_THRESHOLD_"] == nil { MallocTuning.mapLargeAllocations(from: 8 << 20) }
        if environment["MALLOC_TRIM_THRESHOLD_"] == nil { MallocTuning.keepFreeHeapTop(upTo: 32 << 20) }
        var logger = Logger(label: "halcyon.serve")
        logger.logLevel = logLevel
        let server = try ImageServer(configuration: configuration, logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services + [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        let announce = Task {
            if let port = try? await server.waitUntilListening() {
                logger.info("listening on \(configuration.host):\(port)")
                onListening(port)
            }
        }
        defer { announce.cancel() }
        try await group.run()
    }
}
