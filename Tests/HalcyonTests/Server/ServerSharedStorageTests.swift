import Foundation
import Halcyon
@testable import HalcyonServer
import Logging
import Testing

/// Two nodes sharing one real `redis-server` on loopback: a result computed by
/// one is served by the other, and Redis going away never fails a request.
@Suite("Server shared result storage (Redis)", .serialized)
struct ServerSharedStorageTests {
    private static func node(redis: String, folder: URL, logger: Logger? = nil) async throws -> ServerFixture {
        try await ServerFixture.start(logger: logger) { configuration in
            configuration.cacheDirectory = folder.path
            configuration.redisURL = redis
            configuration.redisTimeout = 0.5
        }
    }

    private static func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-shared-\(UUID().uuidString)")
    }

    private static func metrics(_ fixture: ServerFixture) async throws -> String {
        String(decoding: try await fixture.get("/metrics").body, as: UTF8.self)
    }

    /// The value of the sample `line` (name with labels) in a Prometheus text, 0 when absent.
    static func sample(_ text: String, _ line: String) -> Double {
        for row in text.split(separator: "\n") where row.hasPrefix(line + " ") {
            return Double(row.dropFirst(line.count + 1)) ?? 0
        }
        return 0
    }

    @Test("A result computed by node A is served by node B from Redis: same bytes and ETag, one origin fetch, nothing computed on B")
    func resultIsSharedAcrossNodes() async throws {
        let redis = try await RedisServerProcess.start()
        defer { redis.stop() }
        let (folderA, folderB) = (Self.folder(), Self.folder())
        defer { for f in [folderA, folderB] { try? FileManager.default.removeItem(at: f) } }
        let a = try await Self.node(redis: redis.url, folder: folderA)
        defer { Task { await a.stop() } }
        let b = try await Self.node(redis: redis.url, folder: folderB)
        defer { Task { await b.stop() } }

        let path = a.signedPath("w:40", source: a.source("/image/shared"), ext: "png")
        let first = try await a.get(path)
        #expect(first.status == 200)
        let stored = await a.upstream.wait(timeout: 5) { redis.keyCount() == 1 }
        #expect(stored, "the result never reached Redis")

        let second = try await b.get(path)
        #expect(second.status == 200)
        #expect(second.body == first.body)
        #expect(second.header("etag") == first.header("etag"))
        #expect(second.header("content-type") == "image/png")
        #expect(a.upstream.hits("/image/shared") == 1, "node B fetched the origin")
        let metricsB = try await Self.metrics(b)
        #expect(Self.sample(metricsB, #"halcyon_cache_results_total{type="redis"}"#) == 1, "\(metricsB)")
        #expect(Self.sample(metricsB, "halcyon_results_computed_total") == 0, "\(metricsB)")
        let metricsA = try await Self.metrics(a)
        #expect(Self.sample(metricsA, "halcyon_results_computed_total") == 1, "\(metricsA)")

        // B copied the shared hit to its own disk: with Redis gone, B still answers without the origin.
        redis.kill()
        let copied = await b.upstream.wait(timeout: 5) { ServerCacheTests.diskEntries(folderB).count >= 1 }
        #expect(copied)
        let third = try await b.get(path, headers: [("Accept", "*/*")])
        #expect(third.status == 200)
        #expect(third.body == first.body)
        #expect(a.upstream.hits("/image/shared") == 1)
        await a.stop()
        await b.stop()
    }

    @Test("Redis down: requests still succeed from the origin, failures are counted, one warning is logged, and the node reconnects by itself")
    func redisDownThenBack() async throws {
        let redis = try await RedisServerProcess.start()
        let port = redis.port
        redis.kill()
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let logs = CapturedLogs.Store()
        let node = try await Self.node(redis: "redis://127.0.0.1:\(port)/0", folder: folder, logger: CapturedLogs.logger(into: logs))
        defer { Task { await node.stop() } }

        for index in 0..<4 {
            let started = ContinuousClock.now
            let reply = try await node.get(node.signedPath("w:\(20 + index)", source: node.source("/image/down\(index)")))
            #expect(reply.status == 200)
            #expect(ContinuousClock.now - started < .seconds(3), "a request waited on the dead Redis")
        }
        let metrics = try await Self.metrics(node)
        #expect(Self.sample(metrics, #"halcyon_storage_errors_total{tier="redis"}"#) >= 1, "\(metrics)")
        let warnings = logs.all.filter { $0.contains("shared result storage unavailable") }
        #expect(warnings.count == 1, "\(logs.all)")

        // Redis comes back on the same port: the next results reach it without a restart of the node.
        let back = try await RedisServerProcess.start(port: port)
        defer { back.stop() }
        var reached = false
        for index in 0..<20 where !reached {
            try await Task.sleep(for: .milliseconds(400))
            _ = try await node.get(node.signedPath("w:\(60 + index)", source: node.source("/image/back\(index)")))
            reached = await node.upstream.wait(timeout: 1) { back.keyCount() >= 1 }
        }
        #expect(reached, "the node never wrote to Redis after it came back")
        #expect(logs.all.contains { $0.contains("shared result storage is back") }, "\(logs.all)")
        await node.stop()
    }

    @Test("A wrong Redis password is a counted storage error, never a failed request")
    func wrongPassword() async throws {
        let redis = try await RedisServerProcess.start(password: "right-password")
        defer { redis.stop() }
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let node = try await Self.node(redis: "redis://:wrong-password@127.0.0.1:\(redis.port)/0", folder: folder)
        defer { Task { await node.stop() } }
        let reply = try await node.get(node.signedPath("w:30", source: node.source("/image/auth")))
        #expect(reply.status == 200)
        let metrics = try await Self.metrics(node)
        #expect(Self.sample(metrics, #"halcyon_storage_errors_total{tier="redis"}"#) >= 1, "\(metrics)")
        await node.stop()
    }

    @Test("An unusable Redis URL is refused at start, the password never shown")
    func invalidURL() {
        var configuration = ServerConfiguration()
        configuration.insecure = true
        configuration.redisURL = "http://:secret@127.0.0.1:6379"
        #expect(throws: ServerConfiguration.ConfigurationError.self) { try configuration.validate() }
        do {
            try configuration.validate()
        } catch {
            #expect(!error.message.contains("secret"), "\(error.message)")
        }
        configuration.redisURL = "redis://:secret@127.0.0.1:6379/0"
        #expect(!configuration.printable().contains("secret"))
    }
}
