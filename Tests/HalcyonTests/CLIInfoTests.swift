import Foundation
import Halcyon
import Testing

@Suite("halcyon info")
struct CLIInfoTests {
    @Test("prints the image's facts and BlurHash as JSON; a missing file exits 66, bad components are a usage error")
    func info() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(at: scratch.root, withIntermediateDirectories: true)
        let file = scratch.root.appendingPathComponent("g.png")
        try TestImages.encodedGradient(.png(), width: 90, height: 60).write(to: file)
        let run = try await CLIRun.run(["info", file.path, "--blurhash", "3:2"], cacheHome: scratch.cache)
        #expect(run.exitCode == 0, "\(run.stderr)")
        let json = try run.json()
        #expect(json["width"] as? Int == 90 && json["height"] as? Int == 60 && json["format"] as? String == "png")
        #expect((json["blurHash"] as? String)?.count == 4 + 2 * 6)
        let missing = try await CLIRun.run(["info", scratch.root.appendingPathComponent("none.png").path], cacheHome: scratch.cache)
        #expect(missing.exitCode == 66, "\(missing.stderr)")
        let bad = try await CLIRun.run(["info", file.path, "--blurhash", "12:1"], cacheHome: scratch.cache)
        #expect(bad.exitCode == 64, "\(bad.stderr)")
    }
}
