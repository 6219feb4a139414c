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
            ]
        ),
        .testTarget(
            name: "HalcyonTests",
            dependencies: ["Halcyon", "halcyon-cache-stress"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
