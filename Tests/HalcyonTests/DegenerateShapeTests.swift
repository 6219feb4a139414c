import AsyncHTTPClient
import Foundation
import Testing
@testable import Halcyon

/// Every format Halcyon decodes, in degenerate shapes (1×1, 1×N, N×1, 7×4000, 4000×7, 2×3), through the library's
/// decoders and processors and through a running `halcyon serve` with every resize type and the options that
/// change the geometry. Each answer is an image or a typed error (a 4xx from the server); the process stays up.
///
/// The still images are `Tests/Fixtures/Degenerate` (written by `scripts/make-degenerate-fixtures.sh`); the
/// animated WebP and GIF are made here.
@Suite("DegenerateShapeTests")
struct DegenerateShapeTests {
    static let shapes: [(width: Int, height: Int)] = [(1, 1), (1, 300), (300, 1), (7, 4000), (4000, 7), (2, 3)]

    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/Degenerate")

    /// The committed still images, and animated WebP and GIF in every shape; name → bytes. Made once.
    static let madeSources = Result { try makeSources() }

    static func sources() throws -> [(name: String, data: Data)] { try madeSources.get() }

    private static func makeSources() throws -> [(name: String, data: Data)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: fixtures.path).sorted()
        var sources = try names.map { ($0, try Data(contentsOf: fixtures.appendingPathComponent($0))) }
        for shape in shapes {
            let animation = try TestImages.animation(frames: 3, width: shape.width, height: shape.height)
            sources.append(("webp-animated-\(shape.width)x\(shape.height).webp", try animation.encoded(as: .webp(lossless: true))))
            sources.append(("gif-animated-\(shape.width)x\(shape.height).gif", try animation.encoded(as: .gif)))
        }
        return sources
    }

    /// Every resize type alone and with all the geometry options at once, and each option alone with each type in turn
    /// (17 sets).
    static var optionSets: [String] {
        let types = ["fit", "fill", "fill-down", "force", "auto"].map { "rs:\($0):200:200" }
        let modifiers = ["el:1", "z:2", "dpr:2", "c:3:3", "t:10", "ex:1", "pd:5"]
        let everything = types.flatMap { [$0, "\($0)/" + modifiers.joined(separator: "/")] }
        return everything + modifiers.enumerated().map { "\(types[$0.offset % types.count])/\($0.element)" }
    }

    @Test("the fixtures hold every still variant in every shape")
    func fixtureSet() throws {
        let sources = try Self.sources()
        // 14 still variants (4 JPEG, 5 PNG, 2 WebP, GIF, AVIF, TIFF) and 2 animated, in 6 shapes.
        #expect(sources.count == 16 * Self.shapes.count)
        for source in sources {
            let opened = try ImageDecoder.open(source.data)
            let named = source.name.split(separator: "-").last?.split(separator: ".").first ?? ""
            #expect("\(opened.width)x\(opened.height)" == named, "\(source.name)")
        }
    }

    /// The names of the sources, for the library test's arguments.
    static var sourceNames: [String] { ((try? sources()) ?? []).map(\.name) }

    @Test("library: every decode, shrink-on-load and processor gives an image", arguments: sourceNames)
    func library(name: String) throws {
        let data = try #require(try Self.sources().first { $0.name == name }?.data)
        var failures: [String] = []
        for (label, options) in Self.decodings {
            do {
                let image = try ImageDecoder.decode(data, options: options)
                if image.width < 1 || image.height < 1 { failures.append("\(label): \(image.width)x\(image.height)") }
                if label == "plain" { try Self.process(image, name: label, failures: &failures) }
            } catch {
                failures.append("\(label): \(error)")
            }
        }
        #expect(failures.count == 0, "\(name): \(failures.joined(separator: "\n"))")
    }

    /// Plain, and shrunk on load to 1, 3 and 200 pixels, exactly and by the loader alone.
    static var decodings: [(String, ImageDecodingOptions)] {
        var list: [(String, ImageDecodingOptions)] = [("plain", ImageDecodingOptions())]
        for side in [1.0, 3.0, 200.0] {
            for mode in [DownsamplingMode.exact, .loaderOnly] {
                list.append(("downsample \(Int(side)) \(mode)", ImageDecodingOptions(downsampleSize: CGSize(width: side, height: side), downsamplingMode: mode)))
            }
        }
        return list
    }

    /// Runs the geometry processors on `image`: each must give an image with pixels.
    static func process(_ image: Image, name: String, failures: inout [String]) throws {
        let processors: [any ImageProcessor] = [
            DownsamplingImageProcessor(size: CGSize(width: 200, height: 200)),
            DownsamplingImageProcessor(size: CGSize(width: 1, height: 1)),
            ResizingImageProcessor(referenceSize: CGSize(width: 200, height: 200), mode: .aspectFill),
            ResizingImageProcessor(referenceSize: CGSize(width: 3, height: 3), mode: .aspectFit),
            CroppingImageProcessor(size: CGSize(width: 3, height: 3)),
            TrimmingImageProcessor(threshold: 10),
        ]
        for processor in processors {
            do {
                let result = try processor.process(item: .image(image), options: HalcyonParsedOptionsInfo([]))
                if result.width < 1 || result.height < 1 {
                    failures.append("\(name) \(processor.identifier): \(result.width)x\(result.height)")
                }
            } catch {
                failures.append("\(name) \(processor.identifier): \(error)")
            }
        }
    }

    @Test("server: every format, shape and resize option answers an image or a 4xx, and the process stays up",
          .timeLimit(.minutes(10)))
    func server() async throws {
        let scratch = CLIScratch()
        defer { scratch.remove() }
        let sources = try Self.sources()
        let serve = try await scratch.serve(Dictionary(sources.map { ($0.name, $0.data) }) { first, _ in first })
        defer { serve.terminateIfRunning() }
        let paths = sources.flatMap { source in Self.optionSets.map { "/insecure/\($0)/plain/local:///\(source.name)" } }
        let failures = await Self.fetchAll(paths, port: serve.port, width: 4)
        #expect(serve.process.isRunning, "the server died:\n\(serve.logText.suffix(2000))")
        let health = try await httpGet("http://127.0.0.1:\(serve.port)/health")
        #expect(String(decoding: health, as: UTF8.self).contains("ok"))
        #expect(failures.count == 0, "\(failures.count) of \(paths.count) answers were neither an image nor a 4xx:\n\(failures.prefix(40).joined(separator: "\n"))")
        #expect(await serve.stop() == 0)
    }

    /// GETs every path, `width` at a time; the ones whose answer is neither a decodable image nor a 4xx.
    static func fetchAll(_ paths: [String], port: Int, width: Int) async -> [String] {
        await withTaskGroup(of: String?.self) { group in
            var failures: [String] = []
            var next = paths.makeIterator()
            for _ in 0..<width { if let path = next.next() { group.addTask { await check(path, port: port) } } }
            while let result = await group.next() {
                if let result { failures.append(result) }
                if let path = next.next() { group.addTask { await check(path, port: port) } }
            }
            return failures
        }
    }

    /// Nil when `path` answers a decodable image with 200, or a 4xx; else what it answered.
    static func check(_ path: String, port: Int) async -> String? {
        do {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)"), timeout: .seconds(30))
            let body = Data(buffer: try await response.body.collect(upTo: 64 << 20))
            switch response.status.code {
            case 200:
                let image = try ImageDecoder.decode(body)
                return image.width >= 1 && image.height >= 1 ? nil : "\(path): 200 with a \(image.width)x\(image.height) image"
            case 400..<500:
                return nil
            default:
                return "\(path): \(response.status.code) \(String(decoding: body.prefix(200), as: UTF8.self))"
            }
        } catch {
            return "\(path): \(error)"
        }
    }
}
