import Foundation
import Halcyon
import HalcyonServer
import Logging
import NIOConcurrencyHelpers
import Vapor

/// What the HalcyonVapor tests share: the repository's samples, a signed configuration, a loopback origin.
enum TestSupport {
    /// The repository's `Samples` folder.
    static let samples = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Samples")

    static let keyHex = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    static let saltHex = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"

    /// A signed configuration whose local root is `Samples`, its caches in a new temporary folder.
    static func configuration() -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.keys = [keyHex]
        configuration.salts = [saltHex]
        configuration.localRoot = samples.path
        configuration.requestTimeout = 20
        return configuration
    }

    /// `path` (below the mount, starting with "/") with its signature in front.
    static func sign(_ path: String) -> String {
        let pair = URLSigner.KeyPair(hexKey: keyHex, hexSalt: saltHex).map { [$0] } ?? []
        return "/" + (URLSigner(pairs: pair).sign(path) ?? "unsigned") + path
    }

    /// A logger that only shows errors.
    static func quietLogger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = .error
        return logger
    }

    /// A Vapor application serving `Samples` at `/samples/{name}` and an answer that never comes at `/stall`, on
    /// 127.0.0.1 at a free port; `body` gets its base URL. The origin is shut down after `body`.
    static func withOrigin<T>(_ body: (URL) async throws -> T) async throws -> T {
        let origin = try await Application.make(.testing)
        origin.logger = quietLogger("halcyon.vapor.origin")
        origin.get("samples", ":name") { request async throws -> Response in
            let name = try request.parameters.require("name")
            let data = try Data(contentsOf: samples.appendingPathComponent(name))
            var headers = HTTPHeaders()
            headers.contentType = .jpeg
            return Response(status: .ok, headers: headers, body: .init(data: data))
        }
        origin.get("stall") { _ async throws -> Response in
            try await Task.sleep(for: .seconds(5))
            return Response(status: .ok)
        }
        origin.http.server.configuration.hostname = "127.0.0.1"
        origin.http.server.configuration.port = 0
        try await origin.server.start(address: .hostname("127.0.0.1", port: 0))
        do {
            guard let port = origin.http.server.shared.localAddress?.port,
                  let base = URL(string: "http://127.0.0.1:\(port)") else {
                throw Abort(.internalServerError, reason: "the origin has no port")
            }
            let result = try await body(base)
            await origin.server.shutdown()
            try await origin.asyncShutdown()
            return result
        } catch {
            await origin.server.shutdown()
            try? await origin.asyncShutdown()
            throw error
        }
    }
}

/// A log handler that keeps every message it is given, with its metadata.
struct RecordingLogHandler: LogHandler {
    /// The messages, shared by every copy of the handler.
    final class Records: Sendable {
        private let lines = NIOLockedValueBox<[(message: String, metadata: Logger.Metadata)]>([])

        func append(_ message: String, _ metadata: Logger.Metadata) {
            lines.withLockedValue { $0.append((message, metadata)) }
        }

        var all: [(message: String, metadata: Logger.Metadata)] { lines.withLockedValue { $0 } }
    }

    let records: Records
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        records.append("\(event.message)", metadata.merging(event.metadata ?? [:]) { $1 })
    }
}
