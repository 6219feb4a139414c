import ArgumentParser
import Foundation
import Halcyon
import Logging

/// Options every command that touches the cache or the network takes.
struct GlobalOptions: ParsableArguments {
    @Option(help: "Parent folder of the caches (default: $XDG_CACHE_HOME/halcyon, else ~/.cache/halcyon).")
    var cacheDir: String?

    @Option(help: "Cache name: a folder inside the cache folder.")
    var name = "default"

    @Option(help: "Memory cache limit: bytes, or a number with K, M or G (default: 1/4 of memory, at most 1G).")
    var memoryLimit: ByteCount?

    @Option(help: "Disk cache limit: bytes, or a number with K, M or G; 0 means none.")
    var diskLimit: ByteCount?

    @Option(help: "Download timeout in seconds.")
    var timeout: Double = 15

    @Flag(name: [.short, .long], help: "Log each step to standard error.")
    var verbose = false

    @Flag(help: "Print one JSON document on standard output instead of text.")
    var json = false

    @Flag(help: ArgumentHelp(DecodingFlags.strictHelp))
    var strict = false

    /// The logger for this run; debug level with `--verbose`, which also shows the library's debug lines.
    func makeLogger() -> Logger {
        DecodingFlags.configureLibraryLogging(verbose: verbose)
        var logger = Logger(label: "halcyon") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = verbose ? .debug : .warning
        return logger
    }

    /// The cache these options describe.
    func makeCache() throws -> ImageCache {
        var diskConfig = DiskStorage.Config(name: name)
        if let cacheDir { diskConfig.directory = URL(fileURLWithPath: cacheDir) }
        if let diskLimit { diskConfig.sizeLimit = UInt(diskLimit.bytes) }
        let disk: DiskStorage.Backend
        do {
            disk = try DiskStorage.Backend(config: diskConfig)
        } catch {
            throw CLIFailure(error: error, context: "cache \(name)")
        }
        var memoryConfig = MemoryStorage.Config()
        if let memoryLimit { memoryConfig.totalCostLimit = memoryLimit.bytes }
        return ImageCache(memoryStorage: MemoryStorage.Backend(config: memoryConfig), diskStorage: disk)
    }

    /// A manager on a fresh downloader and the cache these options describe.
    func makeManager() throws -> (HalcyonManager, ImageDownloader) {
        let downloader = ImageDownloader(name: "halcyon-cli")
        downloader.downloadTimeout = timeout
        let manager = HalcyonManager(downloader: downloader, cache: try makeCache())
        manager.defaultOptions = [.callbackQueue(.untouch)]
        return (manager, downloader)
    }
}

/// What `--strict` means, shared by the commands that decode.
enum DecodingFlags {
    static let strictHelp = "Refuse images with any decoder warning, such as JPEGs whose damage libjpeg would patch with grey (libvips fail_on=warning; default: refuse truncated data only)."

    /// `.warning` with `--strict`, else the library's default (`.truncated`).
    static func strictness(strict: Bool) -> DecodingStrictness {
        strict ? .warning : .default
    }

    /// With `verbose`, every swift-log logger without a handler of its own (the
    /// library's, such as libvips' messages under `halcyon.vips`) prints debug
    /// lines on standard error; otherwise swift-log's default (info and up) stays.
    static func configureLibraryLogging(verbose: Bool) {
        if verbose { _ = verboseBootstrap }
    }

    private static let verboseBootstrap: Void = {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .debug
            return handler
        }
    }()
}

/// A size in bytes given as `123`, `64K`, `512M` or `2G`.
struct ByteCount: ExpressibleByArgument {
    let bytes: Int

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).uppercased()
        let multipliers: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        var digits = Substring(text)
        var multiplier = 1
        if let last = digits.last, let factor = multipliers[last] {
            multiplier = factor
            digits = digits.dropLast()
        }
        if digits.hasSuffix("B") == false, let value = Double(digits), value >= 0, value.isFinite {
            bytes = Int(value * Double(multiplier))
        } else {
            return nil
        }
    }
}
