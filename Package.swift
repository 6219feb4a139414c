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
            dependencies: ["CHalcyonVips"]
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
            dependencies: ["Halcyon"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
