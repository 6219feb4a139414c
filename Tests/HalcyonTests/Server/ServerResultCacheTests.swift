import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

@Suite("Server result caches")
struct ServerResultCacheTests {
    @Test("An encoded result on disk answers a request the response cache misses, without the origin or a decode")
    func diskTierServesEncodedResult() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-results-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixture = try await ServerFixture.start { $0.cacheDirectory = folder.path }
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:24", source: fixture.source("/image/disk"), ext: "png")

        let first = try await fixture.get(path, headers: [("Accept", "image/png")])
        #expect(first.status == 200)
        let written = await fixture.upstream.wait(timeout: 5) { !ServerCacheTests.diskEntries(folder).isEmpty }
        #expect(written, "the result never reached the disk")
        // An Accept that negotiates another format is another response-cache key; the format is explicit, so the
        // result is the same.
        let second = try await fixture.get(path, headers: [("Accept", "image/webp,*/*")])
        #expect(second.status == 200)
        #expect(second.body == first.body)
        #expect(second.header("etag") == first.header("etag"))
        #expect(second.header("content-type") == "image/png")
        #expect(fixture.upstream.hits("/image/disk") == 1)

        let metrics = String(decoding: try await fixture.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"halcyon_cache_results_total{type="disk"} 1"#), "\(metrics)")
        #expect(metrics.contains("halcyon_processing_duration_seconds_count 1"), "\(metrics)")
        await fixture.stop()
    }

    @Test("A cache buster is part of the stored result's identity; an expiry is not")
    func cacheBusterReachesTheOrigin() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-results-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixture = try await ServerFixture.start { $0.cacheDirectory = folder.path }
        defer { Task { await fixture.stop() } }
        let source = fixture.source("/image/busted")
        let first = try await fixture.get(fixture.signedPath("w:24/cb:1", source: source, ext: "png"))
        #expect(first.status == 200)
        #expect(await fixture.upstream.wait(timeout: 5) { ServerCacheTests.diskEntries(folder).count == 1 })

        // A new cache buster exists to fetch the origin again (its image may have changed since).
        let busted = try await fixture.get(fixture.signedPath("w:24/cb:2", source: source, ext: "png"))
        #expect(busted.status == 200)
        #expect(fixture.upstream.hits("/image/busted") == 2, "cb:2 was answered with cb:1's stored result")
        #expect(await fixture.upstream.wait(timeout: 5) { ServerCacheTests.diskEntries(folder).count == 2 })

        // Two expiries change nothing in the answer: both are the stored result of cb:2.
        let later = Int(Date().timeIntervalSince1970) + 3600
        for expiry in [later, later + 1] {
            let reply = try await fixture.get(fixture.signedPath("w:24/cb:2/exp:\(expiry)", source: source, ext: "png"))
            #expect(reply.status == 200)
            #expect(reply.body == busted.body)
        }
        #expect(fixture.upstream.hits("/image/busted") == 2)
        await fixture.stop()
    }

    @Test("A repeated path is answered from the response cache; the same path with another signature is still refused")
    func responseCacheKeepsSignatureCheck() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:18", source: fixture.source("/image/sig"))
        #expect(try await fixture.get(path).status == 200)
        let again = try await fixture.get(path)
        #expect(again.status == 200)
        #expect(again.header("cache-control") == "public, max-age=\(fixture.configuration.cacheMaxAge)")
        #expect(again.header("x-content-type-options") == "nosniff")

        // Same options and source, signature of another key: never served from the cache.
        let segments = path.split(separator: "/", maxSplits: 1)
        let forged = "/" + String(repeating: "A", count: segments[0].count) + "/" + segments[1]
        let refused = try await fixture.get(forged)
        #expect(refused.status == 403)
        #expect(refused.errorCode == "invalid_signature")
        #expect(fixture.upstream.hits("/image/sig") == 1)
        await fixture.stop()
    }

    @Test("A request with a body is refused even when its path is cached")
    func cachedPathWithBodyIsRefused() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:14", source: fixture.source("/image/body"))
        #expect(try await fixture.get(path).status == 200)
        let withBody = try await fixture.get(path, body: Data("x".utf8))
        #expect(withBody.status == 413)
        await fixture.stop()
    }

    @Test("Cache sizes must not be negative; the default keeps no decoded images")
    func cacheSettings() throws {
        let defaults = ServerConfiguration()
        #expect(defaults.memoryCacheMegabytes == 0)
        var configuration = ServerConfiguration()
        configuration.insecure = true
        configuration.responseCacheMegabytes = -1
        #expect(throws: ServerConfiguration.ConfigurationError.self) { try configuration.validate() }
    }
}
