import ArgumentParser
import Foundation
import Halcyon

/// `halcyon prefetch`: load many images into the cache with a progress bar.
struct PrefetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Load images into the cache, a few at a time.",
        discussion: """
            URLs come from the arguments and from --from (a file with one URL per \
            line, or - for standard input; blank lines and lines starting with # \
            are skipped). Cached images are skipped. On a terminal a live progress \
            bar shows items, bytes, rate and ETA; otherwise (or with --no-progress) \
            one line per item. Exits non-zero when any item failed.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .customLong("from"), help: "A file of URLs, one per line, or - for standard input.")
    var listFile: String?

    @Option(help: "How many downloads at once.")
    var concurrency = ImagePrefetcher.defaultMaxConcurrentDownloads

    @Option(name: [.customShort("p"), .customLong("processor")], help: "Processor chain to cache the results under.")
    var chain = ""

    @Flag(help: "Print one line per item instead of a progress bar.")
    var noProgress = false

    @Argument(help: "URLs or file paths.")
    var urls: [String] = []

    mutating func run() async throws {
        let logger = global.makeLogger()
        let (sources, processor) = try parseInputs()
        let (manager, downloader) = try global.makeManager()
        downloader.maxConcurrentDownloads = max(downloader.maxConcurrentDownloads, concurrency)
        logger.debug("prefetching \(sources.count) sources, \(concurrency) at once")

        let started = ContinuousClock.now
        let showBar = !noProgress && !global.json && isatty(STDERR_FILENO) == 1
        let bar = showBar ? ProgressBar(total: sources.count) : nil
        let summary = await prefetch(sources, processor: processor, manager: manager, downloader: downloader, bar: bar)
        let seconds = (ContinuousClock.now - started).halcyonMillisecondsValue / 1000
        try printSummary(summary, sourceCount: sources.count, seconds: seconds, showedBar: bar != nil)
        if let first = summary.failures.first { throw ExitCode(first.failure.exitCode) }
    }

    /// Reads the URL list and the chain and parses every source; prints the problem and exits on a bad input.
    private func parseInputs() throws -> (sources: [Source], processor: any ImageProcessor) {
        let texts: [String]
        let processor: any ImageProcessor
        do {
            texts = try readList() + urls
            processor = try ProcessorChainParser.parse(chain)
        } catch {
            let failure = error as? CLIFailure ?? CLIFailure(error: error)
            printError("halcyon: \(failure.message)")
            throw ExitCode(failure.exitCode)
        }
        guard !texts.isEmpty else {
            printError("halcyon: nothing to prefetch (give URLs or --from FILE)")
            throw ExitCode(64)
        }
        var sources: [Source] = []
        for text in texts {
            do {
                sources.append(try SourceArgument.parse(text))
            } catch let failure as CLIFailure {
                printError("halcyon: \(failure.message)")
                throw ExitCode(failure.exitCode)
            }
        }
        guard concurrency > 0 else {
            printError("halcyon: --concurrency must be at least 1")
            throw ExitCode(64)
        }
        return (sources, processor)
    }

    /// Runs the prefetcher with per-item output, shuts the downloader down and returns what happened.
    private func prefetch(
        _ sources: [Source],
        processor: any ImageProcessor,
        manager: HalcyonManager,
        downloader: ImageDownloader,
        bar: ProgressBar?
    ) async -> Tally {
        let tally = Locked(Tally())
        let json = global.json
        let strictness = DecodingFlags.strictness(strict: global.strict)
        let prefetcher = ImagePrefetcher(
            sources: sources, options: [.processor(processor), .waitForCache, .decodingStrictness(strictness)], manager: manager)
        prefetcher.maxConcurrentDownloads = concurrency
        prefetcher.itemHandler = { source, outcome in
            let text = source.url?.absoluteString ?? source.cacheKey
            let (line, bytes, failed) = tally.withLock { tally in tally.record(text, outcome) }
            bar?.advance(bytes: bytes, failed: failed)
            if bar == nil, !json { print(line) }
        }
        _ = await prefetcher.prefetch()
        await downloader.shutdown()
        bar?.finish()

        return tally.withLock { $0 }
    }

    /// Prints the run's summary: JSON, or the failures (after a bar) and one totals line.
    private func printSummary(_ summary: Tally, sourceCount: Int, seconds: Double, showedBar: Bool) throws {
        if global.json {
            try JSONOutput.print([
                "completed": .array(summary.completed.map(JSONValue.string)),
                "skipped": .array(summary.skipped.map(JSONValue.string)),
                "failed": .array(summary.failures.map { .object(["source": .string($0.source), "code": .string($0.failure.code), "message": .string($0.failure.message)]) }),
                "bytes": .number(Double(summary.bytes)),
                "seconds": .number((seconds * 1000).rounded() / 1000),
            ])
        } else {
            for failure in summary.failures where showedBar || global.verbose {
                printError(failure.failure.errorLines(verbose: global.verbose))
            }
            print("prefetched \(sourceCount): \(summary.completed.count) completed, \(summary.skipped.count) skipped, "
                + "\(summary.failures.count) failed, \(ByteFormat.string(summary.bytes)) in \(String(format: "%.2f", seconds)) s")
        }
    }

    private func readList() throws -> [String] {
        guard let listFile else { return [] }
        let text: String
        if listFile == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            guard let contents = try? String(contentsOfFile: listFile, encoding: .utf8) else {
                throw CLIFailure(code: "no-input", message: "\(listFile): cannot read the URL list", exitCode: 66)
            }
            text = contents
        }
        return text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }
}

/// What a prefetch run did, item by item.
struct Tally {
    var completed: [String] = []
    var skipped: [String] = []
    var failures: [(source: String, failure: CLIFailure)] = []
    var bytes = 0

    /// Records an outcome; returns the plain line, the bytes loaded and whether it failed.
    mutating func record(_ source: String, _ outcome: ImagePrefetcher.ItemOutcome) -> (String, Int, Bool) {
        switch outcome {
        case .completed(let result):
            let size = result.originalData?.count ?? 0
            completed.append(source)
            bytes += size
            return ("completed  \(source)  \(size) bytes  \(result.image.width)x\(result.image.height)", size, false)
        case .skipped(let type):
            skipped.append(source)
            return ("skipped    \(source)  (in \(type == .memory ? "memory" : "disk"))", 0, false)
        case .failed(let error):
            let failure = CLIFailure(error: error, context: source)
            failures.append((source, failure))
            return ("failed     \(source)  \(failure.message)", 0, true)
        }
    }
}
