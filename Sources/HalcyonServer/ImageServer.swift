import Foundation
import Halcyon
import Hummingbird
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
    public let gate: AddressGate
    private let downloader: ImageDownloader
    private let logger: Logger
    private let ownedCacheFolder: URL?
    private let ports = Locked<(main: Int?, metrics: Int?)>((nil, nil))

    /// Builds everything; throws on an invalid configuration.
    public init(configuration: ServerConfiguration, logger: Logger) throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger

        let downloader = ImageDownloader(name: "halcyon-server")
        downloader.downloadTimeout = configuration.downloadTimeout
        downloader.maxResponseBytes = configuration.maxSourceBytes
        downloader.maxRedirects = configuration.maxRedirects
        downloader.maxConcurrentDownloads = max(6, configuration.maxInFlight)
        let gate = AddressGate(
            policy: AddressPolicy(allowLoopback: configuration.allowLoopback, allowPrivate: configuration.allowPrivate),
            timeout: configuration.downloadTimeout,
            allowedSources: try configuration.sourceAllowList(),
            logger: logger)
        downloader.connectionGate = gate
        self.downloader = downloader
        self.gate = gate

        let folder: URL
        if let directory = configuration.cacheDirectory {
            folder = URL(fileURLWithPath: directory)
            ownedCacheFolder = nil
        } else {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-server-\(UUID().uuidString)")
            ownedCacheFolder = folder
        }
        let disk = try DiskStorage.Backend(config: DiskStorage.Config(
            name: "halcyon-server", sizeLimit: UInt(max(0, configuration.diskCacheMegabytes)) * 1024 * 1024, directory: folder))
        let memory = MemoryStorage.Backend<Image>(config: MemoryStorage.Config(totalCostLimit: configuration.memoryCacheMegabytes * 1024 * 1024))
        let manager = HalcyonManager(downloader: downloader, cache: ImageCache(memoryStorage: memory, diskStorage: disk))
        service = try ImageService(configuration: configuration, manager: manager, metrics: ServerMetrics(), logger: logger)
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
    public func run() async throws {
        if !configuration.isSigned {
            logger.critical("""
                !!! INSECURE MODE: no signing key is set, so ANY client can make this server fetch and process \
                ANY allowed URL. Set HALCYON_KEY and HALCYON_SALT before exposing it. !!!
                """)
        }
        let service = self.service
        let main = Application(
            responder: CallbackResponder<BasicRequestContext> { request, _ in await service.respond(to: request) },
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            onServerRunning: { [self] channel in ports.withLock { $0.main = channel.localAddress?.port } },
            logger: logger)
        var applications: [any Service] = [main]
        if let metricsPort = configuration.metricsPort {
            applications.append(Application(
                responder: CallbackResponder<BasicRequestContext> { request, _ in
                    request.uri.path == "/metrics" ? service.metricsResponse()
                        : Response(status: .notFound, headers: [.contentType: "application/json"],
                                   body: ResponseBody(byteBuffer: ByteBuffer(data: ServerError(status: 404, code: "not_found", message: "only /metrics here").body)))
                },
                configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: metricsPort), serverName: nil),
                onServerRunning: { [self] channel in ports.withLock { $0.metrics = channel.localAddress?.port } },
                logger: logger))
        }
        logger.info("halcyon serve on \(configuration.host):\(configuration.port)")
        defer { logger.info("halcyon serve stopped") }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for application in applications {
                    group.addTask { try await application.run() }
                }
                try await group.waitForAll()
            }
        } catch {
            await cleanUp()
            throw error
        }
        await cleanUp()
    }

    private func cleanUp() async {
        await downloader.shutdown()
        await gate.shutdown()
        if let ownedCacheFolder { try? FileManager.default.removeItem(at: ownedCacheFolder) }
    }
}

extension ImageServer {
    /// Runs a server with `configuration` until SIGTERM or SIGINT (graceful), logging to stderr at `logLevel`.
    ///
    /// `halcyon serve` is this after parsing its configuration. `onListening` gets the bound port.
    public static func runUntilSignalled(
        configuration: ServerConfiguration,
        logLevel: Logger.Level = .info,
        onListening: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws {
        var logger = Logger(label: "halcyon.serve")
        logger.logLevel = logLevel
        let server = try ImageServer(configuration: configuration, logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
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
