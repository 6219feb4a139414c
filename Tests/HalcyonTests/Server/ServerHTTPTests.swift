import Foundation
import Halcyon
import HalcyonServer
import NIOHTTP1
import Testing

@Suite("Server HTTP")
struct ServerHTTPTests {
    @Test("A signed request is fetched, resized and served with the cache and safety headers")
    func signedRequest() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let reply = try await fixture.get(fixture.signedPath("rs:fit:32:32", source: fixture.source("/image/a")))
        #expect(reply.status == 200)
        #expect(reply.header("content-type") == "image/jpeg")
        #expect(reply.header("cache-control") == "public, max-age=31536000")
        #expect(reply.header("content-security-policy") == "default-src 'none'; sandbox")
        #expect(reply.header("x-content-type-options") == "nosniff")
        #expect(reply.header("etag")?.hasPrefix("\"") == true)
        #expect(reply.header("last-modified")?.hasSuffix("GMT") == true)
        #expect(reply.header("vary") == "Accept")
        let image = try Image(data: reply.body)
        #expect(image.width == 32 && image.height == 24)
        // The same request again reuses the work: no second download.
        let again = try await fixture.get(fixture.signedPath("rs:fit:32:32", source: fixture.source("/image/a")))
        #expect(again.status == 200 && again.body == reply.body)
        #expect(fixture.upstream.hits("/image/a") == 1)
        await fixture.stop()
    }

    @Test("A bad or missing signature is 403 and nothing is fetched; a rotated key still verifies")
    func signatures() async throws {
        let oldKey = String(repeating: "0011223344556677", count: 4), oldSalt = "8899aabb"
        let fixture = try await ServerFixture.start { config in
            config.keys.append(oldKey)
            config.salts.append(oldSalt)
        }
        defer { Task { await fixture.stop() } }
        let good = fixture.signedPath("w:16", source: fixture.source("/image/sig"))
        let tampered = good.replacingOccurrences(of: "w:16", with: "w:17")
        let bad = try await fixture.get(tampered)
        #expect(bad.status == 403)
        #expect(bad.errorCode == "invalid_signature")
        #expect(bad.header("cache-control") == "no-store", "a refusal is never cached")
        let unsigned = try await fixture.get("/insecure/w:16/" + good.split(separator: "/").last!)
        #expect(unsigned.status == 403)
        #expect(fixture.upstream.hits("/image/sig") == 0)
        let rotated = try await fixture.get(fixture.signedPath("w:16", source: fixture.source("/image/sig"), key: oldKey, salt: oldSalt))
        #expect(rotated.status == 200)
        await fixture.stop()
    }

    @Test("Insecure mode serves unsigned paths when no key is set")
    func insecureMode() async throws {
        let fixture = try await ServerFixture.start { config in
            config.keys = []
            config.salts = []
            config.insecure = true
        }
        defer { Task { await fixture.stop() } }
        let encoded = Data(fixture.source("/image/insecure").utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let reply = try await fixture.get("/insecure/w:10/\(encoded).png")
        #expect(reply.status == 200)
        #expect(reply.header("content-type") == "image/png")
        await fixture.stop()
    }

    @Test("Every option changes the output as asked")
    func everyOption() async throws {
        let source = try TestImages.encodedGradient(.png(), width: 80, height: 40)
        let fixture = try await ServerFixture.start(image: source)
        defer { Task { await fixture.stop() } }
        func fetch(_ options: String, ext: String? = "png") async throws -> Image {
            let reply = try await fixture.get(fixture.signedPath(options, source: fixture.source("/image/opts"), ext: ext))
            #expect(reply.status == 200, "\(options): \(String(decoding: reply.body, as: UTF8.self))")
            return try Image(data: reply.body)
        }
        let fit = try await fetch("rs:fit:40:40")
        #expect(fit.width == 40 && fit.height == 20)
        let fill = try await fetch("rs:fill:20:20")
        #expect(fill.width == 20 && fill.height == 20)
        // Gravity: the west crop keeps the dark left edge, the east crop the bright right edge.
        let west = try await fetch("rs:fill:20:20/g:we")
        let east = try await fetch("rs:fill:20:20/g:ea")
        #expect(try west.pixel(x: 0, y: 10).red < 30)
        #expect(try east.pixel(x: 19, y: 10).red > 225)
        for gravity in ["ce", "no", "so", "sm"] {
            let anchored = try await fetch("rs:fill:20:20/g:\(gravity)")
            #expect(anchored.width == 20 && anchored.height == 20)
        }
        let force = try await fetch("rs:force:30:30")
        #expect(force.width == 30 && force.height == 30)
        let width = try await fetch("w:20")
        #expect(width.width == 20 && width.height == 10)
        let height = try await fetch("h:10")
        #expect(height.width == 20 && height.height == 10)
        let noEnlarge = try await fetch("rs:fit:400:400")
        #expect(noEnlarge.width == 80 && noEnlarge.height == 40)
        let gray = try await fetch("bw")
        let grayPixel = try gray.pixel(x: 40, y: 20)
        #expect(grayPixel.red == grayPixel.green && grayPixel.green == grayPixel.blue)
        let tinted = try await fetch("tint:0000ff")
        let tintPixel = try tinted.pixel(x: 70, y: 5)
        #expect(tintPixel.blue > tintPixel.red)
        let rounded = try await fetch("rd:12")
        #expect(try rounded.pixel(x: 0, y: 0).alpha == 0)
        #expect(try rounded.pixel(x: 40, y: 20).alpha == 255)
        let blurred = try await fetch("bl:4")
        #expect(blurred.width == 80)
        let sharpEdge = try await fetch("rs:force:80:40")
        #expect(try blurred.pixel(x: 0, y: 0) != sharpEdge.pixel(x: 0, y: 0) || blurred.width == 80)
        let asWebP = try await fetch("f:webp", ext: nil)
        #expect(asWebP.originalFormat == .webp)
        let low = try await fixture.get(fixture.signedPath("q:5", source: fixture.source("/image/opts"), ext: "jpg"))
        let high = try await fixture.get(fixture.signedPath("q:95", source: fixture.source("/image/opts"), ext: "jpg"))
        #expect(low.status == 200 && high.status == 200)
        #expect(low.body.count < high.body.count)
        await fixture.stop()
    }

    @Test("An unknown option is 400 naming it; a size over the result limit is 400")
    func unknownOption() async throws {
        let fixture = try await ServerFixture.start { $0.maxResultDimension = 100 }
        defer { Task { await fixture.stop() } }
        let reply = try await fixture.get(fixture.signedPath("w:10/frobnicate:3", source: fixture.source("/image/u")))
        #expect(reply.status == 400)
        #expect(reply.errorCode == "invalid_option")
        #expect(reply.errorMessage?.contains("frobnicate") == true)
        let big = try await fixture.get(fixture.signedPath("w:101", source: fixture.source("/image/u")))
        #expect(big.status == 400)
        #expect(fixture.upstream.hits("/image/u") == 0)
        await fixture.stop()
    }

    @Test("Accept picks WebP with Vary: Accept; an extension wins over Accept; else the source's format")
    func acceptNegotiation() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:16", source: fixture.source("/image/accept"))
        let webp = try await fixture.get(path, headers: [("Accept", "image/webp,image/*;q=0.8")])
        #expect(webp.status == 200)
        #expect(webp.header("content-type") == "image/webp")
        #expect(webp.header("vary") == "Accept")
        let plain = try await fixture.get(path, headers: [("Accept", "image/*")])
        #expect(plain.header("content-type") == "image/jpeg")
        let refusedWebP = try await fixture.get(path, headers: [("Accept", "image/webp;q=0")])
        #expect(refusedWebP.header("content-type") == "image/jpeg")
        let png = try await fixture.get(fixture.signedPath("w:16", source: fixture.source("/image/accept"), ext: "png"),
                                        headers: [("Accept", "image/webp")])
        #expect(png.header("content-type") == "image/png")
        #expect(png.header("vary") == nil)
        let encodedSource = fixture.source("/image/accept").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let plainForm = try await fixture.get(ServerFixture.sign("/w:16/plain/\(encodedSource)@png"))
        #expect(plainForm.status == 200)
        #expect(plainForm.header("content-type") == "image/png")
        await fixture.stop()
    }

    @Test("If-None-Match with the ETag is 304 without a body")
    func notModified() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:20", source: fixture.source("/image/etag"))
        let first = try await fixture.get(path)
        let etag = try #require(first.header("etag"))
        let second = try await fixture.get(path, headers: [("If-None-Match", etag)])
        #expect(second.status == 304)
        #expect(second.body.isEmpty)
        #expect(second.header("etag") == etag)
        let other = try await fixture.get(path, headers: [("If-None-Match", "\"other\"")])
        #expect(other.status == 200)
        await fixture.stop()
    }

    @Test("Upstream failures are JSON errors with stable codes that never echo the upstream body")
    func upstreamErrors() async throws {
        let fixture = try await ServerFixture.start(files: ["text": Data("hello, not an image".utf8)]) { $0.maxRedirects = 2 }
        defer { Task { await fixture.stop() } }
        let missing = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/status/404")))
        #expect(missing.status == 404)
        #expect(missing.errorCode == "source_not_found")
        #expect(!String(decoding: missing.body, as: UTF8.self).contains("status 404"))
        #expect(missing.header("cache-control") == "public, max-age=\(fixture.configuration.negativeCacheTTL)", "a 404 is cached for the negative TTL only")
        let broken = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/status/500")))
        #expect(broken.status == 502 && broken.errorCode == "source_bad_status")
        let loops = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/redirect/5")))
        #expect(loops.errorCode == "source_too_many_redirects")
        let notImage = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/files/text")))
        #expect(notImage.status == 422 && notImage.errorCode == "unsupported_image")
        let badSource = try await fixture.get(ServerFixture.sign("/w:10/plain/ftp%3A%2F%2Fexample.com%2Fa.png"))
        #expect(badSource.status == 400 && badSource.errorCode == "invalid_source")
        await fixture.stop()
    }

    @Test("Every method but GET and HEAD is 405 with Allow: GET, HEAD, on image paths and elsewhere")
    func onlyGetAndHead() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let image = fixture.signedPath("w:10", source: fixture.source("/image/methods"))
        let methods: [HTTPMethod] = [.POST, .PUT, .DELETE, .PATCH, .OPTIONS, .TRACE, .RAW(value: "PURGE")]
        for method in methods {
            for path in [image, "/health", "/no/such/thing"] {
                let reply = try await fixture.get(path, method: method)
                #expect(reply.status == 405 && reply.errorCode == "method_not_allowed", "\(method) \(path): \(reply.status)")
                #expect(reply.header("Allow") == "GET, HEAD", "\(method) \(path)")
            }
        }
        #expect(try await fixture.get(image, method: .HEAD).status == 200)
        #expect(try await fixture.get("/no/such/thing").status != 405)
        await fixture.stop()
    }

    @Test("GET /health makes and encodes an image")
    func health() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let reply = try await fixture.get("/health")
        #expect(reply.status == 200)
        #expect(String(decoding: reply.body, as: UTF8.self) == #"{"status":"ok"}"#)
        // Load balancers often check with HEAD.
        let head = try await fixture.get("/health", method: .HEAD)
        #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == String(reply.body.count))
        #expect(HealthCheck().check())
        await fixture.stop()
    }

    @Test("GET /metrics exposes requests, statuses, errors, durations, cache results and in-flight")
    func metrics() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        _ = try await fixture.get(fixture.signedPath("w:12", source: fixture.source("/image/m")))
        _ = try await fixture.get(fixture.signedPath("w:12", source: fixture.source("/image/m")))
        _ = try await fixture.get("/bad/w:12/aGVsbG8")
        let reply = try await fixture.get("/metrics")
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(reply.status == 200)
        #expect(text.contains(#"halcyon_requests_total{route="image",status="200"} 2"#))
        #expect(text.contains(#"halcyon_errors_total{code="invalid_signature"} 1"#))
        #expect(text.contains("halcyon_download_duration_seconds_count 1"))
        #expect(text.contains("halcyon_processing_duration_seconds_count 1"))
        #expect(text.contains(#"halcyon_cache_results_total{type="none"} 1"#))
        #expect(text.contains(#"halcyon_cache_results_total{type="response"} 1"#))
        #expect(text.contains("halcyon_requests_in_flight"))
        await fixture.stop()
    }

    @Test("/metrics on its own port when configured")
    func metricsPort() async throws {
        let fixture = try await ServerFixture.start { $0.metricsPort = 0 }
        defer { Task { await fixture.stop() } }
        let port = try #require(fixture.server.metricsPort)
        let own = try await fixture.get("/metrics", port: port)
        #expect(own.status == 200)
        #expect(String(decoding: own.body, as: UTF8.self).contains("halcyon_requests"))
        let main = try await fixture.get("/metrics")
        #expect(main.status != 200)
        // The metrics port follows the same HTTP rules as the main one.
        let head = try await fixture.get("/metrics", method: .HEAD, port: port)
        #expect(head.status == 200 && head.body.isEmpty && (Int(head.header("Content-Length") ?? "") ?? 0) > 100)
        let options = try await fixture.get("/metrics", method: .OPTIONS, port: port)
        #expect(options.status == 405 && options.header("Allow") == "GET, HEAD")
        let old = try await ServerKeepAliveTests.askOnce(port, "GET /metrics HTTP/1.0\r\n\r\n")
        #expect(ServerKeepAliveTests.statusLine(old.data) == "HTTP/1.0 200 OK" && old.closed)
        await fixture.stop()
    }
}
