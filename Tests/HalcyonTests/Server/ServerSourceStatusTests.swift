import Foundation
import Halcyon
import HalcyonServer
import Testing

/// What the server answers for an origin's unusable status, and for a redirect hop outside the allowed sources.
@Suite("Server source statuses")
struct ServerSourceStatusTests {
    @Test("an origin's other 2xx or unfollowed 3xx is 502 source_bad_status; its 200 is served")
    func badStatuses() async throws {
        let png = try TestImages.encodedGradient(.png(), width: 20, height: 10)
        let origin = try await ImageDownloaderStatusTests.origin(png: png)
        let fixture = try await ServerFixture.start { $0.allowLoopback = true }
        defer { Task { await fixture.stop() } }
        for (path, _) in ImageDownloaderStatusTests.refused {
            let reply = try await fixture.get(fixture.signedPath("w:10", source: origin.url(path).absoluteString))
            #expect(reply.status == 502 && reply.errorCode == "source_bad_status", "\(path): \(reply.status) \(reply.errorCode ?? "")")
        }
        let ok = try await fixture.get(fixture.signedPath("w:10", source: origin.url("/ok.png").absoluteString))
        #expect(ok.status == 200, "\(ok.status) \(ok.errorCode ?? "")")
        await fixture.stop()
        await origin.shutdown()
    }

    @Test("a redirect hop outside the allowed sources is 403 source_not_allowed, as a first hop is, and is not fetched")
    func redirectOutsideAllowList() async throws {
        let png = try TestImages.encodedGradient(.png(), width: 20, height: 10)
        let targetHits = Locked(0)
        let target = try await RawHTTPOrigin.start { _, _ in
            targetHits.withLock { $0 += 1 }
            return RawHTTPOrigin.answer("HTTP/1.1 200 OK\r\nContent-Type: image/png", body: png)
        }
        let redirecting = try await RawHTTPOrigin.start { path, _ in
            path == "/on-list.png"
                ? RawHTTPOrigin.answer("HTTP/1.1 200 OK\r\nContent-Type: image/png", body: png)
                : RawHTTPOrigin.answer("HTTP/1.1 302 Found\r\nLocation: \(target.url("/off-list.png").absoluteString)")
        }
        let fixture = try await ServerFixture.start { configuration in
            configuration.allowLoopback = true
            configuration.allowedSources = [redirecting.url("/").absoluteString]
        }
        defer { Task { await fixture.stop() } }
        let first = try await fixture.get(fixture.signedPath("w:10", source: target.url("/off-list.png").absoluteString))
        #expect(first.status == 403 && first.errorCode == "source_not_allowed", "first hop: \(first.status) \(first.errorCode ?? "")")
        let hop = try await fixture.get(fixture.signedPath("w:10", source: redirecting.url("/moved.png").absoluteString))
        #expect(hop.status == 403 && hop.errorCode == "source_not_allowed", "redirect hop: \(hop.status) \(hop.errorCode ?? "")")
        let onList = try await fixture.get(fixture.signedPath("w:10", source: redirecting.url("/on-list.png").absoluteString))
        #expect(onList.status == 200, "\(onList.status) \(onList.errorCode ?? "")")
        #expect(targetHits.withLock { $0 } == 0, "the origin outside the list was fetched")
        await fixture.stop()
        await redirecting.shutdown()
        await target.shutdown()
    }
}
