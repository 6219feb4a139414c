import ArgumentParser
import Foundation
import Halcyon
import HalcyonServer
import ServiceLifecycle

/// `halcyon serve`: runs the HTTP image service until SIGTERM or SIGINT.
///
/// Settings come from the defaults, then `--config` (JSON), then `HALCYON_*`
/// environment variables, then these flags; `--print-config` shows the result.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve signed image URLs over HTTP (imgproxy-style).",
        discussion: """
            URLs: /{signature}/{options}/{base64url(source)}[.ext] or /{signature}/{options}/plain/{source}[@ext]. \
            Keys: HALCYON_KEY / HALCYON_SALT (hex, comma-separated for rotation). Without a key, --insecure serves \
            unsigned URLs. Every setting has a HALCYON_* variable (e.g. HALCYON_MAX_IN_FLIGHT).
            """
    )

    @Option(help: "A JSON config file (keys as printed by --print-config).") var config: String?
    @Option(help: "Address to bind.") var host: String?
    @Option(help: "Port to bind (0: any free port).") var port: Int?
    @Option(help: "Serve /metrics on this port instead of the main one.") var metricsPort: Int?
    @Option(help: "Address the metrics port binds to (default: --host).") var metricsHost: String?
    @Option(help: "Root folder for local:// sources.") var localRoot: String?
    @Option(help: "Allowed source: scheme://host[:port][/path], the path matched on segment boundaries, on every redirect hop (repeatable).") var allowSource: [String] = []
    @Flag(help: "Serve unsigned URLs (only when no key is set).") var insecure = false
    @Flag(help: "Let sources on loopback addresses through the SSRF guard.") var allowLoopback = false
    @Flag(help: "Let sources on private, link-local and CGNAT addresses through the SSRF guard.") var allowPrivate = false
    @Option(help: "Most requests processed at once.") var maxInFlight: Int?
    @Option(help: "Requests that may wait for a slot before 429.") var maxQueue: Int?
    @Option(help: "Longest wait in the queue, seconds, before 429.") var queueTimeout: Double?
    @Option(help: "Largest result in megapixels, all frames counted.") var maxResultMegapixels: Double?
    @Option(help: "Memory for images being worked on, MiB (admission budget).") var memoryBudget: Int?
    @Option(help: "Seconds shutdown waits for requests before cancelling them.") var shutdownTimeout: Double?
    @Option(help: "Seconds an idle keep-alive connection stays open.") var idleTimeout: Double?
    @Option(help: "Seconds a client has to send a request head.") var headerTimeout: Double?
    @Option(help: "Seconds an answer may wait for the client to read any of it before the connection is reset.") var writeTimeout: Double?
    @Option(help: "Most open client connections; past it, a new one replaces the one waiting longest (1 s or more) for its client.") var maxConnections: Int?
    @Option(help: "Largest source in bytes.") var maxSourceBytes: Int?
    @Option(help: "Largest source in megapixels.") var maxSourceMegapixels: Double?
    @Option(help: "Most animation frames.") var maxFrames: Int?
    @Option(help: "Largest result side in pixels.") var maxResultDimension: Int?
    @Option(help: "Damage a source may have: none, truncated (default), error or warning (libvips fail_on).") var failOn: String?
    @Option(help: "Download idle timeout, seconds.") var downloadTimeout: Double?
    @Option(help: "Request timeout, seconds.") var requestTimeout: Double?
    @Option(help: "Disk cache folder.") var cacheDir: String?
    @Option(help: "Shared result storage for a fleet: redis://[[user]:password@]host[:port][/db].") var redisURL: String?
    @Option(help: "Seconds a result lives in Redis (0: until Redis evicts it).") var redisTTL: Int?
    @Option(help: "Seconds one Redis call may take before it counts as a miss.") var redisTimeout: Double?
    @Option(help: "Cache-Control max-age of results, seconds.") var cacheMaxAge: Int?
    @Flag(help: "Add `immutable` to Cache-Control of signed results (sources never change).") var cacheImmutable = false
    @Option(help: "Cache-Control max-age of 404 and 422 answers, seconds (0: no-store).") var negativeCacheTTL: Int?
    @Option(help: "Export traces with OTLP/HTTP to this endpoint (e.g. http://127.0.0.1:4318); off when unset.") var traceEndpoint: String?
    @Option(help: "An image served (with the request's options and the failure's status) when a source fails.") var fallbackImage: String?
    @Option(help: "The image `wm:` draws over results (PNG with alpha works best).") var watermarkPath: String?
    @Option(help: "A named option list, name=rs:fill:300:300/q:80, used as pr:name (repeatable; `default` applies to every URL).")
    var preset: [String] = []
    @Flag(help: "Accept only preset names as the options of a URL.") var onlyPresets = false
    @Option(help: "Frames of an animated source that are processed (default 1: the first frame, as imgproxy).") var maxAnimationFrames: Int?
    @Flag(help: "Keep metadata unless a URL says sm:1 (default: strip all but copyright, as imgproxy).") var keepMetadata = false
    @Option(help: "Encoder quality when a URL gives none (default: JPEG 85, WebP 80, AVIF 60).") var quality: Int?
    @Flag(help: "Print the effective configuration and exit.") var printConfig = false

    func run() async throws {
        var settings: ServerConfiguration
        do {
            settings = try ServerConfiguration.load(file: config, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError(error.message)
        }
        try applyFlags(to: &settings)
        if printConfig {
            print(settings.printable())
            return
        }
        do {
            try settings.validate()
        } catch {
            throw ValidationError(error.message)
        }
        let tracing: (any Service)?
        do {
            tracing = try TraceExport.bootstrap(settings)
        } catch {
            throw ValidationError("cannot start trace export to \(settings.traceEndpoint ?? ""): \(error)")
        }
        try await ImageServer.runUntilSignalled(configuration: settings, services: tracing.map { [$0] } ?? [])
    }

    /// The command-line flags over the file and environment settings.
    private func applyFlags(to settings: inout ServerConfiguration) throws {
        if let host { settings.host = host }
        if let port { settings.port = port }
        if let metricsPort { settings.metricsPort = metricsPort }
        if let metricsHost { settings.metricsHost = metricsHost }
        if let localRoot { settings.localRoot = localRoot }
        if !allowSource.isEmpty { settings.allowedSources = allowSource }
        if insecure { settings.insecure = true }
        if allowLoopback { settings.allowLoopback = true }
        if allowPrivate { settings.allowPrivate = true }
        if let maxInFlight { settings.maxInFlight = maxInFlight }
        if let maxQueue { settings.maxQueue = maxQueue }
        if let queueTimeout { settings.queueTimeout = queueTimeout }
        if let maxResultMegapixels { settings.maxResultMegapixels = maxResultMegapixels }
        if let memoryBudget { settings.memoryBudgetMegabytes = memoryBudget }
        if let shutdownTimeout { settings.shutdownTimeout = shutdownTimeout }
        if let idleTimeout { settings.idleTimeout = idleTimeout }
        if let headerTimeout { settings.headerTimeout = headerTimeout }
        if let writeTimeout { settings.writeTimeout = writeTimeout }
        if let maxConnections { settings.maxConnections = maxConnections }
        if let maxSourceBytes { settings.maxSourceBytes = maxSourceBytes }
        if let maxSourceMegapixels { settings.maxSourceMegapixels = maxSourceMegapixels }
        if let maxFrames { settings.maxFrames = maxFrames }
        if let maxResultDimension { settings.maxResultDimension = maxResultDimension }
        if let failOn {
            guard let strictness = DecodingStrictness(rawValue: failOn.lowercased()) else {
                throw ValidationError("--fail-on must be none, truncated, error or warning")
            }
            settings.decodeStrictness = strictness
        }
        if let downloadTimeout { settings.downloadTimeout = downloadTimeout }
        if let requestTimeout { settings.requestTimeout = requestTimeout }
        if let cacheDir { settings.cacheDirectory = cacheDir }
        if let redisURL { settings.redisURL = redisURL }
        if let redisTTL { settings.redisTTL = redisTTL }
        if let redisTimeout { settings.redisTimeout = redisTimeout }
        if let cacheMaxAge { settings.cacheMaxAge = cacheMaxAge }
        if cacheImmutable { settings.cacheImmutable = true }
        if let negativeCacheTTL { settings.negativeCacheTTL = negativeCacheTTL }
        if let traceEndpoint { settings.traceEndpoint = traceEndpoint }
        if let fallbackImage { settings.fallbackImage = fallbackImage }
        if let watermarkPath { settings.watermarkPath = watermarkPath }
        if !preset.isEmpty { settings.presets = preset }
        if onlyPresets { settings.onlyPresets = true }
        if let maxAnimationFrames { settings.maxAnimationFrames = maxAnimationFrames }
        if let quality { settings.defaultQuality = quality }
        if keepMetadata { settings.stripMetadata = false }
    }
}
