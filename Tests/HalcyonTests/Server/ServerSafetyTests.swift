import AsyncHTTPClient
import Foundation
import Halcyon
import HalcyonServer
import NIOCore
import NIOHTTP1
import Testing

@Suite("Server SSRF guard")
struct ServerSSRFTests {
    /// Each URL is refused before any connection: the loopback upstream sees no request.
    @Test("Every address class is refused with a clear error and no connection", arguments: [
        "http://127.0.0.1:{port}/image/ssrf",
        "http://[::ffff:127.0.0.1]:{port}/image/ssrf",
        "http://localhost:{port}/image/ssrf",
        "http://[::1]:{port}/image/ssrf",
        "http://[::127.0.0.1]:{port}/image/ssrf",
        "http://[2002:7f00:1::]:{port}/image/ssrf",
        "http://[64:ff9b::7f00:1]:{port}/image/ssrf",
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:{port}/image/ssrf",
        "http://10.0.0.1:{port}/image/ssrf",
        "http://169.254.169.254/latest/meta-data",
        "http://100.64.0.1:{port}/image/ssrf",
        "http://0.0.0.0:{port}/image/ssrf",
        "http://224.0.0.1:{port}/image/ssrf",
    ])
    func refused(_ template: String) async throws {
        let fixture = try await ServerFixture.start { $0.allowLoopback = false }
        defer { Task { await fixture.stop() } }
        let url = template.replacingOccurrences(of: "{port}", with: String(fixture.upstream.port))
        let reply = try await fixture.get(fixture.signedPath("w:10", source: url))
        #expect(reply.status == 403, "\(url): \(String(decoding: reply.body, as: UTF8.self))")
        #expect(reply.errorCode == "source_address_forbidden")
        #expect(fixture.upstream.totalHits == 0)
        await fixture.stop()
    }

    @Test("A source with a port past 65535 is a 400, a redirect to one a 502, and the server goes on serving")
    func portOutOfRange() async throws {
        let fixture = try await ServerFixture.start { $0.allowLoopback = true }
        defer { Task { await fixture.stop() } }
        for source in ["http://127.0.0.1:99999/image/p", "http://localhost:65536/image/p"] {
            let reply = try await fixture.get(fixture.signedPath("w:10", source: source))
            #expect(reply.status == 400 && reply.errorCode == "invalid_source", "\(source): \(reply.status)")
        }
        let target = "http://127.0.0.1:70000/x".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let redirected = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/redirect-to?location=\(target)")))
        #expect(redirected.status == 502 && redirected.errorCode == "source_bad_redirect", "\(redirected.status)")
        #expect(try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/image/after"))).status == 200)
        await fixture.stop()
    }

    @Test("An origin's status below 100 is a 502, and the server goes on serving")
    func originStatusBelow100() async throws {
        let origin = try await RawHTTPOrigin.start(response: "HTTP/1.1 099 X\r\nContent-Length: 5\r\n\r\nhello")
        let fixture = try await ServerFixture.start { $0.allowLoopback = true }
        defer { Task { await fixture.stop() } }
        let reply = try await fixture.get(fixture.signedPath("w:10", source: origin.url("/x.png").absoluteString))
        #expect(reply.status == 502 && reply.errorCode == "source_bad_status", "\(reply.status) \(reply.errorCode ?? "")")
        #expect(try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/image/after"))).status == 200)
        await fixture.stop()
        await origin.shutdown()
    }

    @Test("An origin's body in a coding the server cannot decode (br), or that does not decode in its coding, is 502 source_bad_encoding")
    func originContentEncoding() async throws {
        let png = try TestImages.encodedGradient(.png(), width: 20, height: 20)
        let origin = try await RawHTTPOrigin.start { path, _ in
            RawHTTPOrigin.answer("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Encoding: \(path == "/br.png" ? "br" : "gzip")",
                                 body: png)
        }
        let fixture = try await ServerFixture.start { $0.allowLoopback = true }
        defer { Task { await fixture.stop() } }
        for path in ["/br.png", "/not-gzip.png"] {
            let reply = try await fixture.get(fixture.signedPath("w:10", source: origin.url(path).absoluteString))
            #expect(reply.status == 502 && reply.errorCode == "source_bad_encoding", "\(path): \(reply.status) \(reply.errorCode ?? "")")
        }
        await fixture.stop()
        await origin.shutdown()
    }

    @Test("An origin's gzip body is inflated up to the source size limit: a flat 3 MB PNG at any ratio is served, a bomb past the limit is 422")
    func originCompressedBodies() async throws {
        let flat = PNGFile.make(pixels: [UInt8](repeating: 90, count: 1000 * 1000 * 3), width: 1000, height: 1000, bands: 3)
        let gzip = try Gzipped.encode(flat), bomb = Data(PNGFile.zlibZerosDense(runs: 40_000))
        let origin = try await RawHTTPOrigin.start { path, _ in
            path == "/flat.png"
                ? RawHTTPOrigin.answer("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Encoding: gzip", body: gzip)
                : RawHTTPOrigin.answer("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Encoding: deflate", body: bomb)
        }
        let fixture = try await ServerFixture.start { config in
            config.allowLoopback = true
            config.maxSourceBytes = 4 << 20
        }
        defer { Task { await fixture.stop() } }
        let served = try await fixture.get(fixture.signedPath("w:10", source: origin.url("/flat.png").absoluteString))
        #expect(served.status == 200, "\(served.status) \(served.errorCode ?? "")")
        let refused = try await fixture.get(fixture.signedPath("w:10", source: origin.url("/bomb.png").absoluteString))
        #expect(refused.status == 422 && refused.errorCode == "source_too_large", "\(refused.status) \(refused.errorCode ?? "")")
        await fixture.stop()
        await origin.shutdown()
    }

    @Test("A redirect to a refused address is refused at that hop")
    func redirectHop() async throws {
        let fixture = try await ServerFixture.start { $0.allowLoopback = true }
        defer { Task { await fixture.stop() } }
        let target = "http://10.1.2.3/secret".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let reply = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/redirect-to?location=\(target)")))
        #expect(reply.status == 403)
        #expect(reply.errorCode == "source_address_forbidden")
        await fixture.stop()
    }

    @Test("Allowed-source prefixes")
    func allowedPrefixes() async throws {
        let fixture = try await ServerFixture.start { config in config.allowedSources = ["http://127.0.0.1:1/only/"] }
        defer { Task { await fixture.stop() } }
        let reply = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/image/p")))
        #expect(reply.status == 403 && reply.errorCode == "source_not_allowed")
        #expect(fixture.upstream.totalHits == 0)
        await fixture.stop()
    }
}

@Suite("Server local sources")
struct ServerLocalTests {
    @Test("local:// serves files under the root and refuses .., symlink escapes and missing files")
    func localSources() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-local-\(UUID().uuidString)")
        let root = base.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("sub"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        try ManagerFixture.sampleImage().write(to: root.appendingPathComponent("sub/a.jpg"))
        try ManagerFixture.sampleImage().write(to: base.appendingPathComponent("outside.jpg"))
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("link.jpg").path,
                                                   withDestinationPath: base.appendingPathComponent("outside.jpg").path)
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("inside.jpg").path,
                                                   withDestinationPath: root.appendingPathComponent("sub/a.jpg").path)
        let fixture = try await ServerFixture.start { $0.localRoot = root.path }
        defer { Task { await fixture.stop() } }
        let ok = try await fixture.get(fixture.signedPath("w:16", source: "local://sub/a.jpg"))
        #expect(ok.status == 200)
        #expect(try Image(data: ok.body).width == 16)
        let insideLink = try await fixture.get(fixture.signedPath("w:16", source: "local://inside.jpg"))
        #expect(insideLink.status == 200)
        for escape in ["local://../outside.jpg", "local://sub/../../outside.jpg", "local://link.jpg"] {
            let reply = try await fixture.get(fixture.signedPath("w:16", source: escape))
            #expect(reply.status == 403, "\(escape)")
            #expect(reply.errorCode == "path_escape", "\(escape)")
        }
        let missing = try await fixture.get(fixture.signedPath("w:16", source: "local://nope.jpg"))
        #expect(missing.status == 404)
        await fixture.stop()
    }
}

@Suite("Server caches")
struct ServerCacheTests {
    /// Finished entries in a disk cache folder (temporary files start with a dot).
    static func diskEntries(_ folder: URL) -> [String] {
        let names = (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String]) ?? []
        return names.filter { name in
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path, isDirectory: &isFolder)
            return exists && !isFolder.boolValue && !(name as NSString).lastPathComponent.hasPrefix(".")
        }
    }

    @Test("the disk cache keeps processed results of http sources, not of local files")
    func diskCacheHoldsNetworkResultsOnly() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-caches-\(UUID().uuidString)")
        let root = base.appendingPathComponent("root"), cache = base.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        try ManagerFixture.sampleImage().write(to: root.appendingPathComponent("a.jpg"))
        let fixture = try await ServerFixture.start {
            $0.localRoot = root.path
            $0.cacheDirectory = cache.path
        }
        defer { Task { await fixture.stop() } }

        let local = try await fixture.get(fixture.signedPath("w:16", source: "local://a.jpg"))
        #expect(local.status == 200)
        let remote = try await fixture.get(fixture.signedPath("w:16", source: fixture.source("/image/a")))
        #expect(remote.status == 200)
        #expect(try Image(data: remote.body).width == 16)
        // Disk writes finish after the response: wait for the first, then give a second one time to show up.
        let written = await fixture.upstream.wait(timeout: 5) { !Self.diskEntries(cache).isEmpty }
        #expect(written, "the http result never reached the disk cache")
        try await Task.sleep(for: .milliseconds(300))
        #expect(Self.diskEntries(cache).count == 1, "\(Self.diskEntries(cache))")
        await fixture.stop()
    }
}

@Suite("Server limits")
struct ServerLimitTests {
    @Test("A 16384×16384 PNG bomb is refused from its header")
    func pngBomb() async throws {
        let bomb = try TestImages.pngClaimingSize(width: 16384, height: 16384)
        let fixture = try await ServerFixture.start(files: ["bomb.png": bomb])
        defer { Task { await fixture.stop() } }
        let started = ContinuousClock.now
        let reply = try await fixture.get(fixture.signedPath("w:100", source: fixture.source("/files/bomb.png")))
        #expect(reply.status == 422)
        #expect(reply.errorCode == "source_too_many_pixels")
        // Decoding 268 MP would take seconds and a gigabyte; the header check takes milliseconds.
        #expect(ContinuousClock.now - started < .seconds(2))
        // Without a resize too (the default processor checks the same header).
        let plain = try await fixture.get(fixture.signedPath("", source: fixture.source("/files/bomb.png")))
        #expect(plain.errorCode == "source_too_many_pixels")
        await fixture.stop()
    }

    @Test("Source bytes, megapixels, frames and result size limits")
    func limits() async throws {
        let big = try TestImages.encodedGradient(.png(), width: 200, height: 200)
        let animation = try TestImages.animation(frames: 5).encoded(as: .gif)
        let fixture = try await ServerFixture.start(files: ["big.png": big, "anim.gif": animation]) { config in
            config.maxSourceBytes = big.count - 1
            config.maxFrames = 3
            config.maxAnimationFrames = 100
            config.maxResultDimension = 150
        }
        defer { Task { await fixture.stop() } }
        let tooLarge = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/files/big.png")))
        #expect(tooLarge.status == 422 && tooLarge.errorCode == "source_too_large")
        let frames = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/files/anim.gif")))
        #expect(frames.status == 422 && frames.errorCode == "source_too_many_frames")
        await fixture.stop()

        let pixels = try await ServerFixture.start(files: ["big.png": big]) { config in
            config.maxSourceMegapixels = 0.01
        }
        defer { Task { await pixels.stop() } }
        let tooMany = try await pixels.get(pixels.signedPath("w:10", source: pixels.source("/files/big.png")))
        #expect(tooMany.status == 422 && tooMany.errorCode == "source_too_many_pixels")
        await pixels.stop()

        let result = try await ServerFixture.start(files: ["big.png": big]) { $0.maxResultDimension = 150 }
        defer { Task { await result.stop() } }
        let unresized = try await result.get(result.signedPath("", source: result.source("/files/big.png")))
        #expect(unresized.status == 422 && unresized.errorCode == "result_too_large")
        await result.stop()
    }

    @Test("Request bodies are refused; slow sources time out; only GET and HEAD")
    func bodiesAndTimeouts() async throws {
        let fixture = try await ServerFixture.start { config in
            config.requestTimeout = 0.5
        }
        defer { Task { await fixture.stop() } }
        let path = fixture.signedPath("w:10", source: fixture.source("/hang/t"))
        let withBody = try await fixture.get(path, method: .POST, body: Data("x".utf8))
        #expect(withBody.status == 413 || withBody.status == 405)
        let getWithBody = try await fixture.get(path, method: .GET, body: Data("xyz".utf8))
        #expect(getWithBody.status == 413)
        #expect(getWithBody.errorCode == "request_body_not_allowed")
        let hung = try await fixture.get(path)
        #expect(hung.status == 504)
        #expect(hung.errorCode == "request_timeout")
        await fixture.stop()

        let download = try await ServerFixture.start { config in
            config.downloadTimeout = 0.3
            config.requestTimeout = 10
        }
        defer { Task { await download.stop() } }
        let started = ContinuousClock.now
        let idle = try await download.get(download.signedPath("w:10", source: download.source("/hang/d")))
        #expect(idle.status == 504)
        #expect(idle.errorCode == "source_timeout")
        #expect(ContinuousClock.now - started < .seconds(5))
        await download.stop()
    }

    @Test("Past max in-flight the server answers 429 at once")
    func tooManyRequests() async throws {
        let fixture = try await ServerFixture.start { config in
            config.maxInFlight = 1
            config.maxQueue = 0
        }
        defer { Task { await fixture.stop() } }
        let slow = fixture.signedPath("w:10", source: fixture.source("/delayed/busy?delay=1500"))
        let first = Task { try await fixture.get(slow) }
        #expect(await fixture.upstream.wait(timeout: 5) { fixture.upstream.inFlight == 1 })
        let started = ContinuousClock.now
        let second = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/image/other")))
        #expect(second.status == 429)
        #expect(second.errorCode == "too_many_requests")
        #expect(second.header("retry-after") == "1")
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(try await first.value.status == 200)
        // The slot is free again.
        let third = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/image/other")))
        #expect(third.status == 200)
        await fixture.stop()
    }

    @Test("A short queue waits for a slot instead of refusing")
    func queueWaits() async throws {
        let fixture = try await ServerFixture.start { config in
            config.maxInFlight = 1
            config.maxQueue = 1
        }
        defer { Task { await fixture.stop() } }
        let first = Task { try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/delayed/q1?delay=500"))) }
        #expect(await fixture.upstream.wait(timeout: 5) { fixture.upstream.inFlight == 1 })
        let second = try await fixture.get(fixture.signedPath("w:10", source: fixture.source("/image/q2")))
        #expect(second.status == 200)
        #expect(try await first.value.status == 200)
        await fixture.stop()
    }
}

@Suite("Server lifecycle")
struct ServerLifecycleTests {
    @Test("Graceful shutdown finishes the requests in flight, then stops listening")
    func gracefulShutdown() async throws {
        let fixture = try await ServerFixture.start()
        defer { Task { await fixture.stop() } }
        let slow = fixture.signedPath("w:10", source: fixture.source("/delayed/shutdown?delay=800"))
        let inFlight = Task { try await fixture.get(slow) }
        #expect(await fixture.upstream.wait(timeout: 5) { fixture.upstream.inFlight == 1 })
        let shutdownStarted = ContinuousClock.now
        await fixture.group.triggerGracefulShutdown()
        let reply = try await inFlight.value
        #expect(reply.status == 200)
        #expect(try Image(data: reply.body).width == 10)
        try await fixture.run.value
        #expect(ContinuousClock.now - shutdownStarted < .seconds(5), "shutdown waits for the request, not longer")
        await #expect(throws: (any Error).self) { _ = try await fixture.get("/health", timeout: 1) }
        await fixture.stop()
    }
}
