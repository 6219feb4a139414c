// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "Halcyon",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Halcyon", targets: ["Halcyon"]),
        .library(name: "HalcyonServer", targets: ["HalcyonServer"]),
        .library(name: "HalcyonRedis", targets: ["HalcyonRedis"]),
        .executable(name: "halcyon", targets: ["halcyon"]),
    ],
    traits: [
        .trait(name: "OpenTelemetry", description: "OTLP/HTTP trace export in the `halcyon` tool (swift-otel)"),
        .default(enabledTraits: ["OpenTelemetry"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // NIOHTTP2 for the status guard on HTTP/2 streams; NIOSSL for the tests' HTTP/2 origin (both are already
        // AsyncHTTPClient's dependencies).
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // OTLP/HTTP export of traces only (no gRPC): linked into the `halcyon` tool behind the default trait
        // OpenTelemetry (the ThreadSanitizer run builds without it: swift-otel does not compile with -sanitize=thread).
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        // The `swift package generate-documentation` command (`make docs`); a command plugin, built only when run.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CVips",
            pkgConfig: "vips",
            providers: [.apt(["libvips-dev"])]
        ),
        // Intel's ISA-L: CRC-32 and Adler-32 of PNG data for the shrinking PNG loader (halcyon_png.c).
        .systemLibrary(
            name: "CIsal",
            pkgConfig: "libisal",
            providers: [.apt(["libisal-dev"])]
        ),
        // libdeflate: the PNG encoder's compression (halcyon_pngsave.c).
        .systemLibrary(
            name: "CDeflate",
            pkgConfig: "libdeflate",
            providers: [.apt(["libdeflate-dev"])]
        ),
        // libjpeg (libjpeg-turbo, the one libvips links): the JPEG encoder on the calling thread (halcyon_jpegsave.c).
        .systemLibrary(
            name: "CJPEG",
            pkgConfig: "libjpeg",
            providers: [.apt(["libjpeg62-turbo-dev"])]
        ),
        // libheif (with libaom, which libvips-dev brings): the AVIF encoder on the calling thread (halcyon_avifsave.c).
        .systemLibrary(
            name: "CHeif",
            pkgConfig: "libheif",
            providers: [.apt(["libheif-dev"])]
        ),
        // libwebp and libwebpmux (which libvips-dev brings): the WebP encoder and scaling loader on the calling thread.
        .systemLibrary(
            name: "CWebP",
            pkgConfig: "libwebpmux",
            providers: [.apt(["libwebp-dev"])]
        ),
        .target(
            name: "CHalcyonVips",
            dependencies: ["CVips", "CIsal", "CDeflate", "CJPEG", "CHeif", "CWebP"]
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
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            // The pipeline's design notes, for readers of the source; not a resource.
            exclude: ["Pipeline/README.md"]
        ),
        .target(
            name: "HalcyonRedis",
            dependencies: [
                "Halcyon",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(
            name: "HalcyonServer",
            dependencies: [
                "Halcyon",
                "HalcyonRedis",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
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
                "HalcyonServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OpenTelemetry"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "HalcyonTests",
            dependencies: [
                "Halcyon",
                "HalcyonServer",
                "HalcyonRedis",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                "halcyon-cache-stress",
                "halcyon",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
