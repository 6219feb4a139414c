import Foundation
import Halcyon
@testable import HalcyonServer
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// The image routes mounted in another Hummingbird app (`BasicRequestContext`, a route of its own) at `/img`, driven
/// through Hummingbird's in-process test client: real libvips on the repository's `Samples/landscape.jpg` under a
/// local root, the signature over the path below the prefix, the response cache, HEAD, `/info`, `/metrics`.
@Suite struct MountedRoutesTests {
    /// The repository's `Samples` folder.
    static let samples = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Samples")

    /// A signed configuration whose local root is `Samples`, its caches in a new temporary folder.
    static func configuration() -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.keys = [ServerFixture.keyHex]
        configuration.salts = [ServerFixture.saltHex]
        configuration.localRoot = samples.path
        configuration.requestTimeout = 20
        return configuration
    }

    /// An app with `GET /hello` of its own and `images` at `/img`; `images` shuts down with it.
    static func app(_ images: HalcyonImageRoutes<BasicRequestContext>) -> some ApplicationProtocol {
        let router = Router()
        router.get("/hello") { _, _ in "hello" }
        router.addRoutes(images.routes, atPath: "/img")
        var app = Application(router: router, logger: Logger(label: "mounted-test"))
        app.addServices(images)
        return app
    }

    /// The signed image path (below the mount) of a 64-pixel PNG of the landscape, in imgproxy's plain form
    /// (its source percent-encoded, as sent).
    static let imagePath = ServerFixture.sign("/rs:fit:64:64/plain/local%3A%2F%2F%2Flandscape.jpg@png")

    @Test func signedImageBesideTheAppsOwnRoute() async throws {
        var quiet = Logger(label: "halcyon.mounted.test")
        quiet.logLevel = .error
        let images = try HalcyonImageRoutes<BasicRequestContext>(configuration: Self.configuration(), logger: quiet)
        let original = try Image(data: Data(contentsOf: Self.samples.appendingPathComponent("landscape.jpg")))
        try await Self.app(images).test(.router) { client in
            let hello = try await client.execute(uri: "/hello", method: .get)
            #expect(hello.status == .ok && String(buffer: hello.body) == "hello")

            let first = try await client.execute(uri: "/img" + Self.imagePath, method: .get)
            #expect(first.status == .ok)
            #expect(first.headers[.contentType] == "image/png")
            let image = try Image(data: Data(first.body.readableBytesView))
            #expect(max(image.width, image.height) == 64)
            #expect(abs(Double(image.width) / Double(image.height) - Double(original.width) / Double(original.height)) < 0.05)

            // The same path again is answered from the response cache, with the same bytes.
            let second = try await client.execute(uri: "/img" + Self.imagePath, method: .get)
            #expect(second.status == .ok && second.body == first.body)
            #expect(second.headers[.eTag] == first.headers[.eTag] && first.headers[.eTag] != nil)
            let head = try await client.execute(uri: "/img" + Self.imagePath, method: .head)
            #expect(head.status == .ok && head.headers[.contentType] == "image/png")
            #expect(head.headers[.contentLength] == String(first.body.readableBytes))

            let metrics = String(buffer: try await client.execute(uri: "/img/metrics", method: .get).body)
            #expect(metrics.contains(#"halcyon_cache_results_total{type="response"} 2"#), "\(metrics)")
            #expect(metrics.contains(#"halcyon_requests_total{route="image",status="200"} 3"#), "\(metrics)")
            let health = try await client.execute(uri: "/img/health", method: .get)
            #expect(health.status == .ok)
        }
    }

    @Test func signatureCoversThePathBelowThePrefix() async throws {
        var quiet = Logger(label: "halcyon.mounted.test")
        quiet.logLevel = .critical
        let images = try HalcyonImageRoutes<BasicRequestContext>(configuration: Self.configuration(), logger: quiet)
        try await Self.app(images).test(.router) { client in
            // One character of the signature changed.
            var bad = Array(Self.imagePath)
            bad[1] = bad[1] == "A" ? "B" : "A"
            let forged = try await client.execute(uri: "/img" + String(bad), method: .get)
            #expect(forged.status == .forbidden)
            #expect(String(buffer: forged.body).contains("invalid_signature"))
            // A signature over the path with the prefix does not pass: the prefix is not signed.
            let withPrefix = ServerFixture.sign("/img/rs:fit:64:64/plain/local%3A%2F%2F%2Flandscape.jpg@png")
            let signature = withPrefix.split(separator: "/")[0]
            let prefixed = try await client.execute(
                uri: "/img/\(signature)/rs:fit:64:64/plain/local%3A%2F%2F%2Flandscape.jpg@png", method: .get)
            #expect(prefixed.status == .forbidden)
            // The percent-encoding is what is signed: the same source decoded does not pass.
            let decoded = Self.imagePath.replacingOccurrences(of: "local%3A%2F%2F%2Flandscape.jpg", with: "local:///landscape.jpg")
            #expect(try await client.execute(uri: "/img" + decoded, method: .get).status == .forbidden)
            let malformed = try await client.execute(uri: "/img/x", method: .get)
            #expect(malformed.status == .badRequest)
            #expect(try await client.execute(uri: "/hello", method: .get).status == .ok)
        }
        #expect(images.service.resources.shutDown.withLock { $0 }, "the app's service group shut the routes down")
    }

    @Test func infoBelowThePrefix() async throws {
        var quiet = Logger(label: "halcyon.mounted.test")
        quiet.logLevel = .error
        let images = try HalcyonImageRoutes<BasicRequestContext>(configuration: Self.configuration(), logger: quiet)
        let original = try Image(data: Data(contentsOf: Self.samples.appendingPathComponent("landscape.jpg")))
        try await Self.app(images).test(.router) { client in
            let info = try await client.execute(uri: "/img/info" + ServerFixture.sign("/plain/local%3A%2F%2F%2Flandscape.jpg"), method: .get)
            #expect(info.status == .ok)
            let object = try JSONSerialization.jsonObject(with: Data(info.body.readableBytesView)) as? [String: Any]
            #expect(object?["width"] as? Int == original.width && object?["height"] as? Int == original.height)
        }
    }

    @Test func pathBelowTheMountKeepsTheRestAsSent() {
        #expect(ImageService.pathBelowMount("/img/sig/w:10//a%2Fb/", endpoint: "/img/**") == "/sig/w:10//a%2Fb/")
        #expect(ImageService.pathBelowMount("/img//sig/x", endpoint: "/img/**") == "//sig/x")
        #expect(ImageService.pathBelowMount("/media/42/img/sig/x", endpoint: "/media/{id}/img/**") == "/sig/x")
        #expect(ImageService.pathBelowMount("/info/sig/x", endpoint: "/info/**") == "/sig/x")
        #expect(ImageService.pathBelowMount("/sig/x", endpoint: "/**") == "/sig/x")
        #expect(ImageService.pathBelowMount("/sig/x", endpoint: nil) == "/sig/x")
    }
}
