import Foundation
import Halcyon
import HalcyonVapor
import Logging
import Testing
import Vapor
import VaporTesting

/// `req.halcyon`: retrievals through the application's manager from a loopback Vapor origin, their cancellation
/// with the calling task, and the manager's downloader shut down with the application.
@Suite struct RequestHalcyonTests {
    /// A manager of its own, its cache in a new temporary folder.
    static func manager() throws -> HalcyonManager {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-vapor-\(UUID().uuidString)")
        let cache = try ImageCache(name: "vapor-test", cacheDirectoryURL: folder)
        return HalcyonManager(downloader: ImageDownloader(name: "vapor-test"), cache: cache)
    }

    /// `GET /thumb/{size}`: the origin's landscape downsampled to fit `size`, as WebP.
    static func configure(_ app: Application, origin: URL, manager: HalcyonManager) {
        app.logger = TestSupport.quietLogger("halcyon.vapor.test")
        app.halcyon.manager = manager
        app.get("thumb", ":size") { request async throws -> Response in
            let size = try request.parameters.require("size", as: Int.self)
            let result = try await request.halcyon.retrieveImage(
                with: origin.appendingPathComponent("samples/landscape.jpg"),
                options: [.processor(DownsamplingImageProcessor(size: CGSize(width: size, height: size)))])
            let webp = try result.image.encoded(as: .webp())
            var headers = HTTPHeaders()
            headers.replaceOrAdd(name: .contentType, value: "image/webp")
            headers.replaceOrAdd(name: "X-Cache", value: "\(result.cacheType)")
            return Response(status: .ok, headers: headers, body: .init(data: webp))
        }
    }

    @Test func retrievesFromALoopbackOrigin() async throws {
        let manager = try Self.manager()
        try await TestSupport.withOrigin { origin in
            try await withApp(configure: { Self.configure($0, origin: origin, manager: manager) }) { app in
                #expect(app.halcyon.manager === manager)
                let tester = try app.testing()
                let first = try await tester.sendRequest(.GET, "/thumb/48")
                #expect(first.status == .ok && first.headers.first(name: .contentType) == "image/webp")
                let image = try Image(data: Data(first.body.readableBytesView))
                #expect(ImageFormat(sniffing: Data(first.body.readableBytesView)) == .webp)
                #expect(max(image.width, image.height) <= 48 && max(image.width, image.height) >= 24)
                #expect(first.headers.first(name: "X-Cache") == "none")
                let second = try await tester.sendRequest(.GET, "/thumb/48")
                #expect(second.status == .ok && second.headers.first(name: "X-Cache") == "memory")
            }
        }
        // The application's shutdown shut the manager's downloader down: a new download is refused as such
        // (not as a connection failure to the closed port).
        let closed = try #require(URL(string: "http://127.0.0.1:9/none.png"))
        do {
            let result = try await manager.retrieveImage(with: closed, options: [.callbackQueue(.untouch)])
            Issue.record("retrieved \(result.image.width) pixels after the shutdown")
        } catch {
            guard case .requestError(reason: .downloaderShutDown) = error else {
                Issue.record("expected downloaderShutDown, got \(error)")
                return
            }
        }
    }

    @Test func cancelledWithTheCallingTask() async throws {
        let manager = try Self.manager()
        try await TestSupport.withOrigin { origin in
            try await withApp(configure: { Self.configure($0, origin: origin, manager: manager) }) { app in
                let records = RecordingLogHandler.Records()
                var logger = Logger(label: "halcyon.vapor.request") { _ in RecordingLogHandler(records: records) }
                logger[metadataKey: "test.request"] = "cancelled-one"
                let request = Request(application: app, logger: logger, on: app.eventLoopGroup.next())
                let started = ContinuousClock.now
                let retrieval = Task {
                    try await request.halcyon.retrieveImage(with: origin.appendingPathComponent("stall"))
                }
                try await Task.sleep(for: .milliseconds(300))
                retrieval.cancel()
                let result = await retrieval.result
                #expect(ContinuousClock.now - started < .seconds(4), "cancelled before the origin answers")
                guard case .failure(let error as HalcyonError) = result,
                      case .requestError(reason: .taskCancelled) = error else {
                    Issue.record("expected taskCancelled, got \(result)")
                    return
                }
                // The failure is logged to the request's own logger, with its metadata.
                let line = records.all.first { $0.message == "halcyon could not retrieve an image" }
                #expect(line?.metadata["test.request"] == "cancelled-one")
                #expect(line?.metadata["halcyon.source"]?.description.contains("/stall") == true)
            }
        }
    }
}
