import Foundation
import Halcyon
@testable import HalcyonServer
import HTTPTypes
import Hummingbird
import NIOCore

/// One signed server shared by the plan tests: a local root with a photograph-like JPEG and a watermark image.
final class PlanFixture: Sendable {
    let server: ServerFixture
    let folder: URL

    private init(server: ServerFixture, folder: URL) {
        self.server = server
        self.folder = folder
    }

    private static let instance = Task { try await PlanFixture.make() }

    /// The shared fixture, started by the first test that asks.
    static func shared() async throws -> PlanFixture { try await instance.value }

    private static func make() async throws -> PlanFixture {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-plans-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let photo = try TestImages.gradient(width: 96, height: 64)
        try ImageEncoder.encode(photo, as: .jpeg(quality: 90, progressive: false)).write(to: folder.appendingPathComponent("photo.jpg"))
        let mark = try TestImages.gradient(width: 12, height: 8, alpha: 200)
        let markFile = folder.appendingPathComponent("mark.png")
        try ImageEncoder.encode(mark, as: .png()).write(to: markFile)
        let server = try await ServerFixture.start { configuration in
            configuration.localRoot = folder.path
            configuration.watermarkPath = markFile.path
        }
        return PlanFixture(server: server, folder: folder)
    }

    /// The signed path of `segments` over the local photograph.
    func path(_ segments: [String]) -> String {
        server.signedPath(segments.joined(separator: "/"), source: "local:///photo.jpg")
    }

    /// The plan the server makes of `segments`.
    func plan(_ segments: [String]) throws -> ImageRequestPlan {
        let head = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1", path: path(segments))
        let request = Request(head: head, body: RequestBody(buffer: ByteBuffer()))
        return try server.server.service.plan(for: request, path: nil)
    }

    /// The server's answer to `segments`.
    func answer(_ segments: [String]) async throws -> ServerFixture.Reply {
        try await server.get(path(segments))
    }
}

extension SeededGenerator {
    /// A number in `0..<count`.
    mutating func next(below count: Int) -> Int { Int(next() % UInt64(count)) }
}
