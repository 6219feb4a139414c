import ArgumentParser
import Foundation
import Halcyon

/// `halcyon cache`: look at and tidy a disk cache.
struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Inspect, clean or clear a cache.",
        subcommands: [Info.self, Clean.self, Clear.self, Path.self]
    )

    /// `halcyon cache info`.
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Size, entry count and expired count of the disk cache.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let cache = try global.makeCache()
            let statistics = cache.diskStorage.statistics()
            let limit = cache.diskStorage.config.sizeLimit
            if global.json {
                try JSONOutput.print([
                    "name": .string(global.name), "path": .string(cache.diskStorage.directoryURL.path),
                    "entries": .number(Double(statistics.entryCount)), "expired": .number(Double(statistics.expiredCount)),
                    "unreadable": .number(Double(statistics.unreadableCount)), "bytes": .number(Double(statistics.totalSize)),
                    "sizeLimit": .number(Double(limit)),
                ])
            } else {
                print("cache \(global.name) at \(cache.diskStorage.directoryURL.path)")
                print("  entries:    \(statistics.entryCount) (\(statistics.expiredCount) expired, \(statistics.unreadableCount) unreadable)")
                print("  size:       \(ByteFormat.string(Int(statistics.totalSize)))" + (limit > 0 ? " of \(ByteFormat.string(Int(limit)))" : " (no limit)"))
            }
        }
    }

    /// `halcyon cache clean`.
    struct Clean: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove expired and unreadable entries, then trim to the size limit.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let cache = try global.makeCache()
            let before = cache.diskStorage.statistics()
            let expired = cache.diskStorage.removeExpiredValues()
            let trimmed = cache.diskStorage.removeSizeExceededValues()
            let after = cache.diskStorage.statistics()
            if global.json {
                try JSONOutput.print([
                    "removedExpired": .number(Double(expired.count)), "removedForSize": .number(Double(trimmed.count)),
                    "bytesBefore": .number(Double(before.totalSize)), "bytesAfter": .number(Double(after.totalSize)),
                ])
            } else {
                print("removed \(expired.count) expired or unreadable and \(trimmed.count) for size: "
                    + "\(ByteFormat.string(Int(before.totalSize))) -> \(ByteFormat.string(Int(after.totalSize)))")
            }
        }
    }

    /// `halcyon cache clear`.
    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove every entry of the disk cache.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let cache = try global.makeCache()
            let before = cache.diskStorage.statistics()
            do {
                try await cache.clearDiskCache()
            } catch {
                let failure = CLIFailure(error: error, context: "clear")
                printError("halcyon: \(failure.message)")
                throw ExitCode(failure.exitCode)
            }
            if global.json {
                try JSONOutput.print(["removed": .number(Double(before.entryCount)), "bytes": .number(Double(before.totalSize))])
            } else {
                print("removed \(before.entryCount) entries (\(ByteFormat.string(Int(before.totalSize))))")
            }
        }
    }

    /// `halcyon cache path`.
    struct Path: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the disk cache's folder.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let cache = try global.makeCache()
            if global.json {
                try JSONOutput.print(["path": .string(cache.diskStorage.directoryURL.path)])
            } else {
                print(cache.diskStorage.directoryURL.path)
            }
        }
    }
}
