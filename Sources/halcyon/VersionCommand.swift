import ArgumentParser
import Halcyon

/// `halcyon version`: prints Halcyon's and libvips' versions.
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "version", abstract: "Print the Halcyon and libvips versions.")

    func run() throws {
        print("halcyon \(HalcyonVersion.string) (libvips \(HalcyonVersion.libvips))")
    }
}
