import Foundation
import Halcyon
import HalcyonRedis
import Logging

/// What an ``ImageService`` built from a configuration owns and shuts down: the downloader, its SSRF gate, the
/// client of the shared result storage and the cache folder it made for itself.
struct ImageServiceResources: Sendable {
    let downloader: ImageDownloader
    let gate: AddressGate
    let sharedStore: RedisClient?
    /// The temporary cache folder made when no cache directory is configured; removed at shutdown.
    let ownedCacheFolder: URL?
    /// Set by the first shutdown, so a second does nothing.
    let shutDown = Locked(false)
}

extension ImageService {
    /// Builds the image service of `configuration` with everything it needs, without a server: the downloader with
    /// its SSRF gate (source host names are looked up with `resolver`), the manager with its caches, the result
    /// storage (local disk, and Redis when configured) and the metrics.
    ///
    /// Throws when the configuration does not pass ``ServerConfiguration/validate()`` or a file it names cannot
    /// be used. Call ``shutdown()`` when done with it (``HalcyonImageRoutes`` does, as a `Service`); without a
    /// cache directory its cache lives in a temporary folder that the shutdown removes.
    public convenience init(
        configuration: ServerConfiguration, logger: Logger,
        resolver: @escaping @Sendable (String) -> [IPAddress] = { IPAddress.resolve($0) }
    ) throws {
        try configuration.validate()
        let downloader = ImageDownloader(name: "halcyon-server")
        downloader.downloadTimeout = configuration.downloadTimeout
        downloader.maxResponseBytes = configuration.maxSourceBytes
        downloader.maxRedirects = configuration.maxRedirects
        downloader.maxConcurrentDownloads = max(6, configuration.maxInFlight)
        let gate = AddressGate(
            policy: AddressPolicy(allowLoopback: configuration.allowLoopback, allowPrivate: configuration.allowPrivate),
            timeout: configuration.downloadTimeout,
            allowedSources: try configuration.sourceAllowList(),
            maxInflatedBytes: configuration.maxSourceBytes,
            logger: logger,
            resolver: resolver)
        downloader.connectionGate = gate

        let folder: URL
        let ownedCacheFolder: URL?
        if let directory = configuration.cacheDirectory {
            folder = URL(fileURLWithPath: directory)
            ownedCacheFolder = nil
        } else {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-server-\(UUID().uuidString)")
            ownedCacheFolder = folder
        }
        // The manager's own cache holds decoded images only when the operator asks for it
        // (memoryCacheMegabytes > 0); results are kept encoded, in the response cache and on disk.
        let disk = try DiskStorage.Backend(config: DiskStorage.Config(name: "halcyon-server", directory: folder))
        let memory = MemoryStorage.Backend<Image>(config: MemoryStorage.Config(totalCostLimit: configuration.memoryCacheMegabytes * 1024 * 1024))
        let manager = HalcyonManager(downloader: downloader, cache: ImageCache(memoryStorage: memory, diskStorage: disk))
        let metrics = ServerMetrics()
        let redis = try configuration.redisConfiguration().map { RedisClient(configuration: $0) }
        let results = ResultStorage(
            local: try DiskDataStorage(name: "halcyon-results", folder: folder, megabytes: configuration.diskCacheMegabytes),
            shared: redis.map { RedisDataStorage(client: $0) },
            sharedLifetime: configuration.redisTTL > 0 ? .seconds(configuration.redisTTL) : nil,
            metrics: metrics, logger: logger)
        let resources = ImageServiceResources(
            downloader: downloader, gate: gate, sharedStore: redis, ownedCacheFolder: ownedCacheFolder)
        try self.init(
            configuration: configuration, manager: manager, results: results, metrics: metrics, logger: logger,
            resources: resources)
    }

    /// Shuts the downloader, the SSRF gate and the shared storage's client down and removes the temporary cache
    /// folder; once (later calls do nothing). Call it after the last request has been answered.
    public func shutdown() async {
        let first = resources.shutDown.withLock { done in defer { done = true }; return !done }
        guard first else { return }
        await resources.downloader.shutdown()
        await resources.gate.shutdown()
        await resources.sharedStore?.shutdown()
        if let folder = resources.ownedCacheFolder { try? FileManager.default.removeItem(at: folder) }
    }
}
