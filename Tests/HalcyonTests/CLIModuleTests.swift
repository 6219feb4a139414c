import Foundation
@testable import Halcyon
import Testing

/// The `halcyon` executable starts libvips without the loadable modules it never uses, and loads HEIF itself.
@Suite("halcyon: libvips modules")
struct CLIModuleTests {
    /// The file names of libvips' modules mapped into process `pid`.
    static func mappedModules(_ pid: Int32) throws -> Set<String> {
        // A /proc file reports no size: read it to its end.
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(pid)/maps"))
        defer { try? handle.close() }
        let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        return Set(maps.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("/vips-modules-"), let name = line.split(separator: "/").last else { return nil }
            return String(name)
        })
    }

    /// libvips, started in this test process, sets VIPSHOME for the processes it starts: not for these.
    static let inherited: Set<String> = ["VIPSHOME"]

    @Test("halcyon serve maps the HEIF module only, and answers AVIF both ways")
    func serveLoadsHEIFOnly() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let serve = try await scratch.serve([
            "a.png": TestImages.encodedGradient(.png(), width: 40, height: 20),
            "b.avif": TestImages.encodedGradient(.avif(quality: 80), width: 40, height: 20),
        ], unsetting: Self.inherited)
        defer { serve.terminateIfRunning() }
        let base = "http://127.0.0.1:\(serve.port)/insecure/rs:fit:20:20/plain/local://"
        let avif = try await httpGet(base + "/a.png@avif")
        #expect(ImageFormat(sniffing: avif) == .avif)
        let fromAVIF = try ImageDecoder.decode(try await httpGet(base + "/b.avif@png"))
        #expect(fromAVIF.width == 20 && fromAVIF.height == 10)
        let modules = try Self.mappedModules(serve.process.processIdentifier)
        #expect(modules == ["vips-heif.so"], "mapped: \(modules.sorted())")
        #expect(await serve.stop() == 0)
    }

    @Test("halcyon process writes and reads AVIF with the HEIF module it loads itself")
    func processAVIF() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(at: scratch.root, withIntermediateDirectories: true)
        let input = scratch.root.appendingPathComponent("in.png"), avif = scratch.root.appendingPathComponent("out.avif")
        try TestImages.encodedGradient(.png(), width: 60, height: 40).write(to: input)
        let written = try await CLIRun.run(["process", input.path, avif.path, "-p", "downsample(30)"], cacheHome: scratch.cache, unsetting: Self.inherited)
        #expect(written.exitCode == 0, "\(written.stderr)")
        #expect(ImageFormat(sniffing: try Data(contentsOf: avif)) == .avif)
        let back = scratch.root.appendingPathComponent("back.png")
        let read = try await CLIRun.run(["process", avif.path, back.path], cacheHome: scratch.cache, unsetting: Self.inherited)
        #expect(read.exitCode == 0, "\(read.stderr)")
        let decoded = try ImageDecoder.decode(try Data(contentsOf: back))
        #expect(decoded.width == 30 && decoded.height == 20)
    }
}
