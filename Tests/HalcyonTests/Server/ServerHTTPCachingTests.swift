import Foundation
import Halcyon
@testable import HalcyonServer
import Testing

/// The headers a CDN or nginx `proxy_cache` in front of the service relies on.
@Suite("Server HTTP caching headers")
struct ServerHTTPCachingTests {
    @Test("Signed results are public with the configured max-age, `immutable` only when the operator says sources never change")
    func successCacheControl() async throws {
        let plain = try await ServerFixture.start { $0.cacheMaxAge = 600 }
        defer { Task { await plain.stop() } }
        let reply = try await plain.get(plain.signedPath("w:20", source: plain.source("/image/cc"), ext: "png"))
        #expect(reply.status == 200)
        #expect(reply.header("cache-control") == "public, max-age=600")
        await plain.stop()

        let immutable = try await ServerFixture.start { $0.cacheMaxAge = 600; $0.cacheImmutable = true }
        defer { Task { await immutable.stop() } }
        let path = immutable.signedPath("w:20", source: immutable.source("/image/cc"), ext: "png")
        let first = try await immutable.get(path)
        #expect(first.header("cache-control") == "public, max-age=600, immutable")
        // The response-cache hit carries the same header.
        #expect(try await immutable.get(path).header("cache-control") == "public, max-age=600, immutable")
        await immutable.stop()
    }

    @Test("`immutable` is never sent for unsigned URLs: anyone could have made them")
    func noImmutableUnsigned() async throws {
        let fixture = try await ServerFixture.start { c in
            c.keys = []
            c.salts = []
            c.insecure = true
            c.cacheImmutable = true
        }
        defer { Task { await fixture.stop() } }
        let encoded = Data(fixture.source("/image/unsigned").utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .trimmingCharacters(in: CharacterSet(charactersIn: "="))
        let reply = try await fixture.get("/insecure/w:20/\(encoded).png")
        #expect(reply.status == 200)
        #expect(reply.header("cache-control") == "public, max-age=\(fixture.configuration.cacheMaxAge)")
        await fixture.stop()
    }

    @Test("404 and 422 are cacheable for the negative TTL; other errors are no-store; TTL 0 makes them no-store too")
    func errorCacheControl() async throws {
        let fixture = try await ServerFixture.start(files: ["junk": Data("this is not an image".utf8)]) { $0.negativeCacheTTL = 7 }
        defer { Task { await fixture.stop() } }
        let missing = try await fixture.get(fixture.signedPath("w:20", source: fixture.source("/status/404")))
        #expect(missing.status == 404)
        #expect(missing.header("cache-control") == "public, max-age=7")
        let junk = try await fixture.get(fixture.signedPath("w:20", source: fixture.source("/files/junk")))
        #expect(junk.status == 422, "\(junk.errorCode ?? "")")
        #expect(junk.header("cache-control") == "public, max-age=7")
        let badOption = try await fixture.get(fixture.signedPath("zz:1", source: fixture.source("/image/x")))
        #expect(badOption.status == 400)
        #expect(badOption.header("cache-control") == "no-store")
        let badSignature = try await fixture.get("/AAAA/w:20/aGVsbG8")
        #expect(badSignature.status == 403)
        #expect(badSignature.header("cache-control") == "no-store")
        let upstreamDown = try await fixture.get(fixture.signedPath("w:20", source: fixture.source("/status/503")))
        #expect(upstreamDown.status >= 500)
        #expect(upstreamDown.header("cache-control") == "no-store")
        await fixture.stop()

        let strict = try await ServerFixture.start { $0.negativeCacheTTL = 0 }
        defer { Task { await strict.stop() } }
        let again = try await strict.get(strict.signedPath("w:20", source: strict.source("/status/404")))
        #expect(again.status == 404)
        #expect(again.header("cache-control") == "no-store")
        await strict.stop()
    }

    @Test("Vary: Accept only when the format was negotiated; ETag answers If-None-Match with 304")
    func varyAndConditional() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let explicit = try await fixture.get(fixture.signedPath("w:20", source: fixture.source("/image/v"), ext: "png"),
                                             headers: [("Accept", "image/webp")])
        #expect(explicit.status == 200)
        #expect(explicit.header("vary") == nil)
        let negotiatedPath = fixture.signedPath("w:20", source: fixture.source("/image/v"))
        let negotiated = try await fixture.get(negotiatedPath, headers: [("Accept", "image/webp,*/*")])
        #expect(negotiated.header("vary") == "Accept")
        #expect(negotiated.header("content-type") == "image/webp")
        let etag = try #require(negotiated.header("etag"))
        let conditional = try await fixture.get(negotiatedPath, headers: [("Accept", "image/webp,*/*"), ("If-None-Match", etag)])
        #expect(conditional.status == 304)
        #expect(conditional.body.isEmpty)
        #expect(conditional.header("etag") == etag)
        #expect(conditional.header("vary") == "Accept")
        await fixture.stop()
    }

    @Test("If-Modified-Since at or after Last-Modified is 304 (any of the three HTTP date forms); earlier, invalid, or overruled by If-None-Match is 200")
    func ifModifiedSince() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:20", source: fixture.source("/image/ims"), ext: "png")
        let first = try await fixture.get(path)
        let lastModified = try #require(first.header("last-modified"))
        let made = try #require(HTTPDate.parse(lastModified))
        #expect(HTTPDate.format(made) == lastModified)
        let later = HTTPDate.format(made + 3600)
        for value in [lastModified, later, Self.rfc850(made), Self.asctime(made)] {
            let reply = try await fixture.get(path, headers: [("If-Modified-Since", value)])
            #expect(reply.status == 304 && reply.body.isEmpty, "If-Modified-Since: \(value)")
            #expect(reply.header("last-modified") == lastModified && reply.header("etag") == first.header("etag"))
        }
        for value in [HTTPDate.format(made - 1), "yesterday", "Mon, 32 Nov 2026 10:00:00 GMT", ""] {
            let reply = try await fixture.get(path, headers: [("If-Modified-Since", value)])
            #expect(reply.status == 200 && reply.body == first.body, "If-Modified-Since: \(value)")
        }
        let overruled = try await fixture.get(path, headers: [("If-None-Match", "\"other\""), ("If-Modified-Since", later)])
        #expect(overruled.status == 200, "If-None-Match decides when both are sent")
        let head = try await fixture.get(path, headers: [("If-Modified-Since", later)], method: .HEAD)
        #expect(head.status == 304)
        // The answer that makes the result (not a response cache hit) takes the header too.
        let fresh = fixture.signedPath("w:21", source: fixture.source("/image/ims"), ext: "png")
        #expect(try await fixture.get(fresh, headers: [("If-Modified-Since", HTTPDate.format(made + 86_400))]).status == 304)
        await fixture.stop()
    }

    /// `made` in the obsolete RFC 850 form, which recipients must still accept: `Sunday, 06-Nov-94 08:49:37 GMT`.
    private static func rfc850(_ seconds: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEEE, dd-MMM-yy HH:mm:ss 'GMT'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// `made` in C's asctime form: `Sun Nov  6 08:49:37 1994`.
    private static func asctime(_ seconds: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE MMM d HH:mm:ss yyyy"
        let text = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
        // asctime pads a one-digit day with a space.
        var parts = text.split(separator: " ").map(String.init)
        if parts[2].count == 1 { parts[2] = " " + parts[2] }
        return parts.joined(separator: " ")
    }

    @Test("Accept headers that negotiate one format share one cached answer: varying the wording cannot flush the cache")
    func acceptWordingSharesAnEntry() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:20", source: fixture.source("/image/accept"))
        let first = try await fixture.get(path, headers: [("Accept", "image/webp")])
        #expect(first.status == 200 && first.header("content-type") == "image/webp")
        for variant in 0..<20 {
            let reply = try await fixture.get(path, headers: [("Accept", "image/webp;q=0.\(variant + 1), */*;v=\(variant)")])
            #expect(reply.status == 200 && reply.header("content-type") == "image/webp" && reply.body == first.body, "variant \(variant)")
        }
        let png = try await fixture.get(path, headers: [("Accept", "image/png")])
        #expect(png.status == 200 && png.header("content-type") != "image/webp", "a header that negotiates nothing is another entry")
        let metrics = String(decoding: try await fixture.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"halcyon_cache_results_total{type="response"} 20"#), "\(metrics.split(separator: "\n").filter { $0.contains("cache_results") })")
        await fixture.stop()
    }
}
