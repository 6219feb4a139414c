import ArgumentParser
import Halcyon

/// The `halcyon` command-line tool: a thin front on the Halcyon library.
@main
struct HalcyonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "halcyon",
        abstract: "Image downloading, caching and processing on libvips.",
        discussion: """
            Exit codes: 0 success; 1 other failure; 64 bad usage (unknown option, \
            bad URL, bad processor chain); 65 data that is not a usable image; \
            66 missing input (no such file, not cached with --only-from-cache); \
            69 source unavailable (unreachable host, timeout, HTTP error).
            """,
        version: HalcyonVersion.string,
        subcommands: [FetchCommand.self, PrefetchCommand.self, ProcessCommand.self, InfoCommand.self, CacheCommand.self, ServeCommand.self, VersionCommand.self]
    )

    /// Starts libvips without the modules the tool never uses, then runs the command line.
    static func main() async {
        VipsRuntime.startWithoutUnusedModules()
        await main(nil)
    }
}
