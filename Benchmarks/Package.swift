// swift-tools-version:6.0
// Side-by-side benchmarks, a package of their own so `swift test` never builds them.
// Each benchmark is a release-mode executable run by `make bench`.
import PackageDescription

let package = Package(
    name: "HalcyonBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Halcyon", path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "ThumbnailBenchmark",
            dependencies: ["BenchmarkSupport", .product(name: "Halcyon", package: "Halcyon")]
        ),
        .executableTarget(
            name: "CLIBenchmark",
            dependencies: ["BenchmarkSupport", .product(name: "Halcyon", package: "Halcyon")]
        ),
        .executableTarget(
            name: "CacheBenchmark",
            dependencies: ["BenchmarkSupport", .product(name: "Halcyon", package: "Halcyon")]
        ),
        .executableTarget(
            name: "ServerBenchmark",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Halcyon", package: "Halcyon"),
                .product(name: "HalcyonServer", package: "Halcyon"),
            ]
        ),
        .executableTarget(
            name: "ResponseCacheBenchmark",
            dependencies: ["BenchmarkSupport", .product(name: "HalcyonServer", package: "Halcyon")]
        ),
        .executableTarget(
            name: "DownloadBenchmark",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Halcyon", package: "Halcyon"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .executableTarget(
            name: "StorageTierBenchmark",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Halcyon", package: "Halcyon"),
                .product(name: "HalcyonRedis", package: "Halcyon"),
            ]
        ),
        .executableTarget(
            name: "MemoryBenchmark",
            dependencies: ["BenchmarkSupport", .product(name: "Halcyon", package: "Halcyon")]
        ),
        .executableTarget(
            name: "RetrieveHitBenchmark",
            dependencies: ["BenchmarkSupport", .product(name: "Halcyon", package: "Halcyon")]
        ),
        .executableTarget(
            name: "RetrieveMemoryBenchmark",
            dependencies: ["BenchmarkSupport", .product(name: "Halcyon", package: "Halcyon")]
        ),
        .executableTarget(
            name: "PrefetchBenchmark",
            dependencies: ["BenchmarkSupport", .product(name: "Halcyon", package: "Halcyon")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
