// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Halcyon",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Halcyon", targets: ["Halcyon"]),
        .executable(name: "halcyon", targets: ["halcyon"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CVips",
            pkgConfig: "vips",
            providers: [.apt(["libvips-dev"])]
        ),
        .target(
            name: "CHalcyonVips",
            dependencies: ["CVips"]
        ),
        .target(
            name: "Halcyon",
            dependencies: [
                "CHalcyonVips",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "halcyon-cache-stress",
            dependencies: ["Halcyon"],
            path: "Sources/HalcyonCacheStress"
        ),
        .executableTarget(
            name: "halcyon",
            dependencies: [
                "Halcyon",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HalcyonTests",
            dependencies: [
                "Halcyon",
                "halcyon-cache-stress",
                "halcyon",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
