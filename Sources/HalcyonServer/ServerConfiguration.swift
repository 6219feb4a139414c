import Foundation
import Halcyon

/// Every setting of the image service, with imgproxy-like safe defaults.
///
/// Values come from (later wins) the defaults, an optional JSON file, the
/// environment (`HALCYON_*`) and command-line flags; see ``load(file:environment:)``.
public struct ServerConfiguration: Sendable, Codable, Equatable {
    /// Address to bind. Default 127.0.0.1.
    public var host = "127.0.0.1"
    /// Port to bind; 0 picks a free one. Default 8080.
    public var port = 8080
    /// A separate port for `/metrics`; nil serves it on the main port.
    public var metricsPort: Int?
    /// Address the metrics port binds to; nil uses ``host``.
    public var metricsHost: String?
    /// Hex HMAC keys, each at least 32 bytes; pairs with `salts` by index. Empty with `insecure` serves unsigned URLs.
    public var keys: [String] = []
    /// Hex salts, one per key.
    public var salts: [String] = []
    /// Serve unsigned URLs; only allowed when no key is set.
    public var insecure = false
    /// Root folder for `local://` sources; nil disables them.
    public var localRoot: String?
    /// Allowed sources (e.g. `https://images.example.com/thumbs`): scheme, host, port and a path prefix
    /// matched on segment boundaries, checked on every redirect hop (see ``SourceAllowList``); empty allows any.
    public var allowedSources: [String] = []
    /// Let sources on loopback addresses through the SSRF guard.
    public var allowLoopback = false
    /// Let sources on private, link-local and CGNAT addresses through the SSRF guard.
    public var allowPrivate = false
    /// Most redirects followed per source. Default 10.
    public var maxRedirects = 10
    /// Largest source body in bytes. Default 20 MiB.
    public var maxSourceBytes = 20 * 1024 * 1024
    /// Largest source in megapixels (animations: all frames together). Default 50.
    public var maxSourceMegapixels = 50.0
    /// Most animation frames. Default 300.
    public var maxFrames = 300
    /// Largest width or height of a result. Default 8192.
    public var maxResultDimension = 8192
    /// How much damage in a source decoding tolerates (libvips' `fail_on`: none,
    /// truncated, error, warning); a refused source is 422. Default: the library's, truncated.
    public var decodeStrictness = DecodingStrictness.default
    /// Idle timeout of a source download in seconds. Default 10.
    public var downloadTimeout = 10.0
    /// Whole-request timeout in seconds (504 after). Default 30.
    public var requestTimeout = 30.0
    /// Most requests processed at once. Default 2 × cores.
    public var maxInFlight = max(2, ProcessInfo.processInfo.activeProcessorCount * 2)
    /// Requests that may wait for a processing slot; more get 429 at once. Default 8 × cores.
    public var maxQueue = max(16, ProcessInfo.processInfo.activeProcessorCount * 8)
    /// Longest wait in the queue (for a slot, then for image memory) in seconds; 429 after. Default 10.
    public var queueTimeout = 10.0
    /// Largest result in megapixels, all frames counted, refused from the source's header. Default 50.
    public var maxResultMegapixels = 50.0
    /// Memory for images being worked on, MiB: each request's estimate (what its
    /// loader and encoder hold, decoded source plus results, × frames; see
    /// `MemoryEstimate`) is admitted against it before decoding, `/info` too.
    /// Default: an eighth of the machine's memory, between 256 and 2048.
    public var memoryBudgetMegabytes = ServerConfiguration.defaultMemoryBudget
    /// Seconds a graceful shutdown waits for requests in flight before cancelling their work. Default 10.
    public var shutdownTimeout = 10.0
    /// Seconds an idle keep-alive connection is kept open. Default 10.
    public var idleTimeout = 10.0
    /// Seconds a client has to send the head of each request (slowloris guard). Default 10.
    public var headerTimeout = 10.0
    /// Seconds an answer may wait for the client to read any of it (nginx's
    /// `send_timeout`): a connection whose pending output makes no progress for
    /// this long is reset, and its pending answers are dropped. Default 10.
    public var writeTimeout = 10.0
    /// Most open client connections. Past it a new connection replaces the one
    /// that has waited longest for its client (for a request head, or to read
    /// an answer), if that one has waited at least 1 s, or is closed at once. Default 2048, lowered to leave 128 file
    /// descriptors free under the process's limit.
    public var maxConnections = ServerConfiguration.defaultMaxConnections
    /// `Cache-Control: max-age` of successful responses, seconds. Default 31536000.
    public var cacheMaxAge = 31_536_000
    /// Folder of the disk cache of encoded results of http(s) sources (results
    /// of local files stay in memory); nil uses a folder in the temporary directory.
    public var cacheDirectory: String?
    /// Disk cache size limit in MiB; 0 is unlimited. Default 1024.
    public var diskCacheMegabytes = 1024
    /// Decoded processed images kept in memory, MiB, for requests that differ only in
    /// output format or quality. Default 0: none (results are kept encoded instead).
    public var memoryCacheMegabytes = 0
    /// Encoded responses kept in memory, MiB (bodies, keys and headers). Default 16.
    public var responseCacheMegabytes = 16
    /// Shared result storage for a fleet, `redis://[[user]:password@]host[:port][/db]`; nil: none.
    /// Results computed by any node are written there and read on local misses.
    public var redisURL: String?
    /// Seconds a result lives in the shared storage; 0 keeps it until Redis evicts it. Default 604800 (a week).
    public var redisTTL = 604_800
    /// Seconds one call to the shared storage may take before it counts as a miss. Default 0.25.
    public var redisTimeout = 0.25
    /// Adds `immutable` to the `Cache-Control` of signed results: the operator promises sources never change. Default false.
    public var cacheImmutable = false
    /// `Cache-Control: max-age` of 404 and 422 answers, seconds; 0 sends `no-store`, as every other error does. Default 10.
    public var negativeCacheTTL = 10
    /// OTLP/HTTP endpoint traces are exported to (e.g. `http://127.0.0.1:4318`); nil: no tracing. The `halcyon`
    /// tool bootstraps the exporter; the server adds its spans whenever this is set.
    public var traceEndpoint: String?
    /// An image served, processed with the request's options, when the source fails (missing, unreachable,
    /// unusable), with the failure's status. nil: the JSON error.
    public var fallbackImage: String?
    /// The image `wm:` draws (PNG with alpha works best); nil: `wm:` is a 400.
    public var watermarkPath: String?
    /// Named option lists, `name=rs:fill:300:300/q:80`, used as `pr:name`; `default` applies to every request.
    public var presets: [String] = []
    /// Accept only preset names as the options of a URL.
    public var onlyPresets = false
    /// Frames of an animated source that are processed; 1 (imgproxy's default) serves the first frame as a still.
    public var maxAnimationFrames = 1
    /// Drop EXIF, XMP, IPTC and comments from results unless `sm:0`. Default true (imgproxy's).
    public var stripMetadata = true
    /// Keep EXIF copyright and artist when stripping, unless `kcr:0`. Default true.
    public var keepCopyright = true
    /// Drop the ICC profile (pixels are already sRGB) unless `scp:0`. Default true.
    public var stripColorProfile = true
    /// Encoder quality when the URL gives none; nil: the library's defaults (JPEG 85, WebP 80, AVIF 60).
    public var defaultQuality: Int?

    /// Makes the defaults.
    public init() {}

    /// An eighth of physical memory in MiB, clamped to 256...2048.
    public static var defaultMemoryBudget: Int {
        min(2048, max(256, Int(ProcessInfo.processInfo.physicalMemory / 8 / 1_048_576)))
    }

    /// 2048, or the open-file limit less 128 when that is lower (at least 16).
    public static var defaultMaxConnections: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(Int32.max) else { return 2048 }
        return max(16, min(2048, Int(clamping: limit.rlim_cur) - 128))
    }

    /// Whether URLs are checked against the keys.
    public var isSigned: Bool { !keys.isEmpty }

    /// The key/salt pairs, or an error naming the bad one.
    public func keyPairs() throws(ConfigurationError) -> [URLSigner.KeyPair] {
        guard keys.count == salts.count else {
            throw ConfigurationError(message: "\(keys.count) keys but \(salts.count) salts: give one salt per key")
        }
        var pairs: [URLSigner.KeyPair] = []
        for (index, key) in keys.enumerated() {
            guard let pair = URLSigner.KeyPair(hexKey: key, hexSalt: salts[index]) else {
                throw ConfigurationError(message: "key/salt pair \(index + 1) is not hex")
            }
            guard pair.key.count >= URLSigner.KeyPair.minimumKeyLength else {
                throw ConfigurationError(message: """
                    key \(index + 1) is \(pair.key.count) bytes; signing keys must be at least \(URLSigner.KeyPair.minimumKeyLength) bytes \
                    (\(URLSigner.KeyPair.minimumKeyLength * 2) hex digits, e.g. `openssl rand -hex 32`)
                    """)
            }
            pairs.append(pair)
        }
        return pairs
    }

    /// The allowed sources, parsed; an error names the first entry that is not an http(s) `scheme://host[:port][/path]`.
    public func sourceAllowList() throws(ConfigurationError) -> SourceAllowList {
        let list = SourceAllowList(allowedSources)
        if let bad = list.invalid.first {
            throw ConfigurationError(message: "allowed source \"\(bad)\" is not an http(s) URL of the form scheme://host[:port][/path] without userinfo")
        }
        return list
    }

    /// Settings that work but that an operator probably did not mean; the server logs each at startup.
    ///
    /// Today one: a connection cap at or below the requests in flight plus those queued, so that at full load every
    /// connection can hold a request and a new one (a `/health` probe too) is refused until one ends.
    public var warnings: [String] {
        let (busy, overflow) = maxInFlight.addingReportingOverflow(maxQueue)
        guard overflow || maxConnections <= busy else { return [] }
        return ["max-connections \(maxConnections) is not above max-in-flight \(maxInFlight) + max-queue \(maxQueue): "
                + "at full load every connection can hold a request, and new ones, /health probes too, are refused"]
    }

    /// Checks the settings that cannot work together.
    public func validate() throws(ConfigurationError) {
        _ = try keyPairs()
        _ = try sourceAllowList()
        if !isSigned && !insecure {
            throw ConfigurationError(message: "no signing key: set HALCYON_KEY and HALCYON_SALT, or pass --insecure to serve unsigned URLs")
        }
        if isSigned && insecure {
            throw ConfigurationError(message: "insecure mode is only allowed when no key is set")
        }
        guard maxInFlight > 0, maxQueue >= 0, maxResultDimension > 0, maxSourceBytes > 0, maxSourceMegapixels > 0, maxFrames > 0,
              maxResultMegapixels > 0, memoryBudgetMegabytes > 0, maxConnections > 0, maxAnimationFrames > 0,
              defaultQuality.map({ (1...100).contains($0) }) ?? true else {
            throw ConfigurationError(message: "limits must be positive")
        }
        guard diskCacheMegabytes >= 0, memoryCacheMegabytes >= 0, responseCacheMegabytes >= 0 else {
            throw ConfigurationError(message: "cache sizes must not be negative")
        }
        guard queueTimeout >= 0, shutdownTimeout >= 0, idleTimeout > 0, headerTimeout > 0, writeTimeout > 0 else {
            throw ConfigurationError(message: "timeouts must not be negative (idle, header and write timeouts above 0)")
        }
        let timeouts = [downloadTimeout, requestTimeout, queueTimeout, shutdownTimeout, idleTimeout, headerTimeout, writeTimeout, redisTimeout]
        guard timeouts.allSatisfy({ $0.isFinite && $0 <= 86_400 }) else {
            throw ConfigurationError(message: "timeouts must be at most 86400 seconds")
        }
        guard (0...65535).contains(port), metricsPort.map({ (0...65535).contains($0) }) ?? true else {
            throw ConfigurationError(message: "ports must be in 0...65535")
        }
        try validateFleetSettings()
        _ = try presetTable()
    }

    /// A configuration error.
    public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
        /// What is wrong.
        public let message: String
        /// The message.
        public var description: String { message }
    }

    // MARK: - Loading

    /// Reads the file (JSON with these property names, any subset), then the environment over it.
    public static func load(file: String?, environment: [String: String]) throws(ConfigurationError) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        if let file {
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: file))
                configuration = try JSONDecoder().decode(PartialConfiguration.self, from: data).applied(to: configuration)
            } catch {
                throw ConfigurationError(message: "cannot read config file \(file): \(error)")
            }
        }
        try configuration.apply(environment: environment)
        return configuration
    }

    /// Applies `HALCYON_*` variables, and imgproxy's names for the same settings where the Halcyon one is unset.
    public mutating func apply(environment raw: [String: String]) throws(ConfigurationError) {
        let env = EnvironmentReader(raw: raw, text: Self.withImgproxyAliases(raw))
        try applyServing(env)
        try applyLimits(env)
    }

    /// Addresses, keys, sources and caches.
    private mutating func applyServing(_ env: EnvironmentReader) throws(ConfigurationError) {
        if let v = env.text["HALCYON_HOST"] { host = v }
        if let v = try env.int("HALCYON_PORT") { port = v }
        if let v = try env.int("HALCYON_METRICS_PORT") { metricsPort = v }
        if let v = env.text["HALCYON_METRICS_HOST"] { metricsHost = v }
        if let v = env.list("HALCYON_KEY") { keys = v }
        if let v = env.list("HALCYON_SALT") { salts = v }
        if let v = env.bool("HALCYON_INSECURE") { insecure = v }
        if let v = env.text["HALCYON_LOCAL_ROOT"] { localRoot = v }
        if let v = env.list("HALCYON_ALLOWED_SOURCES") { allowedSources = v }
        if let v = env.bool("HALCYON_ALLOW_LOOPBACK") { allowLoopback = v }
        if let v = env.bool("HALCYON_ALLOW_PRIVATE") { allowPrivate = v }
        if let v = try env.int("HALCYON_CACHE_MAX_AGE") { cacheMaxAge = v }
        if let v = env.text["HALCYON_CACHE_DIR"] { cacheDirectory = v }
        if let v = try env.int("HALCYON_DISK_CACHE_MB") { diskCacheMegabytes = v }
        if let v = try env.int("HALCYON_MEMORY_CACHE_MB") { memoryCacheMegabytes = v }
        if let v = try env.int("HALCYON_RESPONSE_CACHE_MB") { responseCacheMegabytes = v }
        if let v = env.text["HALCYON_REDIS_URL"] { redisURL = v.isEmpty ? nil : v }
        if let v = try env.int("HALCYON_REDIS_TTL") { redisTTL = v }
        if let v = try env.double("HALCYON_REDIS_TIMEOUT") { redisTimeout = v }
        if let v = env.bool("HALCYON_CACHE_IMMUTABLE") { cacheImmutable = v }
        if let v = try env.int("HALCYON_NEGATIVE_CACHE_TTL") { negativeCacheTTL = v }
        if let v = env.text["HALCYON_TRACE_ENDPOINT"] { traceEndpoint = v.isEmpty ? nil : v }
        if let v = env.text["HALCYON_FALLBACK_IMAGE"] { fallbackImage = v.isEmpty ? nil : v }
        try applyProcessing(env)
    }

    /// Watermark, presets, animation, metadata and quality.
    private mutating func applyProcessing(_ env: EnvironmentReader) throws(ConfigurationError) {
        if let v = env.text["HALCYON_WATERMARK_PATH"] { watermarkPath = v.isEmpty ? nil : v }
        if let v = env.list("HALCYON_PRESETS") { presets = v }
        if let v = env.bool("HALCYON_ONLY_PRESETS") { onlyPresets = v }
        if let v = try env.int("HALCYON_MAX_ANIMATION_FRAMES") { maxAnimationFrames = v }
        if let v = env.bool("HALCYON_STRIP_METADATA") { stripMetadata = v }
        if let v = env.bool("HALCYON_KEEP_COPYRIGHT") { keepCopyright = v }
        if let v = env.bool("HALCYON_STRIP_COLOR_PROFILE") { stripColorProfile = v }
        if let v = try env.int("HALCYON_QUALITY") { defaultQuality = v == 0 ? nil : v }
    }

    /// Limits and timeouts.
    private mutating func applyLimits(_ env: EnvironmentReader) throws(ConfigurationError) {
        if let v = try env.int("HALCYON_MAX_REDIRECTS") { maxRedirects = v }
        if let v = try env.int("HALCYON_MAX_SOURCE_BYTES") { maxSourceBytes = v }
        if let v = try env.double("HALCYON_MAX_SOURCE_MEGAPIXELS") { maxSourceMegapixels = v }
        if let v = try env.int("HALCYON_MAX_FRAMES") { maxFrames = v }
        if let v = try env.int("HALCYON_MAX_RESULT_DIMENSION") { maxResultDimension = v }
        if let text = env.text["HALCYON_FAIL_ON"] {
            guard let v = DecodingStrictness(rawValue: text.lowercased()) else {
                throw ConfigurationError(message: "HALCYON_FAIL_ON must be none, truncated, error or warning")
            }
            decodeStrictness = v
        }
        if let v = try env.double("HALCYON_DOWNLOAD_TIMEOUT") { downloadTimeout = v }
        if let v = try env.double("HALCYON_REQUEST_TIMEOUT") { requestTimeout = v }
        if let v = try env.int("HALCYON_MAX_IN_FLIGHT") { maxInFlight = v }
        if let v = try env.int("HALCYON_MAX_QUEUE") { maxQueue = v }
        if let v = try env.double("HALCYON_QUEUE_TIMEOUT") { queueTimeout = v }
        if let v = try env.double("HALCYON_MAX_RESULT_MEGAPIXELS") { maxResultMegapixels = v }
        if let v = try env.int("HALCYON_MEMORY_BUDGET_MB") { memoryBudgetMegabytes = v }
        if let v = try env.double("HALCYON_SHUTDOWN_TIMEOUT") { shutdownTimeout = v }
        if let v = try env.double("HALCYON_IDLE_TIMEOUT") { idleTimeout = v }
        if let v = try env.double("HALCYON_HEADER_TIMEOUT") { headerTimeout = v }
        if let v = try env.double("HALCYON_WRITE_TIMEOUT") { writeTimeout = v }
        if let v = try env.int("HALCYON_MAX_CONNECTIONS") { maxConnections = v }
    }

    /// The effective values as sorted JSON, keys and salts masked.
    public func printable() -> String {
        var shown = self
        shown.keys = keys.map { _ in "<redacted>" }
        shown.salts = salts.map { _ in "<redacted>" }
        shown.redisURL = redisURL.map(Self.redactingPassword)
        guard let encoded = try? JSONEncoder().encode(shown),
              var object = (try? JSONSerialization.jsonObject(with: encoded)) as? [String: Any] else { return "{}" }
        // Unset optional values are shown as null rather than left out.
        for name in ["metricsPort", "metricsHost", "localRoot", "cacheDirectory", "redisURL", "traceEndpoint", "fallbackImage", "watermarkPath", "defaultQuality"] where object[name] == nil { object[name] = NSNull() }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// A config file: every field optional.
private struct PartialConfiguration: Decodable {
    var host: String?
    var port: Int?
    var metricsPort: Int?
    var metricsHost: String?
    var keys: [String]?
    var salts: [String]?
    var insecure: Bool?
    var localRoot: String?
    var allowedSources: [String]?
    var allowLoopback: Bool?
    var allowPrivate: Bool?
    var maxRedirects: Int?
    var maxSourceBytes: Int?
    var maxSourceMegapixels: Double?
    var maxFrames: Int?
    var maxResultDimension: Int?
    var decodeStrictness: DecodingStrictness?
    var downloadTimeout: Double?
    var requestTimeout: Double?
    var maxInFlight: Int?
    var maxQueue: Int?
    var queueTimeout: Double?
    var maxResultMegapixels: Double?
    var memoryBudgetMegabytes: Int?
    var shutdownTimeout: Double?
    var idleTimeout: Double?
    var headerTimeout: Double?
    var writeTimeout: Double?
    var maxConnections: Int?
    var cacheMaxAge: Int?
    var cacheDirectory: String?
    var diskCacheMegabytes: Int?
    var memoryCacheMegabytes: Int?
    var responseCacheMegabytes: Int?
    var redisURL: String?
    var redisTTL: Int?
    var redisTimeout: Double?
    var cacheImmutable: Bool?
    var negativeCacheTTL: Int?
    var traceEndpoint: String?
    var fallbackImage: String?
    var watermarkPath: String?
    var presets: [String]?
    var onlyPresets: Bool?
    var maxAnimationFrames: Int?
    var stripMetadata: Bool?
    var keepCopyright: Bool?
    var stripColorProfile: Bool?
    var defaultQuality: Int?

    func applied(to base: ServerConfiguration) -> ServerConfiguration {
        var c = base
        if let host { c.host = host }
        if let port { c.port = port }
        if let metricsPort { c.metricsPort = metricsPort }
        if let metricsHost { c.metricsHost = metricsHost }
        if let keys { c.keys = keys }
        if let salts { c.salts = salts }
        if let insecure { c.insecure = insecure }
        if let localRoot { c.localRoot = localRoot }
        if let allowedSources { c.allowedSources = allowedSources }
        if let allowLoopback { c.allowLoopback = allowLoopback }
        if let allowPrivate { c.allowPrivate = allowPrivate }
        if let maxRedirects { c.maxRedirects = maxRedirects }
        if let maxSourceBytes { c.maxSourceBytes = maxSourceBytes }
        if let maxSourceMegapixels { c.maxSourceMegapixels = maxSourceMegapixels }
        if let maxFrames { c.maxFrames = maxFrames }
        if let maxResultDimension { c.maxResultDimension = maxResultDimension }
        if let decodeStrictness { c.decodeStrictness = decodeStrictness }
        if let downloadTimeout { c.downloadTimeout = downloadTimeout }
        if let requestTimeout { c.requestTimeout = requestTimeout }
        if let maxInFlight { c.maxInFlight = maxInFlight }
        if let maxQueue { c.maxQueue = maxQueue }
        if let queueTimeout { c.queueTimeout = queueTimeout }
        if let maxResultMegapixels { c.maxResultMegapixels = maxResultMegapixels }
        if let memoryBudgetMegabytes { c.memoryBudgetMegabytes = memoryBudgetMegabytes }
        if let shutdownTimeout { c.shutdownTimeout = shutdownTimeout }
        if let idleTimeout { c.idleTimeout = idleTimeout }
        if let headerTimeout { c.headerTimeout = headerTimeout }
        if let writeTimeout { c.writeTimeout = writeTimeout }
        if let maxConnections { c.maxConnections = maxConnections }
        if let cacheMaxAge { c.cacheMaxAge = cacheMaxAge }
        if let cacheDirectory { c.cacheDirectory = cacheDirectory }
        if let diskCacheMegabytes { c.diskCacheMegabytes = diskCacheMegabytes }
        if let memoryCacheMegabytes { c.memoryCacheMegabytes = memoryCacheMegabytes }
        if let responseCacheMegabytes { c.responseCacheMegabytes = responseCacheMegabytes }
        if let redisURL { c.redisURL = redisURL }
        if let redisTTL { c.redisTTL = redisTTL }
        if let redisTimeout { c.redisTimeout = redisTimeout }
        if let cacheImmutable { c.cacheImmutable = cacheImmutable }
        if let negativeCacheTTL { c.negativeCacheTTL = negativeCacheTTL }
        if let traceEndpoint { c.traceEndpoint = traceEndpoint }
        if let fallbackImage { c.fallbackImage = fallbackImage }
        return appliedProcessing(to: c)
    }

    /// The processing settings over `c`.
    private func appliedProcessing(to base: ServerConfiguration) -> ServerConfiguration {
        var c = base
        if let watermarkPath { c.watermarkPath = watermarkPath }
        if let presets { c.presets = presets }
        if let onlyPresets { c.onlyPresets = onlyPresets }
        if let maxAnimationFrames { c.maxAnimationFrames = maxAnimationFrames }
        if let stripMetadata { c.stripMetadata = stripMetadata }
        if let keepCopyright { c.keepCopyright = keepCopyright }
        if let stripColorProfile { c.stripColorProfile = stripColorProfile }
        if let defaultQuality { c.defaultQuality = defaultQuality }
        return c
    }
}

/// Reads typed values from the environment; errors name the variable the operator set (the imgproxy alias when
/// the value came from one).
private struct EnvironmentReader {
    /// The environment as given.
    let raw: [String: String]
    /// With imgproxy's names copied to Halcyon's.
    let text: [String: String]

    /// The variable a value came from.
    func origin(_ name: String) -> String {
        raw[name] != nil ? name : ServerConfiguration.imgproxyAliases.first { $0.halcyon == name }?.imgproxy ?? name
    }

    func int(_ name: String) throws(ServerConfiguration.ConfigurationError) -> Int? {
        guard let value = text[name] else { return nil }
        guard let number = Int(value) else { throw .init(message: "\(origin(name)) must be a whole number") }
        return number
    }

    func double(_ name: String) throws(ServerConfiguration.ConfigurationError) -> Double? {
        guard let value = text[name] else { return nil }
        guard let number = Double(value) else { throw .init(message: "\(origin(name)) must be a number") }
        return number
    }

    func bool(_ name: String) -> Bool? { text[name].map { ["1", "true", "yes", "on"].contains($0.lowercased()) } }

    func list(_ name: String) -> [String]? {
        text[name].map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
    }
}
