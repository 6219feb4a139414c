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
/// downloader calls `ImageDownloaderConnection.finished`), at the latest
/// after a grace period: host names that change with every request cannot pile
/// up clients. One lock guards the cache.
///
/// Lookups run on threads of their own, at most 16 at once and
/// 64 names in flight; a hop waits for its lookup at most `timeout` and stops
/// waiting when its task is cancelled, so a name that resolves slowly holds
/// neither the download's slot nor its request past those. An IP literal is
/// never looked up. The server looks a request's source up before its download
/// takes a slot (``prepare(_:)``); the answer serves the download's first hop
/// for ``preparedLifetime``.
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
    /// How long an answer found by ``prepare(_:)`` serves hops to its host.
    public static let preparedLifetime: Duration = .seconds(10)

    private let timeout: TimeInterval
    private let logger: Logger
    private let lookup: HostLookup
    private let prepared = Locked([String: (addresses: [IPAddress], until: ContinuousClock.Instant)]())
    private let clients = Locked(PinnedClients())

    /// Makes a gate; `resolver` is getaddrinfo unless a test gives its own (a blocking function, run on the gate's
    /// lookup threads; a hop waits for it at most `timeout`); refusal details go to `logger`. The clients it pins
    /// stop inflating a content-coded body at `maxInflatedBytes` (default 50 MiB; the server passes its source size
    /// limit).
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
        self.lookup = HostLookup(timeout: .milliseconds(Int64(max(0.001, timeout) * 1000)), resolver: resolver)
    }

    /// Vets `url` and returns the canonical URL to send with the pinned client (nil client for a vetted IP literal).
    public func connection(for url: URL) async throws(HalcyonError) -> ImageDownloaderConnection {
        let (host, canonical) = try vetted(url)
        switch host {
        case .address(let literal):
            try refuse(url, ifAny: [literal], host: host)
            return ImageDownloaderConnection(client: nil, url: canonical)
        case .name(let name):
            var addresses = preparedAddresses(of: name) ?? []
            if addresses.isEmpty { addresses = try await self.addresses(of: name, for: url) }
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
    /// ``connection(for:)``, whose lease keeps the client until `ImageDownloaderConnection.finished` is called.
    public func client(for url: URL) async throws(HalcyonError) -> HTTPClient? {
        let connection = try await connection(for: url)
        connection.finished?()
        return connection.client
    }

    /// Looks up the host of `url` ahead of its download, on the calling task, so the download's first hop finds the
    /// answer instead of waiting for DNS in a downloader slot; throws what ``connection(for:)`` would for a URL the
    /// gate refuses before a lookup, a lookup that timed out or was cancelled, or a name that does not resolve.
    /// Nothing for an IP literal.
    public func prepare(_ url: URL) async throws(HalcyonError) {
        guard case .name(let name) = try vetted(url).host else { return }
        let addresses = try await addresses(of: name, for: url)
        guard !addresses.isEmpty else {
            throw .requestError(reason: .cannotConnect(url: url, message: "cannot resolve \(name)"))
        }
        let until = ContinuousClock.now + Self.preparedLifetime
        prepared.withLock { prepared in
            if prepared.count >= 1024 {
                let now = ContinuousClock.now
                prepared = prepared.filter { $0.value.until > now }
                if prepared.count >= 1024 { prepared.removeAll() }
            }
            prepared[name] = (addresses, until)
        }
    }

    /// How many host names are being looked up or wait for a lookup thread (abandoned lookups included).
    public var lookupsInFlight: Int { lookup.inFlight }

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

    /// The canonical host and URL of `url`, refused when it cannot be canonicalised or is not under an allowed source.
    private func vetted(_ url: URL) throws(HalcyonError) -> (host: CanonicalHost, url: URL) {
        guard let host = CanonicalHost(of: url), let canonical = host.replacingHost(of: url) else {
            logger.notice("source refused: host cannot be canonicalised", metadata: ["url": "\(url.absoluteString)"])
            throw .requestError(reason: .invalidURL(url: url))
        }
        guard url.user == nil, url.password == nil, allowedSources.allows(canonical) else {
            logger.notice("source refused: not under an allowed source", metadata: ["url": "\(url.absoluteString)"])
            throw .requestError(reason: .connectionRefusedByGate(url: url, message: Self.notAllowedMessage))
        }
        return (host, canonical)
    }

    /// The addresses of `name` from the lookup threads; a lookup that timed out, was cancelled or found too many in
    /// flight is an error for `url`.
    private func addresses(of name: String, for url: URL) async throws(HalcyonError) -> [IPAddress] {
        switch await lookup.addresses(of: name) {
        case .success(let addresses):
            return addresses
        case .failure(.timedOut):
            logger.notice("source lookup timed out", metadata: ["url": "\(url.absoluteString)"])
            throw .responseError(reason: .timedOut(url: url, after: timeout))
        case .failure(.cancelled):
            throw .requestError(reason: .taskCancelled(task: nil, token: nil))
        case .failure(.busy):
            logger.notice("source lookup refused: too many lookups in flight", metadata: ["url": "\(url.absoluteString)"])
            throw .requestError(reason: .cannotConnect(url: url, message: "too many host lookups in flight"))
        }
    }

    /// The answer ``prepare(_:)`` found for `name`, while it is fresh.
    private func preparedAddresses(of name: String) -> [IPAddress]? {
        prepared.withLock { prepared in
            guard let entry = prepared[name] else { return nil }
            guard entry.until > ContinuousClock.now else {
                prepared[name] = nil
                return nil
            }
            return entry.addresses
        }
    }

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
        // HTTPTransport makes each request's client span itself, in the fetching task's trace (AsyncHTTPClient's
        // delegate API would start one outside it, as a trace of its own).
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }
}
