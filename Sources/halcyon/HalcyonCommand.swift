import ArgumentParser
import Halcyon

/// The `halcyon` command-line tool: a thin front on the Halcyon library.
@main
struct HalcyonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "halcyon",
        abstract: "Image downloading, caching and processing on libvips.",
        discussion: """
            Exit codes: 0 success, 1 a failure while working (bad image, failed \
            processing, I/O error), 64 bad usage (unknown option, bad processor chain).
            """,
        version: HalcyonVersion.string,
        subcommands: [VersionCommand.self, ProcessCommand.self, ServeCommand.self]
    )
}
