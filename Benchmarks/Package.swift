// swift-tools-version:6.0
// Side-by-side benchmarks, a package of their own so `swift test` never builds them.
// Each benchmark is a release-mode executable run by `make bench`.
import PackageDescription

let package = Package(
    name: "HalcyonBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Halcyon", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "ThumbnailBenchmark",
            dependencies: [.product(name: "Halcyon", package: "Halcyon")]
        ),
        .executableTarget(
            name: "MemoryBenchmark",
            dependencies: [.product(name: "Halcyon", package: "Halcyon")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
