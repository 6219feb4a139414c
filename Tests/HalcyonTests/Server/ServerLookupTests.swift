import AsyncHTTPClient
import Foundation
import Halcyon
import HalcyonServer
import Logging
import ServiceLifecycle
import Testing

/// A resolver for the server whose names under `.slow.test` block their lookup thread (as getaddrinfo does
/// waiting for a DNS server that answers late) until ``release()`` or `delay`, then answer 127.0.0.1; other
/// names go to the system resolver.
final class SlowResolver: Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let state = Locked((blocked: 0, calls: 0))
    let delay: TimeInterval

    init(delay: TimeInterval) { self.delay = delay }

    /// Lookups blocked now.
    var blocked: Int { state.withLock { $0.blocked } }
    /// Lookups of slow names so far.
    var calls: Int { state.withLock { $0.calls } }

    /// The blocking lookup.
    func resolve(_ host: String) -> [IPAddress] {
        guard host.hasSuffix(".slow.test") else { return IPAddress.resolve(host) }
        state.withLock { $0.blocked += 1; $0.calls += 1 }
        _ = gate.wait(timeout: .now() + delay)
        state.withLock { $0.blocked -= 1 }
        return [IPAddress("127.0.0.1")].compactMap { $0 }
    }

    /// Lets every blocked lookup answer.
    func release() {
        for _ in 0..<64 { gate.signal() }
    }
}

@Suite("Server host lookups", .serialized)
struct ServerLookupTests {
    /// A signed server over a loopback upstream whose gate looks names up with `dns`.
    private func start(_ dns: SlowResolver, _ configure: (inout ServerConfiguration) -> Void) async throws -> ServerFixture {
        let upstream = try await TestHTTPServer.start(image: ManagerFixture.sampleImage())
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.keys = [ServerFixture.keyHex]
        configuration.salts = [ServerFixture.saltHex]
        configuration.allowLoopback = true
        configuration.maxInFlight = 16
        configuration.maxQueue = 16
        configuration.maxConnections = 64
        configure(&configuration)
        var logger = Logger(label: "halcyon.server.test")
        logger.logLevel = .error
        let server = try ImageServer(configuration: configuration, logger: logger, resolver: { dns.resolve($0) })
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [server], logger: logger))
        let run = Task { try await group.run() }
        let port = try await server.waitUntilListening()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        return ServerFixture(server: server, group: group, run: run, port: port, upstream: upstream, client: client,
                             configuration: configuration)
    }

    /// With a 3 s request timeout, 8 requests naming hosts whose lookups take 25 s held the downloader's slots
    /// (here 8: max(6, max-in-flight)) for the lookups' whole 25 s, as a lookup could not be left, so once they had
    /// timed out every fresh fetch, IP literals too, answered 504.
    @Test("Slow lookups hold no downloader slot: an IP-literal source answers at once, the slow requests at their timeout")
    func slowLookupsDoNotBlockLiterals() async throws {
        let dns = SlowResolver(delay: 25)
        let fixture = try await start(dns) { configuration in
            configuration.requestTimeout = 3
            configuration.downloadTimeout = 10
            configuration.maxInFlight = 8
        }
        let port = fixture.upstream.port
        let slow = (0..<8).map { index in
            Task {
                let started = ContinuousClock.now
                let reply = try await fixture.get(fixture.signedPath(
                    "rs:fit:32:32", source: "http://host\(index).slow.test:\(port)/image/slow\(index)"))
                return (reply.status, ContinuousClock.now - started)
            }
        }
        for task in slow {
            let (status, elapsed) = try await task.value
            #expect(status == 504, "a request stuck in its lookup ends at its timeout")
            #expect(elapsed < .seconds(5), "a slow request took \(elapsed), not its 3 s timeout")
        }
        #expect(dns.blocked > 0, "lookups are still stuck")
        let started = ContinuousClock.now
        let literal = try await fixture.get(fixture.signedPath("rs:fit:32:32", source: fixture.source("/image/literal")))
        let literalTime = ContinuousClock.now - started
        #expect(literal.status == 200, "an IP-literal source answers while lookups are stuck (was \(literal.status))")
        #expect(literalTime < .seconds(2), "the IP-literal source waited \(literalTime)")
        dns.release()
        await fixture.stop()
    }

    /// With the download timeout below the request's, a lookup that does not answer ends the fetch at the download
    /// timeout (504 source_timeout); it held the fetch until DNS answered, and the request ran into its own timeout.
    @Test("A lookup that does not answer ends the fetch at the download timeout")
    func lookupTimesOut() async throws {
        let dns = SlowResolver(delay: 25)
        let fixture = try await start(dns) { configuration in
            configuration.requestTimeout = 8
            configuration.downloadTimeout = 1.5
        }
        let started = ContinuousClock.now
        let reply = try await fixture.get(fixture.signedPath(
            "rs:fit:32:32", source: "http://never.slow.test:\(fixture.upstream.port)/image/never"))
        let elapsed = ContinuousClock.now - started
        #expect(reply.status == 504)
        #expect(reply.errorCode == "source_timeout", "the lookup's own timeout answers, not the request's (\(reply.errorCode ?? "-"))")
        #expect(elapsed < .seconds(4), "the fetch waited \(elapsed) for DNS")
        dns.release()
        await fixture.stop()
    }

    /// The downloader level: a download whose lookup is stuck, cancelled by its caller, gives its slot back at once.
    /// The gate's lookup could not be left, so an abandoned download held its slot until DNS answered.
    @Test("A cancelled download stuck in its lookup frees its downloader slot")
    func cancelledLookupFreesSlot() async throws {
        let upstream = try await TestHTTPServer.start(image: ManagerFixture.sampleImage())
        let dns = SlowResolver(delay: 25)
        let gate = AddressGate(policy: AddressPolicy(allowLoopback: true), timeout: 10, resolver: { dns.resolve($0) })
        let downloader = ImageDownloader(name: "lookup-test")
        downloader.downloadTimeout = 10
        downloader.maxConcurrentDownloads = 2
        downloader.connectionGate = gate
        let urls = try (0..<2).map { index in
            try #require(URL(string: "http://s\(index).slow.test:\(upstream.port)/image/s\(index)"))
        }
        let slow = urls.map { url in Task { try await downloader.downloadData(with: url) } }
        while dns.blocked < 2 { try await Task.sleep(for: .milliseconds(10)) }
        slow.forEach { $0.cancel() }
        for task in slow { _ = await task.result }
        let started = ContinuousClock.now
        let literal = Task { try await downloader.downloadData(with: upstream.url("/image/literal")) }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(3))
            literal.cancel()
        }
        let result = await literal.result
        watchdog.cancel()
        #expect((try? result.get()) != nil, "the IP-literal download got no slot in 3 s")
        #expect(ContinuousClock.now - started < .seconds(2))
        dns.release()
        await downloader.shutdown()
        await gate.shutdown()
        await upstream.shutdown()
    }
}
