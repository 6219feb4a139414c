import ArgumentParser
import Foundation
import Halcyon

/// `halcyon info FILE|URL`: what an image is, as JSON (the server's `/info`).
///
/// Reads the header and a 64-pixel shrink-on-load decode only: size, format,
/// frames, orientation, alpha, colour space, byte size, EXIF/XMP/IPTC/ICC
/// presence and the common EXIF fields, the dominant colour and a BlurHash.
/// URLs are downloaded (not cached); failures exit as `fetch` does.
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info", abstract: "Print what an image is (size, format, EXIF, dominant colour, BlurHash) as JSON.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "A file path or an http(s) URL.")
    var input: String

    @Option(help: "BlurHash components as X:Y, 1...9 each.")
    var blurhash = "4:3"

    mutating func run() async throws {
        let parts = blurhash.split(separator: ":").compactMap { Int($0) }
        guard parts.count == 2, (1...9).contains(parts[0]), (1...9).contains(parts[1]) else {
            throw ValidationError("--blurhash takes X:Y, 1...9 each (e.g. 4:3)")
        }
        do {
            let data = try await load()
            var options = ImageDecodingOptions()
            options.strictness = DecodingFlags.strictness(strict: global.strict)
            let info = try ImageInfo.inspect(data, blurHashComponents: (parts[0], parts[1]), options: options)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(info), as: UTF8.self))
        } catch {
            let failure = CLIFailure(error: error, context: input)
            printError(failure.errorLines(verbose: global.verbose))
            throw ExitCode(failure.exitCode)
        }
    }

    /// The bytes of the input: a download for http(s), else the file.
    private func load() async throws -> Data {
        guard let url = URL(string: input), url.scheme == "http" || url.scheme == "https" else {
            return try Data(contentsOf: URL(fileURLWithPath: input))
        }
        let downloader = ImageDownloader(name: "halcyon-info")
        defer { Task { await downloader.shutdown() } }
        return try await downloader.downloadData(with: url).data
    }
}
