// swift-tools-version:6.2
import PackageDescription

// Two small runnable apps on Halcyon: a Vapor avatar endpoint (HalcyonVapor) and a Hummingbird app that mounts
// the image routes beside its own route. One package, so that both build in one pass over the same dependencies.
let package = Package(
    name: "HalcyonExamples",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Halcyon", path: ".."),
        .package(name: "HalcyonVapor", path: "../Integrations/HalcyonVapor"),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    ],
    targets: [
        .executableTarget(
            name: "VaporAvatar",
            dependencies: [
                .product(name: "Halcyon", package: "Halcyon"),
                .product(name: "HalcyonVapor", package: "HalcyonVapor"),
                .product(name: "Vapor", package: "vapor"),
            ],
            path: "VaporAvatar",
            exclude: ["README.md"]
        ),
        .executableTarget(
            name: "HummingbirdMount",
            dependencies: [
                .product(name: "HalcyonServer", package: "Halcyon"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "HummingbirdMount",
            exclude: ["README.md"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
