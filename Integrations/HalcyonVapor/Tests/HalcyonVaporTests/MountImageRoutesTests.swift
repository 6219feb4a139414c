import Foundation
import Halcyon
import HalcyonServer
@testable import HalcyonVapor
import Testing
import Vapor
import VaporTesting

/// The image routes mounted in a Vapor application (a route of its own beside them) under `img`, driven through
/// VaporTesting's in-memory client: real libvips on `Samples/landscape.jpg` under a local root, the signature
/// over the path below the prefix, HEAD, `/info`, `/health`, `/metrics`, and the shutdown with the application.
@Suite struct MountImageRoutesTests {
    /// The signed image path (below the mount) of a 64-pixel PNG of the landscape, its source percent-encoded.
    static let imagePath = TestSupport.sign("/rs:fit:64:64/plain/local%3A%2F%2F%2Flandscape.jpg@png")

    /// Configures `app`: `GET /hello` of its own, the image routes under `img`.
    static func configure(_ app: Application) throws -> ImageService {
        app.logger = TestSupport.quietLogger("halcyon.vapor.test")
        app.get("hello") { _ in "hello" }
        return try app.halcyon.mountImageRoutes(
            at: "img", configuration: TestSupport.configuration(), logger: TestSupport.quietLogger("halcyon.vapor.images"))
    }

    @Test func signedImageBesideTheAppsOwnRoute() async throws {
        let original = try Image(data: Data(contentsOf: TestSupport.samples.appendingPathComponent("landscape.jpg")))
        try await withApp(configure: { _ = try Self.configure($0) }) { app in
            let tester = try app.testing()
            let hello = try await tester.sendRequest(.GET, "/hello")
            #expect(hello.status == .ok && hello.body.string == "hello")

            let first = try await tester.sendRequest(.GET, "/img" + Self.imagePath)
            #expect(first.status == .ok)
            #expect(first.headers.first(name: .contentType) == "image/png")
            #expect(first.headers.first(name: .contentLength) == String(first.body.readableBytes))
            let image = try Image(data: Data(first.body.readableBytesView))
            #expect(max(image.width, image.height) == 64)
            #expect(abs(Double(image.width) / Double(image.height) - Double(original.width) / Double(original.height)) < 0.05)

            let head = try await tester.sendRequest(.HEAD, "/img" + Self.imagePath)
            #expect(head.status == .ok && head.headers.first(name: .contentType) == "image/png")
            #expect(head.headers.first(name: .contentLength) == String(first.body.readableBytes))
            #expect(head.headers.first(name: .eTag) == first.headers.first(name: .eTag))

            let health = try await tester.sendRequest(.GET, "/img/health")
            #expect(health.status == .ok && health.body.string.contains("ok"))
            let metrics = try await tester.sendRequest(.GET, "/img/metrics")
            #expect(metrics.body.string.contains(#"halcyon_requests_total{route="image",status="200"} 2"#), "\(metrics.body.string)")
        }
    }

    @Test func overARealConnection() async throws {
        try await withApp(configure: { _ = try Self.configure($0) }) { app in
            let tester = try app.testing(method: .running(hostname: "127.0.0.1", port: 0))
            let get = try await tester.sendRequest(.GET, "/img" + Self.imagePath)
            #expect(get.status == .ok && get.headers.first(name: .contentType) == "image/png")
            #expect(get.body.readableBytes > 0 && get.headers.first(name: .contentLength) == String(get.body.readableBytes))
            // HEAD: the image's headers and length, no body on the wire.
            let head = try await tester.sendRequest(.HEAD, "/img" + Self.imagePath)
            #expect(head.status == .ok && head.body.readableBytes == 0)
            #expect(head.headers.first(name: .contentLength) == String(get.body.readableBytes))
            #expect(try await tester.sendRequest(.GET, "/hello").body.string == "hello")
        }
    }

    @Test func signatureCoversThePathBelowThePrefix() async throws {
        try await withApp(configure: { _ = try Self.configure($0) }) { app in
            let tester = try app.testing()
            var bad = Array(Self.imagePath)
            bad[1] = bad[1] == "A" ? "B" : "A"
            let forged = try await tester.sendRequest(.GET, "/img" + String(bad))
            #expect(forged.status == .forbidden)
            #expect(forged.body.string.contains("invalid_signature"))
            // A signature over the path with the prefix does not pass: the prefix is not signed.
            let withPrefix = TestSupport.sign("/img/rs:fit:64:64/plain/local%3A%2F%2F%2Flandscape.jpg@png")
            let signature = withPrefix.split(separator: "/")[0]
            let prefixed = try await tester.sendRequest(.GET, "/img/\(signature)/rs:fit:64:64/plain/local%3A%2F%2F%2Flandscape.jpg@png")
            #expect(prefixed.status == .forbidden)
            #expect(try await tester.sendRequest(.GET, "/img/x").status == .badRequest)
            #expect(try await tester.sendRequest(.GET, "/hello").status == .ok)
        }
    }

    @Test func infoBelowThePrefix() async throws {
        let original = try Image(data: Data(contentsOf: TestSupport.samples.appendingPathComponent("landscape.jpg")))
        try await withApp(configure: { _ = try Self.configure($0) }) { app in
            let info = try await app.testing().sendRequest(
                .GET, "/img/info" + TestSupport.sign("/plain/local%3A%2F%2F%2Flandscape.jpg"))
            #expect(info.status == .ok)
            let object = try JSONSerialization.jsonObject(with: Data(info.body.readableBytesView)) as? [String: Any]
            #expect(object?["width"] as? Int == original.width && object?["height"] as? Int == original.height)
        }
    }

    @Test func parameterInThePrefix() async throws {
        try await withApp(configure: { app in
            app.logger = TestSupport.quietLogger("halcyon.vapor.test")
            try app.halcyon.mountImageRoutes(
                at: "media", ":id", "img", configuration: TestSupport.configuration(),
                logger: TestSupport.quietLogger("halcyon.vapor.images"))
        }) { app in
            let answer = try await app.testing().sendRequest(.GET, "/media/42/img" + Self.imagePath)
            #expect(answer.status == .ok && answer.headers.first(name: .contentType) == "image/png")
        }
        #expect(throws: (any Error).self) {
            try Application.Halcyon.routerPath(of: ["img", .catchall])
        }
    }

    @Test func shutdownWithTheApplication() async throws {
        let app = try await Application.make(.testing)
        let service = try Self.configure(app)
        #expect(app.halcyon.imageServices.count == 1)
        #expect(try await app.testing().sendRequest(.GET, "/img/health").status == .ok)
        #expect(!(await Self.downloaderIsShutDown(service)))
        try await app.asyncShutdown()
        #expect(await Self.downloaderIsShutDown(service), "the application's shutdown shut the image service down")
        #expect(app.halcyon.imageServices.isEmpty)
    }

    /// Whether `service`'s downloader refuses a download as shut down (else the SSRF gate or the closed port
    /// refuses it).
    static func downloaderIsShutDown(_ service: ImageService) async -> Bool {
        guard let closed = URL(string: "http://127.0.0.1:9/none.png") else { return false }
        do {
            _ = try await service.manager.retrieveImage(with: closed, options: [.callbackQueue(.untouch)])
            return false
        } catch {
            if case .requestError(reason: .downloaderShutDown) = error { return true }
            return false
        }
    }
}
