import Foundation
import Halcyon
import HalcyonServer
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Server local hard links")
struct ServerHardLinkTests {
    /// A root with `inside.jpg`, and `linked.jpg`: a hard link to a file outside the root.
    private func makeRoot() throws -> (base: URL, root: URL) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("halcyon-hardlink-\(UUID().uuidString)")
        let root = base.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let outside = base.appendingPathComponent("secret.jpg")
        try ManagerFixture.sampleImage().write(to: outside)
        try ManagerFixture.sampleImage().write(to: root.appendingPathComponent("inside.jpg"))
        guard link(outside.path, root.appendingPathComponent("linked.jpg").path) == 0 else {
            throw CocoaError(.fileWriteUnknown)
        }
        return (base, root)
    }

    @Test("A hard link inside the root to a file outside it is refused")
    func resolverRefusesHardLinks() throws {
        let (base, root) = try makeRoot()
        defer { try? FileManager.default.removeItem(at: base) }
        let resolver = SourceResolver(localRoot: root.path, allowedPrefixes: [])
        #expect(throws: SourceResolver.Failure.hardLinked) { try resolver.resolve("local://linked.jpg") }
        #expect((try? resolver.resolve("local://inside.jpg")) != nil)
    }

    @Test("The server answers 403 for a hard-linked local file and 200 for a plain one")
    func serverRefusesHardLinks() async throws {
        let (base, root) = try makeRoot()
        defer { try? FileManager.default.removeItem(at: base) }
        let fixture = try await ServerFixture.start { $0.localRoot = root.path }
        defer { Task { await fixture.stop() } }
        let linked = try await fixture.get(fixture.signedPath("w:16", source: "local://linked.jpg"))
        #expect(linked.status == 403, "\(String(decoding: linked.body, as: UTF8.self))")
        #expect(linked.errorCode == "hard_linked")
        let plain = try await fixture.get(fixture.signedPath("w:16", source: "local://inside.jpg"))
        #expect(plain.status == 200)
        await fixture.stop()
    }
}
