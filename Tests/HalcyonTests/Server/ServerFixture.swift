import AsyncHTTPClient
import Foundation
import Halcyon
import HalcyonServer
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Set once the fixture is stopped, so a deferred stop after an explicit one does nothing.
final class StopFlag: Sendable {
    private let stopped = Locked(false)
    /// True the first time only.
    func claim() -> Bool { stopped.withLock { old in defer { old = true }; return !old } }
}

/// An ``ImageServer`` on 127.0.0.1 port 0 in this process, with a loopback
/// upstream (``TestHTTPServer``) and an HTTP client, for one test.
struct ServerFixture {
    static let keyHex = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    static let saltHex = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"

    let server: ImageServer
    let group: ServiceGroup
    let run: Task<Void, any Error>
    let port: Int
    let upstream: TestHTTPServer
    let client: HTTPClient
    let configuration: ServerConfiguration
    let stopFlag = StopFlag()

    /// Starts a signed server that lets loopback sources through; `configure` changes the settings first.
    static func start(
        image: Data? = nil,
        files: [String: Data] = [:],
        logger: Logger? = nil,
        _ configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> ServerFixture {
        try await start(image: image, files: files, logger: logger, withUpstream: { configuration, _ in configure(&configuration) })
    }

    /// Like ``start(image:files:logger:_:)``, with the started upstream given to `configure` (for settings that name its port).
    static func start(
        image: Data? = nil,
        files: [String: Data] = [:],
        logger: Logger? = nil,
        withUpstream configure: (inout ServerConfiguration, TestHTTPServer) -> Void
    ) async throws -> ServerFixture {
        let upstream = try await TestHTTPServer.start(image: image ?? ManagerFixture.sampleImage(), files: files)
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.keys = [keyHex]
        configuration.salts = [saltHex]
        configuration.allowLoopback = true
        configuration.downloadTimeout = 5
        configuration.requestTimeout = 10
        configure(&configuration, upstream)
        var quiet = Logger(label: "halcyon.server.test")
        quiet.logLevel = .error
        let logger = logger ?? quiet
        let server = try ImageServer(configuration: configuration, logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [server], logger: logger))
        let run = Task { try await group.run() }
        let port: Int
        do {
            port = try await server.waitUntilListening()
        } catch {
            await group.triggerGracefulShutdown()
            await upstream.shutdown()
            throw error
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        return ServerFixture(server: server, group: group, run: run, port: port, upstream: upstream, client: client, configuration: configuration)
    }

    func stop() async {
        guard stopFlag.claim() else { return }
        await group.triggerGracefulShutdown()
        _ = try? await run.value
        try? await client.shutdown()
        await upstream.shutdown()
    }

    /// The upstream URL text of a target.
    func source(_ target: String) -> String { upstream.url(target).absoluteString }

    /// A signed path for options and a source, base64 form.
    func signedPath(_ options: String, source: String, ext: String? = nil, key: String = keyHex, salt: String = saltHex) -> String {
        let encoded = Data(source.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .trimmingCharacters(in: CharacterSet(charactersIn: "="))
        let tail = (options.isEmpty ? "" : "/\(options)") + "/\(encoded)" + (ext.map { ".\($0)" } ?? "")
        return Self.sign(tail, key: key, salt: salt)
    }

    /// Prefixes `tail` with its signature.
    static func sign(_ tail: String, key: String = keyHex, salt: String = saltHex) -> String {
        guard let pair = URLSigner.KeyPair(hexKey: key, hexSalt: salt), let signature = URLSigner(pairs: [pair]).sign(tail) else {
            return "/bad" + tail
        }
        return "/" + signature + tail
    }

    struct Reply {
        let status: Int
        let headers: [String: String]
        let body: Data

        func header(_ name: String) -> String? { headers[name.lowercased()] }
        var errorCode: String? {
            guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
                  let error = object["error"] as? [String: Any] else { return nil }
            return error["code"] as? String
        }
        var errorMessage: String? {
            guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
                  let error = object["error"] as? [String: Any] else { return nil }
            return error["message"] as? String
        }
    }

    /// Sends a request to the server and reads the whole answer.
    func get(_ path: String, headers: [(String, String)] = [], method: HTTPMethod = .GET, body: Data? = nil, port: Int? = nil, timeout: Int64 = 30) async throws -> Reply {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port ?? self.port)\(path)")
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, timeout: .seconds(timeout))
        let buffer = try await response.body.collect(upTo: 64 * 1024 * 1024)
        var fields: [String: String] = [:]
        for (name, value) in response.headers { fields[name.lowercased()] = value }
        return Reply(status: Int(response.status.code), headers: fields, body: Data(buffer.readableBytesView))
    }
}
