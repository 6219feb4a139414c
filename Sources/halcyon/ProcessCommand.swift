import ArgumentParser
import Foundation
import Halcyon

/// `halcyon process <in> <out> -p CHAIN`: local processing, no cache.
struct ProcessCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "process",
        abstract: "Process local image files through a processor chain (no cache).",
        discussion: """
            INPUT is a file or a folder (every image file in it, not recursive); \
            OUTPUT is a file for one input, else a folder, created when missing. \
            A folder's files are processed several at once: up to --jobs (default: \
            the core count), while their decoded sizes fit in --memory-budget; \
            the lines come out in the folder's order.

            Processor chain: steps joined by |>, for example
              resize(300x200,fill)|>round(12)|>blur(2)|>tint(#ff000080)|>bw
            Steps: resize(WxH[,fit|fill|force]) downsample(WxH|N) \
            crop(WxH[,center|top|bottom|left|right|topleft|topright|bottomleft|bottomright]) \
            round(R|N%[,#color]) border(W,#color[,R]) blur(R) tint(#rrggbbaa) \
            overlay(#rrggbb[,F]) bw color(b=B,c=C,s=S,ev=E) blend(MODE[,ALPHA[,#color]])
            """
    )

    @Argument(help: "An image file or a folder of images.")
    var input: String

    @Argument(help: "The output file, or a folder for several inputs.")
    var output: String

    @Option(name: [.customShort("p"), .customLong("processor")], help: "The processor chain to apply.")
    var chain: String = ""

    @Option(help: "Output format: jpeg, png, webp, gif, avif or tiff (default: the input's, PNG when it cannot be written).")
    var format: String?

    @Option(help: "Quality 1-100 for jpeg, webp and avif.")
    var quality: Int?

    @Flag(help: ArgumentHelp(DecodingFlags.strictHelp))
    var strict = false

    @Option(help: "Files processed at once (default: the core count).")
    var jobs: Int?

    @Option(help: "Memory for the files being processed at once, MiB (default: a quarter of RAM, 256 to 2048).")
    var memoryBudget: Int?

    @Flag(name: [.short, .long], help: "Show the decoder's own account of each failure, and the library's debug lines, on standard error.")
    var verbose = false

    mutating func run() async throws {
        let processor: any ImageProcessor
        do {
            processor = try ProcessorChainParser.parse(chain)
        } catch {
            printError("halcyon: \(error)")
            throw ExitCodes.usage
        }
        let requestedFormat = try format.map { name throws -> ImageFormat in
            guard let parsed = OutputFormat.named(name) else {
                printError("halcyon: unknown output format \"\(name)\" (use jpeg, png, webp, gif, avif or tiff)")
                throw ExitCodes.usage
            }
            return parsed
        }
        DecodingFlags.configureLibraryLogging(verbose: verbose)
        let planned: [ProcessingJob]
        do {
            planned = try ProcessingJob.plan(input: input, output: output, format: requestedFormat)
        } catch {
            let failure = CLIFailure(error: error)
            printError(failure.errorLines(verbose: verbose))
            throw ExitCode(failure.exitCode)
        }
        let strictness = DecodingFlags.strictness(strict: strict)
        let (quality, verbose) = (quality, verbose)
        let run = ProcessingRun(
            jobs: planned, width: max(1, jobs ?? WorkQueue.defaultWidth),
            memoryBudget: memoryBudget.map { max(1, $0) << 20 } ?? ProcessingRun.defaultMemoryBudget
        ) { job in
            let started = ContinuousClock.now
            do {
                let result = try job.run(processor: processor, quality: quality, strictness: strictness)
                let elapsed = ContinuousClock.now - started
                return .done(line: "\(job.input.path) -> \(job.output.path)  \(result.summary)  \(elapsed.halcyonMilliseconds)")
            } catch {
                return .failed(CLIFailure(error: error, context: job.input.path))
            }
        }
        var firstFailure: CLIFailure?
        await run.run { outcome in
            switch outcome {
            case .done(let line):
                print(line)
            case .failed(let failure):
                firstFailure = firstFailure ?? failure
                printError(failure.errorLines(verbose: verbose))
            }
        }
        // The first failure's code: 65 for data that is not a usable image, 66 for an unreadable input, ...
        if let firstFailure { throw ExitCode(firstFailure.exitCode) }
    }
}

/// Writes a line to standard error.
func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

extension Duration {
    /// Milliseconds as a number.
    var halcyonMillisecondsValue: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }

    /// `12.3 ms`.
    var halcyonMilliseconds: String {
        String(format: "%.1f ms", halcyonMillisecondsValue)
    }
}
