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

    /// The logger for this run; debug level with `--verbose`.
    func makeLogger() -> Logger {
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
