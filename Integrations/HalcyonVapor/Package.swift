// swift-tools-version:6.2
import PackageDescription

// HalcyonVapor: the Halcyon image routes and `HalcyonManager` in a Vapor 4 application. A package of its own so
// that the root package's `swift build` and `swift test` never build Vapor.
let package = Package(
    name: "HalcyonVapor",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HalcyonVapor", targets: ["HalcyonVapor"]),
    ],
    dependencies: [
        .package(name: "Halcyon", path: "../.."),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .target(
            name: "HalcyonVapor",
            dependencies: [
                .product(name: "Halcyon", package: "Halcyon"),
                .product(name: "HalcyonServer", package: "Halcyon"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "HalcyonVaporTests",
            dependencies: [
                "HalcyonVapor",
                .product(name: "VaporTesting", package: "vapor"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
