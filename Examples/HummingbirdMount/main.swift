import Foundation
import HalcyonServer
import Hummingbird
import Logging

/// The repository's `Samples` folder (`HALCYON_SAMPLES` overrides it).
let samples = ProcessInfo.processInfo.environment["HALCYON_SAMPLES"]
    ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Samples").path
let environment = ProcessInfo.processInfo.environment
let port = environment["PORT"].flatMap(Int.init) ?? 8081
// A demo key pair unless HALCYON_KEY and HALCYON_SALT are set: set your own secret ones in a real deployment.
let keyHex = environment["HALCYON_KEY"] ?? String(repeating: "6b", count: 32)
let saltHex = environment["HALCYON_SALT"] ?? String(repeating: "73", count: 32)

var configuration = ServerConfiguration()
configuration.keys = [keyHex]
configuration.salts = [saltHex]
configuration.localRoot = samples
let logger = Logger(label: "halcyon.example")

do {
    let images = try HalcyonImageRoutes<BasicRequestContext>(configuration: configuration, logger: logger)
    let router = Router()
    router.get("/") { _, _ in "hello from the app's own route\n" }
    router.addRoutes(images.routes, atPath: "/img")
    var app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
    app.addServices(images)

    // A signed URL to try: the signature covers the path below /img.
    let path = "/rs:fit:200:200/plain/local:%2F%2F%2Flandscape.jpg@png"
    let signer = URLSigner(pairs: URLSigner.KeyPair(hexKey: keyHex, hexSalt: saltHex).map { [$0] } ?? [])
    logger.notice("try: curl -o thumb.png http://127.0.0.1:\(port)/img/\(signer.sign(path) ?? "")\(path)")
    try await app.runService()
} catch {
    logger.critical("HummingbirdMount: \(error)")
    exit(1)
}
