import Foundation
@testable import Halcyon
import Testing

/// A monitor whose network comes back after a set time (or never).
struct ScriptedMonitor: NetworkMonitoring {
    let backAt: ContinuousClock.Instant?
    var isConnected: Bool { backAt.map { ContinuousClock.now >= $0 } ?? false }
    func waitForConnection(timeout: TimeInterval) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while !isConnected {
            guard ContinuousClock.now < deadline, (try? await Task.sleep(for: .milliseconds(10))) != nil else { return false }
        }
        return true
    }
}

/// `NetworkRetryStrategy` against a closed loopback port (connection refused) and a real 404.
@Suite("NetworkRetryStrategy")
struct NetworkRetryStrategyTests {
    /// Retrieves `url` with `strategy`; gives the error and the number of retries made.
    static func run(_ fixture: ManagerFixture, _ url: URL, _ strategy: NetworkRetryStrategy) async -> (HalcyonError?, Int) {
        let (result, updated) = await KingfisherTaskUpdatedTests.retrieve(fixture, url, options: [.retryStrategy(strategy), .forceRefresh],
                                                                          cancelUpdated: false)
        if case .failure(let error) = result { return (error, updated.count) }
        return (nil, updated.count)
    }

    /// A loopback URL nothing listens on: a server started, then stopped.
    static func closedPortURL() async throws -> URL {
        let server = try await TestHTTPServer.start(image: Data([1]))
        let port = server.port
        await server.shutdown()
        return try #require(URL(string: "http://127.0.0.1:\(port)/image/x"))
    }

    @Test("With the network up, a refused connection is retried up to the count; a 404 is not retried")
    func networkUp() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let up = ScriptedMonitor(backAt: .now)
        let (error, retries) = await Self.run(fixture, try await Self.closedPortURL(), NetworkRetryStrategy(maxRetryCount: 2, monitor: up))
        guard case .requestError(reason: .cannotConnect) = error else { Issue.record("\(String(describing: error))"); return }
        #expect(retries == 2)
        let (notFound, none) = await Self.run(fixture, fixture.url("/status/404"), NetworkRetryStrategy(monitor: up))
        #expect(notFound?.isInvalidResponseStatusCode(404) == true && none == 0)
    }

    @Test("With the network down, the retry waits for it: it retries when it returns and stops at the timeout")
    func networkDown() async throws {
        let fixture = try await ManagerFixture.make()
        defer { Task { await fixture.shutdown() } }
        let url = try await Self.closedPortURL()
        let started = ContinuousClock.now
        let (_, never) = await Self.run(fixture, url, NetworkRetryStrategy(timeoutInterval: 0.3, monitor: ScriptedMonitor(backAt: nil)))
        #expect(never == 0)
        #expect(ContinuousClock.now - started >= .milliseconds(300), "it waited for the network")
        let back = ScriptedMonitor(backAt: .now + .milliseconds(150))
        let (_, retried) = await Self.run(fixture, url, NetworkRetryStrategy(timeoutInterval: 5, maxRetryCount: 1, monitor: back))
        #expect(retried == 1)
    }

    @Test("The interface monitor sees this machine's state without failing")
    func interfaceMonitor() async {
        let monitor = InterfaceNetworkMonitor()
        let connected = monitor.isConnected
        #expect(await monitor.waitForConnection(timeout: 0) == connected)
    }
}
