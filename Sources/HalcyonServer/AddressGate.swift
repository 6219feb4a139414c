import AsyncHTTPClient
import Foundation
import Halcyon
import NIOCore
import NIOPosix

/// The SSRF guard on the connection: resolves each hop's host itself,
/// classifies every address with an ``AddressPolicy``, and connects to exactly
/// the vetted address (an `HTTPClient` whose `dnsOverride` pins the host, so a
/// second DNS answer cannot rebind it; TLS still verifies the host name).
///
/// A host with any refused address is refused as a whole. Clients are kept per
/// (host, address) in a small cache; one lock guards it.
public final class AddressGate: ImageDownloaderConnectionGate {
    /// The policy addresses are checked against.
    public let policy: AddressPolicy
    private let timeout: TimeInterval
    private let resolver: @Sendable (String) -> [IPAddress]
    private let clients = Locked<[String: HTTPClient]>([:])
    private let capacity = 64
    private static let resolveQueue = DispatchQueue(label: "halcyon.server.resolve", attributes: .concurrent)

    /// Makes a gate; `resolver` is getaddrinfo unless a test gives its own.
    public init(
        policy: AddressPolicy,
        timeout: TimeInterval = 15,
        resolver: @escaping @Sendable (String) -> [IPAddress] = { IPAddress.resolve($0) }
    ) {
        self.policy = policy
        self.timeout = timeout
        self.resolver = resolver
    }

    /// Vets `url`'s host; returns the pinned client for a host name, nil for a vetted IP literal.
    public func client(for url: URL) async throws(HalcyonError) -> HTTPClient? {
        guard let rawHost = url.host, !rawHost.isEmpty else {
            throw .requestError(reason: .invalidURL(url: url))
        }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
        if let literal = IPAddress(host) {
            if let refusal = policy.refusal(of: literal) {
                throw .requestError(reason: .connectionRefusedByGate(url: url, message: refusal))
            }
            return nil
        }
        let resolver = self.resolver
        let addresses = await withCheckedContinuation { continuation in
            Self.resolveQueue.async { continuation.resume(returning: resolver(host)) }
        }
        guard let first = addresses.first else {
            throw .requestError(reason: .cannotConnect(url: url, message: "cannot resolve \(host)"))
        }
        for address in addresses {
            if let refusal = policy.refusal(of: address) {
                throw .requestError(reason: .connectionRefusedByGate(url: url, message: "\(host) resolves to \(refusal)"))
            }
        }
        return pinnedClient(host: host.lowercased(), address: first)
    }

    /// Shuts down every cached client.
    public func shutdown() async {
        let all = clients.withLock { clients -> [HTTPClient] in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        for client in all { try? await client.shutdown() }
    }

    private func pinnedClient(host: String, address: IPAddress) -> HTTPClient {
        let key = "\(host)|\(address)"
        let (client, evicted) = clients.withLock { clients -> (HTTPClient, HTTPClient?) in
            if let client = clients[key] { return (client, nil) }
            var evicted: HTTPClient?
            if clients.count >= capacity, let victim = clients.keys.first {
                evicted = clients.removeValue(forKey: victim)
            }
            var pool = HTTPClient.Configuration.ConnectionPool(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
            pool.retryConnectionEstablishment = false
            var configuration = HTTPClient.Configuration(
                redirectConfiguration: .disallow,
                timeout: .init(connect: .seconds(Int64(max(1, timeout)))),
                connectionPool: pool,
                decompression: .enabled(limit: .ratio(200)))
            configuration.dnsOverride = [host: address.description]
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            clients[key] = client
            return (client, evicted)
        }
        if let evicted {
            // Requests may still run on it: shut it down once they must have ended.
            let grace = timeout * 4 + 5
            Task {
                try? await Task.sleep(for: .seconds(grace))
                try? await evicted.shutdown()
            }
        }
        return client
    }
}
