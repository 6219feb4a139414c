import Foundation
import Halcyon
@testable import HalcyonServer
import Logging
import Testing

/// The service under hostile traffic: work stops when its request stops,
/// memory is admitted before decoding, connections are bounded.
@Suite("Server hostile traffic", .serialized)
struct ServerHostileTrafficTests {
    /// A local root holding one 3000×3000 noise JPEG (heavy to blur), removed by the caller.
    static func heavyRoot() throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-heavy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let noise = try RenderCancellationTests.noise(width: 3000, height: 3000)
        try noise.encoded(as: .jpeg(quality: 90)).write(to: root.appendingPathComponent("noise.jpg"))
        return root
    }

    static let heavyOptions = "rs:force:4096:4096/bl:60"

    @Test("a timed-out request stops its libvips work: 504, then CPU stops growing within 100 ms")
    func timeoutStopsWork() async throws {
        let root = try Self.heavyRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let fixture = try await ServerFixture.start { config in
            config.localRoot = root.path
            config.requestTimeout = 1.5
        }
        defer { Task { await fixture.stop() } }
        let started = ContinuousClock.now
        let reply = try await fixture.get(fixture.signedPath(Self.heavyOptions, source: "local:///noise.jpg"))
        #expect(reply.status == 504)
        #expect(reply.errorCode == "request_timeout")
        #expect(ContinuousClock.now - started < .seconds(3), "504 only after \(ContinuousClock.now - started)")
        let used = try await RenderCancellationTests.cpuAfterCancel()
        #expect(used < 0.05, "the server used \(used) s of CPU between 100 and 500 ms after its 504")
        #expect(fixture.server.service.admission.runningCount == 0)
        await fixture.stop()
    }

    @Test("a client that hangs up frees its slot within 1 s, and its work stops")
    func hangUpFreesTheSlot() async throws {
        let root = try Self.heavyRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let fixture = try await ServerFixture.start { config in
            config.localRoot = root.path
            config.maxInFlight = 1
            config.maxQueue = 0
            config.requestTimeout = 60
        }
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath(Self.heavyOptions, source: "local:///noise.jpg")
        let socket = try #require(RawSocket(port: fixture.port))
        socket.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let start = RenderCancellationTests.processCPUTime()
        try await RenderCancellationTests.waitForCPU(0.5, since: start)
        let busy = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/image/busy")))
        #expect(busy.status == 429, "the slot is taken while the job runs")

        socket.hangUp()
        let hungUp = ContinuousClock.now
        var freed: Duration?
        var attempt = 0
        while ContinuousClock.now - hungUp < .seconds(3) {
            attempt += 1
            let next = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/image/next-\(attempt)")))
            if next.status == 200 {
                freed = ContinuousClock.now - hungUp
                break
            }
            #expect(next.status == 429)
            try await Task.sleep(for: .milliseconds(20))
        }
        let after = try #require(freed, "the slot was still taken 3 s after the client hung up")
        #expect(after < .seconds(1), "the slot came free \(after) after the hang-up")
        let used = try await RenderCancellationTests.cpuAfterCancel()
        #expect(used < 0.05, "the server used \(used) s of CPU between 100 and 500 ms after the slot came free")
        await fixture.stop()
    }

    @Test("graceful shutdown cancels work still running after the shutdown deadline")
    func shutdownDeadline() async throws {
        let root = try Self.heavyRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let fixture = try await ServerFixture.start { config in
            config.localRoot = root.path
            config.requestTimeout = 120
            config.shutdownTimeout = 0.5
        }
        defer { Task { await fixture.stop() } }
        let heavy = Task { try await fixture.get(fixture.signedPath(Self.heavyOptions, source: "local:///noise.jpg")) }
        let start = RenderCancellationTests.processCPUTime()
        try await RenderCancellationTests.waitForCPU(0.5, since: start)
        let shutdownStarted = ContinuousClock.now
        await fixture.group.triggerGracefulShutdown()
        let reply = try await heavy.value
        #expect(reply.status == 503)
        #expect(reply.errorCode == "shutting_down")
        try await fixture.run.value
        #expect(ContinuousClock.now - shutdownStarted < .seconds(3), "shutdown took \(ContinuousClock.now - shutdownStarted)")
        await fixture.stop()
    }

    @Test("results over the megapixel limit are refused from the header, all frames counted")
    func resultMegapixels() async throws {
        let gif = try TestImages.animation(frames: 30, width: 100, height: 100).encoded(as: .gif)
        let fixture = try await ServerFixture.start(files: ["anim.gif": gif]) { config in
            config.maxResultMegapixels = 10
            config.maxAnimationFrames = 100
        }
        defer { Task { await fixture.stop() } }
        // 30 frames of 1000×1000 are 30 MP: over 10 MP although one frame is 1 MP.
        let animated = try await fixture.get(fixture.signedPath("rs:force:1000:1000", source: fixture.source("/files/anim.gif")))
        #expect(animated.status == 422)
        #expect(animated.errorCode == "result_too_many_pixels")
        let still = try await fixture.get(fixture.signedPath("rs:force:4000:4000", source: fixture.source("/image/still")))
        #expect(still.status == 422)
        #expect(still.errorCode == "result_too_many_pixels")
        let fine = try await fixture.get(fixture.signedPath("rs:force:500:500", source: fixture.source("/image/fine")))
        #expect(fine.status == 200)
        await fixture.stop()
    }

    @Test("work over the whole memory budget gets 413; work that cannot get memory in time gets 429")
    func memoryBudget() async throws {
        let root = try Self.heavyRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let fixture = try await ServerFixture.start { config in
            config.localRoot = root.path
            config.memoryBudgetMegabytes = 120
            config.queueTimeout = 0.3
            config.requestTimeout = 60
        }
        defer { Task { await fixture.stop() } }
        // 3000×3000 decoded is 36 MB, plus three 16.7 MP results (200 MB): over 120 MB.
        let over = try await fixture.get(fixture.signedPath("rs:force:4096:4096", source: "local:///noise.jpg"))
        #expect(over.status == 413)
        #expect(over.errorCode == "over_memory_budget")
        #expect(fixture.server.service.admission.memory.usedBytes == 0)

        // Each blur of the whole source needs about 36 + 108 + 8 MB... over half the budget: one at a time.
        let first = Task { try await fixture.get(fixture.signedPath("rs:force:2000:2000/bl:40", source: "local:///noise.jpg")) }
        let start = RenderCancellationTests.processCPUTime()
        try await RenderCancellationTests.waitForCPU(0.3, since: start)
        let second = try await fixture.get(fixture.signedPath("rs:force:2000:2000/bl:41", source: "local:///noise.jpg"))
        #expect(second.status == 429)
        #expect(second.errorCode == "memory_busy")
        #expect(try await first.value.status == 200)
        #expect(fixture.server.service.admission.memory.usedBytes == 0)
        await fixture.stop()
    }

    @Test("idle and slow-header connections are closed after the header timeout; past the cap, a new connection displaces the one waiting longest for a head")
    func connectionLimits() async throws {
        let fixture = try await ServerFixture.start { config in
            config.headerTimeout = 3
            config.idleTimeout = 30
            config.maxConnections = 3
        }
        defer { Task { await fixture.stop() } }
        let connections = fixture.server.service.connections
        // One at a time: the server's event loops may take simultaneous connections in any order.
        func open(_ count: Int) async throws -> RawSocket {
            let socket = try #require(RawSocket(port: fixture.port))
            for _ in 0..<200 where connections.openConnections < count { try await Task.sleep(for: .milliseconds(5)) }
            return socket
        }
        func closed(_ socket: RawSocket, within seconds: TimeInterval) async -> Bool {
            await offThePool { socket.closedByPeer(within: seconds) }
        }
        let idle = try await open(1)
        let idleSince = ContinuousClock.now
        let slow = try await open(2)
        slow.send("GET /health HTTP/1.1\r\n")
        let capped = try await open(3)
        // Younger than the grace period, the waiting connections keep their places (checked only when the machine
        // got here well inside it).
        if ContinuousClock.now - idleSince < .milliseconds(700) {
            let early = try #require(RawSocket(port: fixture.port))
            #expect(await closed(early, within: 0.2), "a connection past the cap stayed open though none had waited 1 s")
        }
        try await Task.sleep(until: idleSince + .milliseconds(1200))
        let extra = try #require(RawSocket(port: fixture.port))
        // Well before the 3 s header timeout.
        #expect(await closed(idle, within: 0.5), "the connection waiting longest kept its place past the cap")
        #expect(await !closed(extra, within: 0.1), "the connection past the cap was closed though one was idle")
        #expect(await !closed(capped, within: 0.1), "a connection under the cap was closed")
        #expect(connections.openConnections == 3)
        let metrics = Self.metricsText(fixture.server.service)
        #expect(metrics.contains("halcyon_connections_displaced_total 1\n") && metrics.contains("halcyon_connections_open 3.0\n"))
        slow.send("X-Slow: 1\r\n")
        #expect(await closed(slow, within: 4), "a connection trickling its header was not closed")
        #expect(await closed(extra, within: 4), "an idle connection was not closed")
        // Slots are given back: a new client gets answers.
        capped.hangUp()
        try await Task.sleep(for: .milliseconds(100))
        #expect(connections.openConnections == 0)
        let health = try await fixture.get("/health")
        #expect(health.status == 200)
        await fixture.stop()
    }

    @Test("past the cap, with every connection busy answering, a new connection is closed at once")
    func connectionCapWhenBusy() async throws {
        let fixture = try await ServerFixture.start { config in
            config.maxConnections = 2
            config.idleTimeout = 30
        }
        defer { Task { await fixture.stop() } }
        let connections = fixture.server.service.connections
        var busy: [RawSocket] = []
        for index in 0..<2 {
            let socket = try #require(RawSocket(port: fixture.port))
            let path = fixture.signedPath("w:10", source: fixture.source("/delayed/\(index)?delay=2500"))
            socket.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            busy.append(socket)
        }
        for _ in 0..<400 where connections.openConnections < 2 || connections.waitingConnections > 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(connections.openConnections == 2 && connections.waitingConnections == 0)
        try await Task.sleep(for: .milliseconds(1100))
        let extra = try #require(RawSocket(port: fixture.port))
        #expect(await offThePool { extra.closedByPeer(within: 1) }, "a connection past the cap stayed open while every connection was busy")
        let metrics = Self.metricsText(fixture.server.service)
        #expect(metrics.contains("halcyon_connections_refused_total 1\n") && metrics.contains("halcyon_connections_waiting 0.0\n"),
                "\(metrics.split(separator: "\n").filter { $0.contains("connections") })")
        for socket in busy {
            let data = await offThePool { socket.receive(timeout: 5) { ServerCachedHitTests.responses($0).count >= 1 } }
            #expect(ServerCachedHitTests.responses(data).first?.status == 200, "a busy connection was displaced")
            socket.hangUp()
        }
        await fixture.stop()
    }

    @Test("a pipelined request keeps its connection busy after the answer before it: neither the header timeout nor a new connection at the cap closes it")
    func pipelinedRequestKeepsConnection() async throws {
        let fixture = try await ServerFixture.start { config in
            config.maxConnections = 1
            config.headerTimeout = 1
            config.idleTimeout = 30
        }
        defer { Task { await fixture.stop() } }
        let socket = try #require(RawSocket(port: fixture.port))
        let slow = fixture.signedPath("w:10", source: fixture.source("/delayed/pipelined?delay=2500"))
        let requests = "GET /health HTTP/1.1\r\nHost: a\r\n\r\nGET \(slow) HTTP/1.1\r\nHost: a\r\n\r\n"
        let first = await offThePool { socket.send(requests) ? socket.receive(timeout: 5) { ServerCachedHitTests.responses($0).count >= 1 } : Data() }
        #expect(ServerCachedHitTests.responses(first).first?.status == 200)
        try await Task.sleep(for: .milliseconds(1300))
        #expect(fixture.server.service.connections.waitingConnections == 0, "the busy connection counts as waiting")
        let extra = try #require(RawSocket(port: fixture.port))
        #expect(await offThePool { extra.closedByPeer(within: 1) }, "a connection past the cap stayed open while the only one was busy")
        let second = await offThePool { socket.receive(timeout: 5) { ServerCachedHitTests.responses($0).count >= 1 } }
        #expect(ServerCachedHitTests.responses(second).first?.status == 200, "the pipelined request lost its connection")
        socket.hangUp()
        await fixture.stop()
    }

    @Test("after each response the next head is due within the header timeout: steady requests keep the connection, silence closes it")
    func headerTimeoutBetweenRequests() async throws {
        let fixture = try await ServerFixture.start { config in
            config.headerTimeout = 0.5
            config.idleTimeout = 30
        }
        defer { Task { await fixture.stop() } }
        let socket = try #require(RawSocket(port: fixture.port))
        // Six requests 0.3 s apart span 1.8 s, over three timeouts: each head comes in time after the answer before it.
        let answered = await offThePool { () -> Int in
            var count = 0
            for index in 0..<6 {
                if index > 0 { Thread.sleep(forTimeInterval: 0.3) }
                guard socket.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n") else { break }
                let reply = socket.receive(timeout: 2) { String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") }
                guard String(decoding: reply, as: UTF8.self).hasPrefix("HTTP/1.1 200") else { break }
                count += 1
            }
            return count
        }
        #expect(answered == 6, "a connection sending heads in time was closed")
        let start = Date()
        #expect(await offThePool { socket.closedByPeer(within: 3) }, "a silent connection stayed open after its last answer")
        #expect(Date().timeIntervalSince(start) >= 0.3, "closed before the header timeout")
        await fixture.stop()
    }

    @Test("/metrics can bind its own host")
    func metricsHost() async throws {
        let fixture = try await ServerFixture.start { config in
            config.metricsPort = 0
            config.metricsHost = "127.0.0.2"
        }
        defer { Task { await fixture.stop() } }
        let port = try #require(fixture.server.metricsPort)
        #expect(RawSocket(port: port, host: "127.0.0.1") == nil, "metrics answered on the main host")
        let socket = try #require(RawSocket(port: port, host: "127.0.0.2"))
        socket.send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(socket.closedByPeer(within: 2))
        await fixture.stop()
    }

    @Test("one log line per request: method, path without signature, status, bytes, cache tier")
    func requestLog() async throws {
        let lines = LogLines()
        let fixture = try await ServerFixture.start(logger: Logger(label: "test") { _ in lines.handler() })
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:10", source: fixture.source("/image/logged"))
        _ = try await fixture.get(path)
        _ = try await fixture.get(path)
        _ = try await fixture.get("/AAAA/w:10/plain/x")
        let logged = lines.all.filter { $0.contains("GET /") }
        #expect(logged.count == 3, "\(lines.all)")
        let signature = String(path.dropFirst().prefix { $0 != "/" })
        #expect(!logged.contains { $0.contains(signature) }, "a signature was logged")
        #expect(logged.first?.contains(" 200 ") == true && logged.first?.contains("cache=none") == true, "\(logged)")
        #expect(logged.dropFirst().first?.contains("cache=response") == true, "\(logged)")
        #expect(logged.last?.contains(" 403 ") == true && logged.last?.contains("error=invalid_signature") == true, "\(logged)")
        await fixture.stop()
    }

    /// The `/metrics` text of `service`, with the connection gauges as a scrape sets them.
    static func metricsText(_ service: ImageService) -> String {
        _ = service.metricsResponse()
        return String(decoding: service.metrics.render(), as: UTF8.self)
    }
}

@Suite("HealthMonitor and the admission's slot queue")
struct HealthAndQueueTests {
    @Test("/health checks libvips at most once a second however many ask, and turns unhealthy")
    func healthIsCached() async throws {
        let calls = Locked(0)
        let healthy = Locked(true)
        let monitor = HealthMonitor(interval: .milliseconds(300)) {
            calls.withLock { $0 += 1 }
            Thread.sleep(forTimeInterval: 0.02)
            return healthy.withLock { $0 }
        }
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<64 { group.addTask { await monitor.isHealthy() } }
            for await answer in group { #expect(answer) }
        }
        #expect(calls.withLock { $0 } == 1)
        healthy.withLock { $0 = false }
        #expect(await monitor.isHealthy())
        try await Task.sleep(for: .milliseconds(350))
        #expect(await monitor.isHealthy() == false)
        #expect(calls.withLock { $0 } == 2)
    }

    @Test("a queued request gives up at its deadline")
    func queueDeadline() async {
        let limiter = SlotQueue(limit: 1, queue: 4)
        #expect(await limiter.acquire())
        let started = ContinuousClock.now
        #expect(await limiter.acquire(waitingAtMost: .milliseconds(200)) == false)
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(190) && waited < .seconds(2))
        #expect(limiter.waiting == 0)
        limiter.release()
        #expect(await limiter.acquire(waitingAtMost: .milliseconds(200)))
    }

    @Test("the default queue takes a burst")
    func defaultQueue() {
        #expect(ServerConfiguration().maxQueue >= 16)
    }
}

/// Collects log lines for a test.
final class LogLines: Sendable {
    private let lines = Locked<[String]>([])
    var all: [String] { lines.withLock { $0 } }

    func handler() -> some LogHandler { Handler(lines: self) }

    fileprivate func append(_ line: String) { lines.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let lines: LogLines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
            lines.append("\(level) \(message)")
        }
    }
}
