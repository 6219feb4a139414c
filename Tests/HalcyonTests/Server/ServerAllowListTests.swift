import Foundation
import Halcyon
import HalcyonServer
import Testing

@Suite("Server allowed sources")
struct ServerAllowListTests {
    private func allows(_ allowed: [String], _ text: String) -> Bool {
        (try? SourceResolver(localRoot: nil, allowedPrefixes: allowed).resolve(text)) != nil
    }

    @Test("An allowed source is scheme + host + port; userinfo and other ports do not ride on its prefix")
    func hostAndPort() {
        let allowed = ["http://a.test"]
        #expect(allows(allowed, "http://a.test/x.png"))
        #expect(allows(allowed, "http://A.Test/x.png"), "the host matches in canonical form")
        #expect(allows(allowed, "http://a.test:80/x.png"), "80 is http's default port")
        #expect(!allows(allowed, "http://a.test@b.test/x.png"), "userinfo bypass")
        #expect(!allows(allowed, "http://a.test:9999/x.png"), "other port")
        #expect(!allows(allowed, "http://a.test.b.test/x.png"), "longer host")
        #expect(!allows(allowed, "https://a.test/x.png"), "other scheme")
        #expect(!allows(["https://a.test:8443/"], "https://a.test/x.png"), "443 is not 8443")
        #expect(allows(["https://a.test:443/"], "https://a.test/x.png"))
    }

    @Test("Path prefixes match on segment boundaries; dot segments never match")
    func pathSegments() {
        let allowed = ["https://a.test/images"]
        #expect(allows(allowed, "https://a.test/images/x.png"))
        #expect(allows(["https://a.test/images/"], "https://a.test/images/sub/x.png"))
        #expect(!allows(allowed, "https://a.test/images-private/x.png"))
        #expect(!allows(allowed, "https://a.test/imagesx.png"))
        #expect(!allows(allowed, "https://a.test/images/../secret.png"))
        #expect(!allows(allowed, "https://a.test/images/%2e%2e/secret.png"))
        #expect(!allows(allowed, "https://a.test/x.png"))
    }

    @Test("URLs with userinfo are refused even when any source is allowed")
    func userinfoRefused() {
        #expect(!allows([], "http://user:pass@a.test/x.png"))
        #expect(!allows([], "http://user@a.test/x.png"))
        #expect(allows([], "http://a.test/x.png"))
    }

    @Test("An allowed source that is not an http(s) URL is a configuration error")
    func invalidEntries() {
        for bad in ["a.test", "ftp://a.test/", "http://", "http://u@a.test/"] {
            var configuration = ServerConfiguration()
            configuration.insecure = true
            configuration.allowedSources = [bad]
            #expect(throws: ServerConfiguration.ConfigurationError.self, "\(bad)") { try configuration.validate() }
        }
    }

    @Test("The server refuses the userinfo and port bypasses of an allowed source, before connecting")
    func serverBypasses() async throws {
        let fixture = try await ServerFixture.start(withUpstream: { configuration, upstream in
            configuration.allowedSources = ["http://localhost", "http://127.0.0.1:\(upstream.port)/image/ok"]
        })
        defer { Task { await fixture.stop() } }
        let port = fixture.upstream.port
        for source in ["http://localhost:\(port)/image/port", "http://127.0.0.1:\(port)@localhost:\(port)/image/userinfo",
                       "http://127.0.0.1:\(port)/image/ok2", "http://127.0.0.1:\(port)/image/ok/../port"] {
            let reply = try await fixture.get(fixture.signedPath("w:10", source: source))
            #expect(reply.status == 403 || reply.status == 400, "\(source): \(reply.status)")
        }
        #expect(fixture.upstream.totalHits == 0)
        let ok = try await fixture.get(fixture.signedPath("w:10", source: "http://127.0.0.1:\(port)/image/ok/a"))
        #expect(ok.status == 200)
        await fixture.stop()
    }

    @Test("Every redirect hop is checked against the allowed sources")
    func redirectHops() async throws {
        let fixture = try await ServerFixture.start(withUpstream: { configuration, upstream in
            configuration.allowedSources = ["http://127.0.0.1:\(upstream.port)/redirect-to", "http://127.0.0.1:\(upstream.port)/image/"]
        })
        defer { Task { await fixture.stop() } }
        let port = fixture.upstream.port
        func via(_ location: String) -> String {
            fixture.source("/redirect-to?location=" + (location.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
        }
        let offHost = try await fixture.get(fixture.signedPath("w:10", source: via("http://localhost:\(port)/image/off")))
        #expect(offHost.status == 403, "\(String(decoding: offHost.body, as: UTF8.self))")
        let offPath = try await fixture.get(fixture.signedPath("w:10", source: via("http://127.0.0.1:\(port)/files/off")))
        #expect(offPath.status == 403, "\(String(decoding: offPath.body, as: UTF8.self))")
        #expect(fixture.upstream.hits("/image/off") == 0 && fixture.upstream.hits("/files/off") == 0)
        let onList = try await fixture.get(fixture.signedPath("w:10", source: via("http://127.0.0.1:\(port)/image/on")))
        #expect(onList.status == 200)
        await fixture.stop()
    }
}
