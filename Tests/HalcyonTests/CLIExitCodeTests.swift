import Foundation
import Testing
@testable import Halcyon

/// The built `halcyon` binary on bad input: documented exit codes, one message
/// per failure in Halcyon's words, libvips' text only with `-v`, and no raw
/// libvips warnings on stderr.
@Suite("CLIExitCodeTests")
struct CLIExitCodeTests {
    /// libvips' own words and prefixes that must not reach the plain output.
    static let libvipsText = ["VIPS-WARNING", "VipsJpeg", "vipspng", "gifload", "tiff2vips", "VipsForeignLoad",
                              "libvips reported no reason", "magick", "blocked"]

    /// Writes `files` into a fresh scratch folder.
    static func scratch(with files: [String: Data]) throws -> CLIScratch {
        let scratch = CLIScratch()
        try FileManager.default.createDirectory(at: scratch.root, withIntermediateDirectories: true)
        for (name, data) in files { try data.write(to: scratch.root.appendingPathComponent(name)) }
        return scratch
    }

    /// One line on stderr, `halcyon: ` first, containing `text`, and nothing of libvips.
    static func expectOneLine(_ run: CLIRun, containing text: String, _ label: String) {
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(label): \(run.stderr)")
        #expect(run.stderr.hasPrefix("halcyon: ") && run.stderr.contains(text), "\(label): \(run.stderr)")
        for word in libvipsText {
            #expect(!run.stderr.contains(word), "\(label) leaks \(word): \(run.stderr)")
        }
    }

    @Test("process: data that is not a usable image exits 65 and names the defect")
    func unusableData() async throws {
        let tiff = [UInt8](try TestImages.encodedGradient(.tiff, width: 64, height: 48))
        let scratch = try Self.scratch(with: [
            "truncated.jpg": try DamagedJPEG.truncated(),
            "empty.png": Data(),
            "text.png": Data("<html>not an image</html>".utf8),
            "broken.tif": Data(tiff.prefix(64)),
        ])
        defer { scratch.remove() }
        let cases = [
            ("truncated.jpg", "not a usable image: the JPEG data is truncated"),
            ("empty.png", "not a usable image: the data is empty"),
            ("text.png", "not a usable image: the data is not an image"),
            ("broken.tif", "not a usable image: the TIFF data is corrupt"),
        ]
        for (name, text) in cases {
            let input = scratch.root.appendingPathComponent(name)
            let run = try await CLIRun.run(["process", input.path, scratch.output.appendingPathComponent("o.png").path], cacheHome: scratch.cache)
            #expect(run.exitCode == 65, "\(name): \(run.stderr)")
            Self.expectOneLine(run, containing: text, name)
        }
    }

    @Test("process: a missing input exits 66")
    func missingInput() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let missing = scratch.root.appendingPathComponent("missing.jpg").path
        let run = try await CLIRun.run(["process", missing, scratch.output.path], cacheHome: scratch.cache)
        #expect(run.exitCode == 66, "\(run.stderr)")
        Self.expectOneLine(run, containing: "missing.jpg: no such file", "missing")
    }

    @Test("process: a damaged JPEG decodes without a word on stderr; --strict refuses it with 65")
    func strictAndQuiet() async throws {
        let scratch = try Self.scratch(with: ["damaged.jpg": try DamagedJPEG.damaged(), "junk.jpg": try DamagedJPEG.junkAfterStart()])
        defer { scratch.remove() }
        for name in ["damaged.jpg", "junk.jpg"] {
            let input = scratch.root.appendingPathComponent(name).path
            let output = scratch.output.appendingPathComponent(name + ".png").path
            let lenient = try await CLIRun.run(["process", input, output], cacheHome: scratch.cache)
            #expect(lenient.exitCode == 0, "\(name): \(lenient.stderr)")
            #expect(lenient.stderr.isEmpty, "\(name): libvips printed on stderr: \(lenient.stderr)")
            let strict = try await CLIRun.run(["process", input, output, "--strict"], cacheHome: scratch.cache)
            #expect(strict.exitCode == 65, "\(name): \(strict.stderr)")
            Self.expectOneLine(strict, containing: "not a usable image: the JPEG data is corrupt", name + " --strict")
        }
    }

    @Test("-v adds libvips' account as detail lines, still without raw libvips warnings")
    func verboseDetail() async throws {
        let scratch = try Self.scratch(with: ["truncated.jpg": try DamagedJPEG.truncated()])
        defer { scratch.remove() }
        let input = scratch.root.appendingPathComponent("truncated.jpg").path
        let run = try await CLIRun.run(["process", input, scratch.output.appendingPathComponent("o.png").path, "-v"], cacheHome: scratch.cache)
        #expect(run.exitCode == 65, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("halcyon: ") && $0.contains("the JPEG data is truncated") }, "\(run.stderr)")
        #expect(lines.contains { $0.hasPrefix("  detail: ") && $0.contains("Premature end") }, "\(run.stderr)")
        #expect(!run.stderr.contains("VIPS-WARNING"), "\(run.stderr)")
    }

    @Test("fetch: a broken TIFF exits 65 as corrupt; --strict reaches the decoder through the manager")
    func fetchThroughManager() async throws {
        let tiff = [UInt8](try TestImages.encodedGradient(.tiff, width: 64, height: 48))
        let scratch = try Self.scratch(with: ["broken.tif": Data(tiff.prefix(64)), "damaged.jpg": try DamagedJPEG.damaged()])
        defer { scratch.remove() }
        let broken = scratch.root.appendingPathComponent("broken.tif").path
        let tiffRun = try await CLIRun.run(["fetch", broken, "-o", scratch.output.path], cacheHome: scratch.cache)
        #expect(tiffRun.exitCode == 65, "\(tiffRun.stderr)")
        Self.expectOneLine(tiffRun, containing: "the TIFF data is corrupt", "fetch broken.tif")
        let damaged = scratch.root.appendingPathComponent("damaged.jpg").path
        // Strict first: a lenient run would leave the result in the cache.
        let strict = try await CLIRun.run(["fetch", damaged, "--strict", "-o", scratch.output.path], cacheHome: scratch.cache)
        #expect(strict.exitCode == 65, "\(strict.stderr)")
        Self.expectOneLine(strict, containing: "the JPEG data is corrupt", "fetch --strict")
        let lenient = try await CLIRun.run(["fetch", damaged, "-o", scratch.output.path], cacheHome: scratch.cache)
        #expect(lenient.exitCode == 0, "\(lenient.stderr)")
        #expect(lenient.stderr.isEmpty, "libvips printed on stderr: \(lenient.stderr)")
    }

    @Test("serve: --fail-on is validated and shown by --print-config")
    func serveFailOn() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let printed = try await CLIRun.run(["serve", "--insecure", "--port", "0", "--fail-on", "warning", "--print-config"], cacheHome: scratch.cache)
        #expect(printed.exitCode == 0, "\(printed.stderr)")
        #expect(try printed.json()["decodeStrictness"] as? String == "warning")
        let refused = try await CLIRun.run(["serve", "--insecure", "--port", "0", "--fail-on", "pedantic", "--print-config"], cacheHome: scratch.cache)
        #expect(refused.exitCode == 64, "\(refused.stderr)")
        #expect(refused.stderr.contains("--fail-on"), "\(refused.stderr)")
    }
}
