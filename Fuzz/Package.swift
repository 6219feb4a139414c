// swift-tools-version:6.0
// libFuzzer targets for Halcyon: a package of its own, outside Sources/, so
// `swift build` and `swift test` never build them. Build and run with
// `Fuzz/build.sh` or `make fuzz` (they need `--sanitize=fuzzer`).
import PackageDescription

let package = Package(
    name: "HalcyonFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Halcyon", path: ".."),
    ],
    targets: [
        // Arbitrary bytes -> decode with small limits -> processor chain -> PNG.
        .executableTarget(
            name: "DecodeFuzzer",
            dependencies: [.product(name: "Halcyon", package: "Halcyon")]
        ),
        // Arbitrary UTF-8 -> ProcessorChainParser.parse -> run the chain on a tiny image.
        .executableTarget(
            name: "ChainFuzzer",
            dependencies: [.product(name: "Halcyon", package: "Halcyon")]
        ),
        // Arbitrary UTF-8 as a `halcyon serve` request path -> URL parser, signature,
        // processing options, source resolver (local root with an escaping symlink).
        .executableTarget(
            name: "URLFuzzer",
            dependencies: [
                .product(name: "Halcyon", package: "Halcyon"),
                .product(name: "HalcyonServer", package: "Halcyon"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
