import ArgumentParser
import Foundation
import Halcyon

/// `halcyon fetch`: retrieve images through the manager (caches on) and write them.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Retrieve images through the cache, process them and write the results.",
        discussion: """
            Each SOURCE is an http(s) URL or a local file. Results are looked up in \
            memory, then on disk, then loaded; each line says where the image came \
            from (memory, disk or network). With one source, -o names the output \
            file; otherwise -o is a folder (default ./halcyon-out). The same source \
            given twice shows a memory hit.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "URLs or file paths.")
    var sources: [String]

    @Option(name: [.customShort("p"), .customLong("processor")], help: "Processor chain (see `halcyon process --help`).")
    var chain = ""

    @Option(help: "Output format: jpeg, png, webp, gif, avif or tiff (default: the source's).")
    var format: String?

    @Option(help: "Quality 1-100 for jpeg, webp and avif.")
    var quality: Int?

    @Option(name: [.short, .long], help: "Output file (one source) or folder.")
    var output: String?

    @Flag(help: "Skip the caches and load again.")
    var forceRefresh = false

    @Flag(help: "Only use the caches; a miss fails.")
    var onlyFromCache = false

    mutating func run() async throws {
        let logger = global.makeLogger()
        let processor: any ImageProcessor
        let encoding: ImageFormat?
        do {
            processor = try ProcessorChainParser.parse(chain)
            encoding = try format.map(OutputFormat.parse)
        } catch {
            throw report(CLIFailure(error: error))
        }
        let (manager, downloader) = try global.makeManager()
        defer { Task { await downloader.shutdown() } }
        var options: HalcyonOptionsInfo = [.processor(processor), .waitForCache, .preloadAllAnimationData,
                                           .decodingStrictness(DecodingFlags.strictness(strict: global.strict))]
        if forceRefresh { options.append(.forceRefresh) }
        if onlyFromCache { options.append(.onlyFromCache) }
        let destination = OutputDestination(path: output, sourceCount: sources.count)

        var items: [FetchItem] = []
        var firstFailure: CLIFailure?
        for (index, text) in sources.enumerated() {
            let started = ContinuousClock.now
            do {
                let source = try SourceArgument.parse(text)
                logger.debug("fetching \(text) with processor '\(processor.identifier)'")
                let result = try await manager.retrieveImage(with: source, options: options)
                let chosen = encoding ?? OutputFormat.infer(path: destination.explicitFile, image: result.image)
                let data = try result.image.encoded(as: OutputFormat.encoding(of: result.image, as: chosen, quality: quality))
                let url = try destination.write(data, index: index, source: text, format: ImageFormat(sniffing: data))
                let item = FetchItem(source: text, result: result, bytes: data.count, output: url.path,
                                     format: ImageFormat(sniffing: data), elapsed: ContinuousClock.now - started)
                items.append(item)
                if !global.json { print(item.line) }
            } catch {
                let failure = error as? CLIFailure ?? CLIFailure(error: error, context: text)
                firstFailure = firstFailure ?? failure
                items.append(FetchItem(source: text, failure: failure))
                if !global.json { printError(failure.errorLines(verbose: global.verbose)) }
            }
        }
        if global.json { try JSONOutput.print(["results": items.map { $0.json(verbose: global.verbose) }]) }
        if let firstFailure { throw ExitCode(firstFailure.exitCode) }
    }

    private func report(_ failure: CLIFailure) -> ExitCode {
        if global.json {
            try? JSONOutput.print(["results": [FetchItem(source: sources.first ?? "", failure: failure).json(verbose: global.verbose)]])
        } else {
            printError(failure.errorLines(verbose: global.verbose))
        }
        return ExitCode(failure.exitCode)
    }
}

/// One fetched (or failed) source, for the text line and the JSON document.
struct FetchItem {
    let source: String
    var result: RetrieveImageResult?
    var bytes = 0
    var output = ""
    var format: ImageFormat = .unknown
    var elapsed: Duration = .zero
    var failure: CLIFailure?

    init(source: String, result: RetrieveImageResult, bytes: Int, output: String, format: ImageFormat, elapsed: Duration) {
        self.source = source
        self.result = result
        self.bytes = bytes
        self.output = output
        self.format = format
        self.elapsed = elapsed
    }

    init(source: String, failure: CLIFailure) {
        self.source = source
        self.failure = failure
    }

    /// Where the image came from, in the tool's words.
    var origin: String {
        switch result?.cacheType {
        case .memory: return "memory"
        case .disk: return "disk"
        default: return "network"
        }
    }

    var line: String {
        guard let result else { return "\(source)  failed" }
        let frames = result.image.frameCount > 1 ? " \(result.image.frameCount) frames" : ""
        return "\(source)  \(origin)  \(bytes) bytes  \(result.image.width)x\(result.image.height)\(frames)  \(elapsed.halcyonMilliseconds)  -> \(output)"
    }

    /// The item's JSON object; a failure's detail only with `verbose`.
    func json(verbose: Bool) -> [String: JSONValue] {
        guard let result else {
            let error = failure?.json(verbose: verbose) ?? .object(["code": .string("failed"), "message": .string("")])
            return ["source": .string(source), "ok": .bool(false), "error": error]
        }
        return [
            "source": .string(source), "ok": .bool(true), "cacheType": .string(origin),
            "width": .number(Double(result.image.width)), "height": .number(Double(result.image.height)),
            "frames": .number(Double(result.image.frameCount)), "bytes": .number(Double(bytes)),
            "format": .string(format.rawValue), "output": .string(output),
            "milliseconds": .number((elapsed.halcyonMillisecondsValue * 10).rounded() / 10),
        ]
    }
}
