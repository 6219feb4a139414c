import ArgumentParser

/// The exit codes the tool documents in `--help`.
enum ExitCodes {
    /// Something failed while working on valid usage.
    static let failure = ExitCode(1)
    /// The command line itself is wrong (sysexits' EX_USAGE).
    static let usage = ExitCode(64)
}
