import AsyncHTTPClient
import Foundation
@testable import Halcyon
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// The status and content-coding guards on HTTP/2 streams: fetch clients speak HTTP/2 to origins that offer it,
/// an origin's `:status: 099` is an error, not a stopped process, and a body's coding is decoded or refused.
@Suite struct ResponseStatusGuardHTTP2Tests {
    /// A client as the downloader makes it (guarded, HTTP/2 allowed), trusting any certificate.
    static func guardedClient() -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.decompression = .enabled(limit: .size(50 * 1024 * 1024))
        configuration.guardResponseStatus()
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// The error fetching `url` and its body with `client` ends in; nil when it succeeds.
    static func failure(_ client: HTTPClient, _ url: String) async -> (any Error)? {
        do {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            _ = try await response.body.collect(upTo: 1024)
            return nil
        } catch {
            return error
        }
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
        let error = try #require(await Self.failure(client, origin.url("/x.png")), "a \(status) answer was taken")
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

    @Test("x-gzip is decoded and br is unsupportedContentEncoding over HTTP/2 too")
    func contentCodingsOverHTTP2() async throws {
        let raw = Array("a body that is not an image".utf8)
        let gzipped = try await HTTP2Origin.start(status: "200", fields: [("content-encoding", "x-gzip")], bytes: PNGFile.gzipStored(raw))
        let client = Self.guardedClient()
        let response = try await client.execute(HTTPClientRequest(url: gzipped.url("/gz")), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1024)
        #expect(response.version == .http2 && Array(buffer: body) == raw)
        let brotli = try await HTTP2Origin.start(status: "200", fields: [("content-encoding", "br")], bytes: raw)
        let error = try #require(await Self.failure(client, brotli.url("/br")), "a br body was taken")
        let url = try #require(URL(string: brotli.url("/br")))
        guard case .responseError(.unsupportedContentEncoding(_, "br")) = HTTPTransport.map(error, url: url, timeout: 10) else {
            Issue.record("expected unsupportedContentEncoding, got \(error)")
            try await client.shutdown()
            await gzipped.shutdown()
            await brotli.shutdown()
            return
        }
        try await client.shutdown()
        await gzipped.shutdown()
        await brotli.shutdown()
    }
}
