import AsyncHTTPClient
import Foundation
import Halcyon
import Logging
import NIOCore
import NIOPosix

/// The SSRF guard on the connection: for every hop it canonicalises the host
/// (``CanonicalHost``), checks the URL against the allowed sources, resolves
/// the host itself, classifies every address with an ``AddressPolicy``, and
/// sends the canonical URL through a client pinned to exactly the vetted
/// address (its `dnsOverride` maps the canonical host, the same string that
/// is sent, so a second DNS answer cannot rebind it; TLS still verifies the
/// host name).
///
/// A host with any refused address is refused as a whole. Refusals carry only
/// a generic message ("source address forbidden", "source not allowed"); what
/// the name resolved to goes to the log, never to the client.
///
/// Bounded idle connections: pinned clients are kept per (host, address) in an
/// LRU of at most `clientCapacity` (default 16); each keeps at most
/// ``connectionsPerClient`` connections, idle ones for `idleTimeout` (default
/// 5 s). So at most `clientCapacity × connectionsPerClient` pooled connections
/// live in cached clients. An evicted client is shut down (its connections
/// closed) at once when no download uses it, else when the last one ends (the
/// downloader calls ``ImageDownloaderConnection/finished``), at the latest
/// after a grace period: host names that change with every request cannot pile
/// up clients. One lock guards the cache.
public final class AddressGate: ImageDownloaderConnectionGate {
    /// The policy addresses are checked against.
    public let policy: AddressPolicy
    /// The sources every hop must be under.
    public let allowedSources: SourceAllowList
    /// Most pinned clients kept.
    public let clientCapacity: Int
    /// How long a pinned client keeps an idle connection.
    public let idleTimeout: TimeInterval
    /// Most bytes a compressed body inflates to (the source size limit).
    public let maxInflatedBytes: Int
    /// Most connections one pinned client opens to its host.
    public static let connectionsPerClient = 8
    /// The message of a refusal for an address.
    public static let forbiddenMessage = "source address forbidden"
    /// The message of a refusal for a hop outside the allowed sources.
    public static let notAllowedMessage = "source not allowed"

    private let timeout: TimeInterval
    private let logger: Logger
    private let resolver: @Sendable (String) -> [IPAddress]
    private let clients = Locked(PinnedClients())
    private static let resolveQueue = DispatchQueue(label: "halcyon.server.resolve", attributes: .concurrent)

    /// Makes a gate; `resolver` is getaddrinfo unless a test gives its own; refusal details go to `logger`. The
    /// clients it pins stop inflating a content-coded body at `maxInflatedBytes` (default 50 MiB; the server passes
    /// its source size limit).
    public init(
        policy: AddressPolicy,
        timeout: TimeInterval = 15,
        allowedSources: SourceAllowList = .any,
        clientCapacity: Int = 16,
        idleTimeout: TimeInterval = 5,
        maxInflatedBytes: Int = 50 * 1024 * 1024,
        logger: Logger = Logger(label: "halcyon.server.gate"),
        resolver: @escaping @Sendable (String) -> [IPAddress] = { IPAddress.resolve($0) }
    ) {
        self.policy = policy
        self.timeout = timeout
        self.allowedSources = allowedSources
        self.clientCapacity = max(1, clientCapacity)
        self.idleTimeout = max(0.1, idleTimeout)
        self.maxInflatedBytes = max(1, maxInflatedBytes)
        self.logger = logger
        self.resolver = resolver
    }

    /// Vets `url` and returns the canonical URL to send with the pinned client (nil client for a vetted IP literal).
    public func connection(for url: URL) async throws(HalcyonError) -> ImageDownloaderConnection {
        guard let host = CanonicalHost(of: url), let canonical = host.replacingHost(of: url) else {
            logger.notice("source refused: host cannot be canonicalised", metadata: ["url": "\(url.absoluteString)"])
            throw .requestError(reason: .invalidURL(url: url))
        }
        guard url.user == nil, url.password == nil, allowedSources.allows(canonical) else {
            logger.notice("source refused: not under an allowed source", metadata: ["url": "\(url.absoluteString)"])
            throw .requestError(reason: .connectionRefusedByGate(url: url, message: Self.notAllowedMessage))
        }
        switch host {
        case .address(let literal):
            try refuse(url, ifAny: [literal], host: host)
            return ImageDownloaderConnection(client: nil, url: canonical)
        case .name(let name):
            let resolver = self.resolver
            let addresses = await withCheckedContinuation { continuation in
                Self.resolveQueue.async { continuation.resume(returning: resolver(name)) }
            }
            guard let first = addresses.first else {
                throw .requestError(reason: .cannotConnect(url: url, message: "cannot resolve \(name)"))
            }
            try refuse(url, ifAny: addresses, host: host)
            let client = pinnedClient(host: name, address: first)
            // The lease ends once, however often `finished` is called: a second call must not end another's.
            let ended = Locked(false)
            return ImageDownloaderConnection(client: client, url: canonical, finished: { [clients] in
                guard !ended.withLock({ ended in defer { ended = true }; return ended }) else { return }
                guard let retired = clients.withLock({ $0.endLease(client) }) else { return }
                retired.backstop?.cancel()
                Task { try? await retired.client.shutdown() }
            })
        }
    }

    /// The pinned client for `url` (nil for a vetted IP literal); see ``connection(for:)``, whose URL must be the one sent.
    ///
    /// The client is not leased: once the cache evicts it, it is shut down. Downloads go through
    /// ``connection(for:)``, whose lease keeps the client until ``ImageDownloaderConnection/finished`` is called.
    public func client(for url: URL) async throws(HalcyonError) -> HTTPClient? {
        let connection = try await connection(for: url)
        connection.finished?()
        return connection.client
    }

    /// How many pinned clients are cached now (at most ``clientCapacity``).
    public var cachedClientCount: Int { clients.withLock { $0.count } }

    /// How many evicted clients are still in use by downloads (each is shut down when its last one ends).
    public var retiringClientCount: Int { clients.withLock { $0.retiringCount } }

    /// How many downloads use a pinned client now.
    public var leasedClientCount: Int { clients.withLock { $0.leaseCount } }

    /// Shuts down every cached client, and the evicted ones still in their grace period.
    public func shutdown() async {
        let all = clients.withLock { $0.removeAll() }
        for backstop in all.backstops { backstop.cancel() }
        for client in all.clients { try? await client.shutdown() }
    }

    // MARK: - Vetting

    /// Throws the generic refusal when the policy refuses any of `addresses`, logging which one and why.
    private func refuse(_ url: URL, ifAny addresses: [IPAddress], host: CanonicalHost) throws(HalcyonError) {
        for address in addresses {
            if let refusal = policy.refusal(of: address) {
                logger.notice("source refused: forbidden address", metadata: [
                    "url": "\(url.absoluteString)", "host": "\(host)", "reason": "\(refusal)",
                ])
                throw .requestError(reason: .connectionRefusedByGate(url: url, message: Self.forbiddenMessage))
            }
        }
    }

    // MARK: - Pinned clients

    private func pinnedClient(host: String, address: IPAddress) -> HTTPClient {
        let key = "\(host)|\(address)"
        let (client, eviction) = clients.withLock { clients -> (HTTPClient, PinnedClients.Eviction?) in
            if let client = clients.use(key) { return (client, nil) }
            let client = makeClient(host: host, address: address)
            return (client, clients.insert(client, for: key, capacity: clientCapacity))
        }
        switch eviction {
        case .idle(let evicted):
            Task { try? await evicted.shutdown() }
        case .busy(let evicted):
            // Shut down when its last download ends (which cancels this task); the grace period is the backstop
            // for a lease never ended, and also ends a download still running on the client by then.
            let grace = timeout * 4 + 5
            let backstop = Task { [clients] in
                try? await Task.sleep(for: .seconds(grace))
                if let retired = clients.withLock({ $0.retire(evicted) }) { try? await retired.shutdown() }
            }
            if !clients.withLock({ $0.setBackstop(backstop, for: evicted) }) { backstop.cancel() }
        case nil:
            break
        }
        return client
    }

    private func makeClient(host: String, address: IPAddress) -> HTTPClient {
        var pool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: .milliseconds(Int64(idleTimeout * 1000)),
            concurrentHTTP1ConnectionsPerHostSoftLimit: Self.connectionsPerClient)
        pool.retryConnectionEstablishment = false
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(Int64(max(1, timeout)))),
            connectionPool: pool,
            // A size limit, not a ratio: a flat image shrinks far more than any ratio that stops a bomb early. NIO
            // inflates a whole received piece before the transport counts it, so it must stop at the size itself.
            decompression: .enabled(limit: .size(maxInflatedBytes)))
        configuration.dnsOverride = [host: address.description]
        configuration.guardResponseStatus()
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }
}
