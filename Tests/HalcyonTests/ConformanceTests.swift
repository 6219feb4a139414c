import Foundation
import Testing
@testable import Halcyon

/// The conformance corpus in `Tests/Fixtures/Conformance`, checked against its manifest.
///
/// `generate.py` writes the files and `manifest.json`; every expectation here
/// comes from that manifest (sizes the generator wrote or read from the PNG
/// header, error kinds it documents), never from a previous run of Halcyon.
@Suite("Conformance")
struct ConformanceTests {
    // MARK: - Corpus

    /// One manifest entry.
    struct Entry: Decodable, Sendable, CustomTestStringConvertible {
        struct Marker: Decodable, Sendable {
            let x: Int
            let y: Int
            let rgb: [Int]
        }

        let file: String
        let expect: String
        let format: String
        let width: Int?
        let height: Int?
        let frames: Int?
        let alpha: Bool?
        let orientation: Int?
        let markers: [Marker]?
        let error: String?

        var testDescription: String { file }
        var isImage: Bool { expect == "image" }
    }

    private struct Manifest: Decodable {
        let files: [Entry]
    }

    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/Conformance")

    /// The manifest, or nil when it cannot be read (a test below then fails).
    static let manifest: [Entry]? = {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent("manifest.json")) else { return nil }
        return try? JSONDecoder().decode(Manifest.self, from: data).files
    }()

    static var images: [Entry] { (manifest ?? []).filter(\.isImage) }
    static var failures: [Entry] { (manifest ?? []).filter { !$0.isImage } }

    /// Every file in the corpus folders (the manifest, the generator and notes aside).
    static var corpusFiles: [String] {
        let root = directory.standardizedFileURL.path
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        var files: [String] = []
        while let path = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let full = root + "/" + path
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            if ["manifest.json", "generate.py", "README.md"].contains(path) { continue }
            files.append(path)
        }
        return files.sorted()
    }

    static func bytes(_ file: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent(file))
    }

    /// The `ProcessorErrorReason` case name, as the manifest spells it.
    static func kind(_ reason: HalcyonError.ProcessorErrorReason) -> (name: String, format: ImageFormat?) {
        switch reason {
        case .emptyData: return ("emptyData", nil)
        case .unsupportedFormat(let format): return ("unsupportedFormat", format)
        case .corruptData(let format, _): return ("corruptData", format)
        case .tooManyPixels: return ("tooManyPixels", nil)
        case .tooManyFrames: return ("tooManyFrames", nil)
        case .encodeFailed(let format, _): return ("encodeFailed", format)
        case .processingFailed: return ("processingFailed", nil)
        case .operationFailed: return ("operationFailed", nil)
        case .invalidParameter: return ("invalidParameter", nil)
        case .invalidProcessorChain: return ("invalidProcessorChain", nil)
        case .engineUnavailable: return ("engineUnavailable", nil)
        case .resultTooLarge: return ("resultTooLarge", nil)
        case .memoryBudgetExceeded: return ("memoryBudgetExceeded", nil)
        }
    }

    // MARK: - The manifest itself

    @Test("the manifest lists every corpus file, and every listed file exists")
    func manifestMatchesFolder() throws {
        let entries = try #require(Self.manifest, "manifest.json is missing or unreadable")
        let listed = Set(entries.map(\.file))
        #expect(listed.count == entries.count, "a file is listed twice")
        let onDisk = Set(Self.corpusFiles)
        #expect(listed.subtracting(onDisk).sorted() == [], "listed but missing")
        #expect(onDisk.subtracting(listed).sorted() == [], "on disk but not in manifest.json")
        // Each part of the corpus is really there.
        for folder in ["pngsuite/", "pnggen/", "edge/"] {
            #expect(entries.contains { $0.file.hasPrefix(folder) && $0.isImage }, "\(folder) has no valid images")
        }
        for folder in ["pngcorrupt/", "edge/"] {
            #expect(entries.contains { $0.file.hasPrefix(folder) && !$0.isImage }, "\(folder) has no corrupt files")
        }
        #expect(Self.failures.count >= 20)
        #expect(Self.images.filter { $0.orientation != nil }.count == 8)
    }

    // MARK: - Valid files

    @Test("every valid file decodes to its expected size, frames and format", arguments: images)
    func validFileDecodes(entry: Entry) throws {
        let data = try Self.bytes(entry.file)
        let image = try ImageDecoder.decode(data, options: ImageDecodingOptions(preloadAllAnimationData: true))
        #expect(image.width == entry.width)
        #expect(image.height == entry.height)
        #expect(image.frameCount == (entry.frames ?? 1))
        #expect(image.originalFormat.rawValue == entry.format)
        if let alpha = entry.alpha {
            #expect(image.hasAlpha == alpha)
        }
        // Every frame's pixels can be read: the decode really happened.
        for frame in 0..<image.frameCount {
            let pixels = try image.rgbaPixels(frame: frame)
            #expect(pixels.count == image.width * image.height * 4)
        }
    }

    @Test("shrink-on-load keeps the aspect ratio of every valid file", arguments: images)
    func validFileDownsamples(entry: Entry) throws {
        let width = try #require(entry.width)
        let height = try #require(entry.height)
        let side = 8
        let image = try ImageDecoder.decode(try Self.bytes(entry.file),
                                            options: ImageDecodingOptions(downsampleSize: CGSize(width: side, height: side)))
        let longer = max(width, height)
        #expect(max(image.width, image.height) == min(longer, side))
        // Rounding moves the shorter side by at most a pixel.
        #expect(abs(image.width * height - image.height * width) <= width + height, "\(image.width)x\(image.height)")
        #expect(image.frameCount == (entry.frames ?? 1))
    }

    // MARK: - EXIF orientation

    @Test("EXIF orientation is applied: size swapped for 5-8, corners land where the tag says",
          arguments: images.filter { $0.orientation != nil })
    func orientationApplied(entry: Entry) throws {
        let image = try ImageDecoder.decode(try Self.bytes(entry.file))
        #expect(image.width == entry.width && image.height == entry.height)
        let markers = try #require(entry.markers)
        #expect(markers.count == 3)
        for marker in markers {
            let pixel = try image.pixel(x: marker.x, y: marker.y)
            let got = [Int(pixel.red), Int(pixel.green), Int(pixel.blue)]
            let close = zip(got, marker.rgb).allSatisfy { abs($0 - $1) <= 48 }
            #expect(close, "orientation \(entry.orientation ?? 0): (\(marker.x), \(marker.y)) is \(got), expected \(marker.rgb)")
        }
    }

    @Test("shrink-on-load applies EXIF orientation too", arguments: images.filter { $0.orientation != nil })
    func orientationAppliedWhenDownsampling(entry: Entry) throws {
        let width = try #require(entry.width)
        let height = try #require(entry.height)
        let image = try ImageDecoder.decode(try Self.bytes(entry.file),
                                            options: ImageDecodingOptions(downsampleSize: CGSize(width: 24, height: 24)))
        #expect(max(image.width, image.height) == 24)
        #expect((image.width > image.height) == (width > height), "got \(image.width)x\(image.height) for \(width)x\(height)")
    }

    @Test("loader-only shrink-on-load applies EXIF orientation too", arguments: images.filter { $0.orientation != nil })
    func orientationAppliedWhenShrinkingInTheLoader(entry: Entry) throws {
        let width = try #require(entry.width)
        let height = try #require(entry.height)
        let target = 24
        let shrink = ImageDecoder.jpegShrink(longerSide: max(width, height), shorterSide: min(width, height), atLeast: target)
        let image = try ImageDecoder.decode(try Self.bytes(entry.file), options: ImageDecodingOptions(
            downsampleSize: CGSize(width: target, height: target), downsamplingMode: .loaderOnly))
        #expect(shrink > 1, "the fixture is too small to exercise the loader's shrink")
        #expect(image.width == (width + shrink - 1) / shrink && image.height == (height + shrink - 1) / shrink,
                "got \(image.width)x\(image.height) for \(width)x\(height) / \(shrink)")
        for marker in try #require(entry.markers) {
            let pixel = try image.pixel(x: marker.x / shrink, y: marker.y / shrink)
            let got = [Int(pixel.red), Int(pixel.green), Int(pixel.blue)]
            let close = zip(got, marker.rgb).allSatisfy { abs($0 - $1) <= 64 }
            #expect(close, "orientation \(entry.orientation ?? 0): (\(marker.x), \(marker.y)) / \(shrink) is \(got), expected \(marker.rgb)")
        }
    }

    // MARK: - Corrupt files

    @Test("every corrupt file gives the expected typed error", arguments: failures)
    func corruptFileFails(entry: Entry) throws {
        let data = try Self.bytes(entry.file)
        let small = CGSize(width: 16, height: 16)
        for options in [ImageDecodingOptions(preloadAllAnimationData: true), ImageDecodingOptions(downsampleSize: small),
                        ImageDecodingOptions(downsampleSize: small, downsamplingMode: .loaderOnly)] {
            do {
                let image = try ImageDecoder.decode(data, options: options)
                _ = try image.rgbaPixels()
                Issue.record("decoded \(entry.file) into \(image.width)x\(image.height)")
            } catch {
                let reason = try #require(processorReason(error), "not a processor error: \(error)")
                let (name, format) = Self.kind(reason)
                #expect(name == entry.error, "\(reason)")
                if let format, name != "emptyData" {
                    #expect(format.rawValue == entry.format, "\(reason)")
                }
            }
        }
    }

    @Test("a loader error is never lost when many threads decode corrupt data at once")
    func corruptUnderConcurrency() throws {
        // libvips' thread pool now and then dropped the error of a loader that
        // failed part way, and the corrupt file decoded with black rows.
        let files = ["pngcorrupt/xcsn0g01.png", "pngcorrupt/xzln0g08.png", "edge/truncated.jpg"]
        let failing = Self.failures.map(\.file)
        #expect(files.allSatisfy(failing.contains), "the manifest no longer lists these as corrupt")
        let inputs = try files.map(Self.bytes)
        let decoded = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 480) { index in
            let which = index % inputs.count
            let options = index % 2 == 0 ? ImageDecodingOptions() : ImageDecodingOptions(downsampleSize: CGSize(width: 8, height: 8))
            if (try? ImageDecoder.decode(inputs[which], options: options)) != nil {
                decoded.withLock { $0.append(files[which]) }
            }
        }
        #expect(decoded.withLock { $0 } == [])
    }

    // MARK: - Nothing crashes

    @Test("every corpus file survives decode, a processor chain and re-encoding with small limits")
    func nothingCrashes() throws {
        let chain = try ProcessorChainParser.parse("downsample(24)|>round(4)|>blur(1)|>border(1,#ff000080)")
        let files = Self.corpusFiles
        #expect(!files.isEmpty)
        for file in files {
            let data = try Self.bytes(file)
            do {
                let image = try ImageDecoder.decode(data, options: ImageDecodingOptions(maxPixelCount: 1_000_000, maxFrameCount: 16))
                let processed = try chain.process(item: .image(image), options: HalcyonParsedOptionsInfo(nil))
                _ = try processed.encoded(as: .png())
            } catch {
                #expect(processorReason(error) != nil, "\(file): \(error)")
            }
        }
    }
}
