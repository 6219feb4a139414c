import AsyncHTTPClient
import Foundation
import Halcyon
import HalcyonServer
import Testing

/// What a test resolver was asked, in order.
final class ResolverLog: Sendable {
    private let hosts = Locked<[String]>([])
    /// Records `host` and returns how many lookups came before it.
    func record(_ host: String) -> Int { hosts.withLock { $0.append(host); return $0.count - 1 } }
    /// Every host asked so far.
    var asked: [String] { hosts.withLock { $0 } }
}

@Suite("Server address gate", .serialized)
struct ServerGateTests {
    private func downloader(_ gate: AddressGate) -> ImageDownloader {
        let downloader = ImageDownloader(name: "gate-test")
        downloader.downloadTimeout = 5
        downloader.connectionGate = gate
        return downloader
    }

    /// The system resolver answers `localhost` with 127.0.0.1, standing in for a
    /// DNS server that rebinds a name after the gate has looked it up: the
    /// gate's resolver answers 127.0.0.2 (nothing listens there), so any request
    /// that reaches the server on 127.0.0.1 was sent to an address nobody vetted.
    @Test("An upper-case host name reaches only the address the gate vetted, never a second lookup's")
    func upperCaseHostStaysPinned() async throws {
        let upstream = try await TestHTTPServer.start(image: ManagerFixture.sampleImage())
        let log = ResolverLog()
        let gate = AddressGate(policy: AddressPolicy(allowLoopback: true), timeout: 2, resolver: { host in
            _ = log.record(host)
            return [IPAddress("127.0.0.2")].compactMap { $0 }
        })
        let downloader = downloader(gate)
        for spelling in ["LOCALHOST", "LocalHost", "localhost."] {
            let url = try #require(URL(string: "http://\(spelling):\(upstream.port)/image/rebind"))
            await #expect(throws: HalcyonError.self, "\(spelling) must not reach 127.0.0.1") {
                _ = try await downloader.downloadData(with: url)
            }
        }
        #expect(upstream.hits("/image/rebind") == 0, "the request reached an address the gate never vetted")
        #expect(log.asked == ["localhost", "localhost", "localhost"], "each hop is looked up once, in canonical form")
        await downloader.shutdown()
        await gate.shutdown()
        await upstream.shutdown()
    }

    @Test("The host is canonicalised once: lower case, no trailing dot, IDNA to punycode; the request sends it")
    func canonicalHostIsSent() async throws {
        let upstream = try await TestHTTPServer.start(image: ManagerFixture.sampleImage())
        let log = ResolverLog()
        let gate = AddressGate(policy: AddressPolicy(allowLoopback: true), timeout: 2, resolver: { host in
            _ = log.record(host)
            return [IPAddress("127.0.0.1")].compactMap { $0 }
        })
        let downloader = downloader(gate)
        let cases = [("DUAL.TEST", "dual.test", "/image/upper"), ("Dual.Test.", "dual.test", "/image/dot"),
                     ("BÜCHER.test", "xn--bcher-kva.test", "/image/idna")]
        for (written, canonical, target) in cases {
            guard let url = URL(string: "http://\(written):\(upstream.port)\(target)") else {
                Issue.record("\(written) does not parse")
                continue
            }
            do {
                _ = try await downloader.downloadData(with: url)
            } catch {
                Issue.record("\(written): \(error)")
            }
            #expect(upstream.headers(target).first?["host"] == "\(canonical):\(upstream.port)", "\(written)")
            #expect(log.asked.last == canonical, "\(written)")
        }
        await downloader.shutdown()
        await gate.shutdown()
        await upstream.shutdown()
    }

    @Test("Hosts that cannot be canonicalised are refused before any lookup", arguments: [
        "http://a..b/x.png", "http://a%2eb/x.png", "http://exa%20mple/x.png", "http://-a.test/x.png",
        "http://\(String(repeating: "a", count: 64)).test/x.png",
    ])
    func uncanonicalHostRefused(_ text: String) async throws {
        let log = ResolverLog()
        let gate = AddressGate(policy: AddressPolicy(allowLoopback: true), resolver: { host in
            _ = log.record(host)
            return [IPAddress("127.0.0.1")].compactMap { $0 }
        })
        let url = try #require(URL(string: text))
        await #expect(throws: HalcyonError.self, "\(text)") { _ = try await gate.client(for: url) }
        #expect(log.asked.isEmpty, "\(text) was looked up: \(log.asked)")
        await gate.shutdown()
    }

    @Test("A refusal says only 'source address forbidden': not what the name resolves to")
    func refusalIsGeneric() async throws {
        let gate = AddressGate(policy: AddressPolicy(), resolver: { _ in [IPAddress("10.1.2.3")].compactMap { $0 } })
        do {
            _ = try await gate.client(for: URL(string: "http://internal.test/x.png")!)
            Issue.record("a private address must be refused")
        } catch {
            guard case .requestError(.connectionRefusedByGate(_, let message)) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(message == "source address forbidden")
            #expect(!message.contains("10.1.2.3") && !message.contains("private"))
        }
        await gate.shutdown()
    }

    @Test("The refusal detail (what the name resolves to and why) goes to the log")
    func refusalDetailIsLogged() async throws {
        let logs = CapturedLogs.Store()
        let gate = AddressGate(policy: AddressPolicy(), logger: CapturedLogs.logger(into: logs), resolver: { _ in
            [IPAddress("10.1.2.3")].compactMap { $0 }
        })
        await #expect(throws: HalcyonError.self) { _ = try await gate.client(for: URL(string: "http://internal.test/x.png")!) }
        #expect(logs.all.contains { $0.contains("internal.test") && $0.contains("10.1.2.3 is private") }, "\(logs.all)")
        await gate.shutdown()
    }

    @Test("The pinned-client cache is an LRU that never exceeds its capacity")
    func clientCacheCapacity() async throws {
        let gate = AddressGate(policy: AddressPolicy(), clientCapacity: 4, resolver: { _ in [IPAddress("93.184.216.34")].compactMap { $0 } })
        let first = try await gate.client(for: URL(string: "http://h0.test/a.png")!)
        for index in 1..<4 { _ = try await gate.client(for: URL(string: "http://h\(index).test/a.png")!) }
        #expect(try await gate.client(for: URL(string: "http://H0.test/b.png")!) === first, "a hit, in any case, keeps its client")
        for index in 4..<50 {
            _ = try await gate.client(for: URL(string: "http://h\(index).test/a.png")!)
            #expect(gate.cachedClientCount <= 4)
        }
        #expect(gate.cachedClientCount == 4)
        await gate.shutdown()
        #expect(gate.cachedClientCount == 0)
    }

    @Test("An evicted client no download uses is shut down at once; one in use, when its download ends")
    func evictedClientsShutDown() async throws {
        let upstream = try await TestHTTPServer.start(image: ManagerFixture.sampleImage())
        // An idle timeout longer than the wait: only the shutdown can close the evicted client's connection.
        let gate = AddressGate(
            policy: AddressPolicy(allowLoopback: true), timeout: 2, clientCapacity: 2, idleTimeout: 60,
            resolver: { _ in [IPAddress("127.0.0.1")].compactMap { $0 } })
        let held = try await gate.connection(for: URL(string: "http://held.test:\(upstream.port)/image/held")!)
        let heldClient = try #require(held.client)
        var mostRetiring = 0
        for index in 0..<200 {
            let connection = try await gate.connection(for: URL(string: "http://h\(index).test/a.png")!)
            connection.finished?()
            mostRetiring = max(mostRetiring, gate.retiringClientCount)
        }
        #expect(mostRetiring == 1, "only the client still in use may wait; up to \(mostRetiring) did")
        #expect(gate.retiringClientCount == 1 && gate.leasedClientCount == 1)
        var request = HTTPClientRequest(url: held.url.absoluteString)
        request.method = .GET
        let response = try await heldClient.execute(request, timeout: .seconds(5))
        #expect(response.status == .ok, "an evicted client keeps serving the download that uses it")
        _ = try await response.body.collect(upTo: 1 << 20)
        held.finished?()
        #expect(gate.retiringClientCount == 0 && gate.leasedClientCount == 0)
        let shutDown = await upstream.wait(timeout: 5) { upstream.openConnections == 0 }
        #expect(shutDown, "the evicted client's connection must close when its download ends, not after the grace period")
        await gate.shutdown()
        await upstream.shutdown()
    }

    @Test("A pinned client refuses a status below 100 like the downloader's own, instead of stopping the process")
    func pinnedClientGuardsStatus() async throws {
        let origin = try await RawHTTPOrigin.start(response: "HTTP/1.1 099 X\r\nContent-Length: 5\r\n\r\nhello")
        let gate = AddressGate(policy: AddressPolicy(allowLoopback: true), timeout: 2, resolver: { _ in
            [IPAddress("127.0.0.1")].compactMap { $0 }
        })
        let downloader = downloader(gate)
        do {
            _ = try await downloader.downloadData(with: URL(string: "http://raw.test:\(origin.port)/x.png")!)
            Issue.record("a status of 99 was accepted")
        } catch {
            guard case .responseError(.invalidHTTPStatusCode(_, 99)) = error else {
                Issue.record("expected invalidHTTPStatusCode 99, got \(error)")
                return
            }
        }
        #expect(gate.cachedClientCount == 1, "the hop went through a pinned client")
        await downloader.shutdown()
        await gate.shutdown()
        await origin.shutdown()
    }

    @Test("The server's 403 for a refused address does not echo the resolved address")
    func serverRefusalIsGeneric() async throws {
        let fixture = try await ServerFixture.start { $0.allowLoopback = false }
        defer { Task { await fixture.stop() } }
        let reply = try await fixture.get(fixture.signedPath("w:10", source: "http://localhost:\(fixture.upstream.port)/image/o"))
        let body = String(decoding: reply.body, as: UTF8.self)
        #expect(reply.status == 403)
        #expect(!body.contains("127.0.0.1") && !body.contains("::1") && !body.contains("loopback"), "\(body)")
        await fixture.stop()
    }

    @Test("Idle connections across many host names stay bounded and close soon")
    func idleConnectionsBounded() async throws {
        let upstream = try await TestHTTPServer.start(image: ManagerFixture.sampleImage())
        let gate = AddressGate(policy: AddressPolicy(allowLoopback: true), timeout: 2, resolver: { _ in
            [IPAddress("127.0.0.1")].compactMap { $0 }
        })
        let downloader = downloader(gate)
        for index in 0..<40 {
            do {
                _ = try await downloader.downloadData(with: URL(string: "http://h\(index).test:\(upstream.port)/image/\(index)")!)
            } catch {
                Issue.record("host \(index): \(error)")
            }
        }
        #expect(upstream.totalHits == 40)
        #expect(gate.cachedClientCount == gate.clientCapacity, "one pinned client per host, at most the capacity")
        #expect(gate.leasedClientCount == 0, "every finished download ended its lease")
        #expect(gate.retiringClientCount == 0, "clients evicted after their download ended are shut down at once")
        #expect(gate.clientCapacity == 16 && gate.idleTimeout == 5)
        let closed = await upstream.wait(timeout: 10) { upstream.openConnections == 0 }
        #expect(closed, "\(upstream.openConnections) idle connections still open after 10 s")
        await downloader.shutdown()
        await gate.shutdown()
        await upstream.shutdown()
    }
}
