import AsyncHTTPClient
import Foundation
@testable import Halcyon
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// The status guard on HTTP/2 streams: fetch clients speak HTTP/2 to origins that offer it, and an origin's
/// `:status: 099` is an error, not a stopped process.
@Suite struct ResponseStatusGuardHTTP2Tests {
    /// A client as the downloader makes it (guarded, HTTP/2 allowed), trusting any certificate.
    static func guardedClient() -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.guardResponseStatus()
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    @Test func guardedClientSpeaksHTTP2() async throws {
        let origin = try await HTTP2Origin.start(status: "200", body: "hello")
        let client = Self.guardedClient()
        let response = try await client.execute(HTTPClientRequest(url: origin.url("/ok")), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1024)
        #expect(response.version == .http2 && response.status == .ok && String(buffer: body) == "hello")
        try await client.shutdown()
        await origin.shutdown()
    }

    /// Without the guard on HTTP/2 streams the client took 099 for an informational answer and its body stopped the
    /// process (the reason fetch clients were limited to HTTP/1.1).
    @Test(arguments: ["099", "000"])
    func statusBelow100OverHTTP2IsAnError(_ status: String) async throws {
        let origin = try await HTTP2Origin.start(status: status, body: "hello")
        let client = Self.guardedClient()
        var outcome: (any Error)?
        do {
            let response = try await client.execute(HTTPClientRequest(url: origin.url("/x.png")), timeout: .seconds(10))
            _ = try await response.body.collect(upTo: 1024)
        } catch {
            outcome = error
        }
        let error = try #require(outcome, "a \(status) answer was taken")
        let url = try #require(URL(string: origin.url("/x.png")))
        guard case .responseError(.invalidHTTPStatusCode(_, let code)) = HTTPTransport.map(error, url: url, timeout: 10) else {
            Issue.record("expected invalidHTTPStatusCode, got \(error)")
            try await client.shutdown()
            await origin.shutdown()
            return
        }
        #expect(code == Int(status))
        try await client.shutdown()
        await origin.shutdown()
    }
}
