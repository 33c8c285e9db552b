// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "rangeserver",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RangeServer", targets: ["RangeServer"]),
        .library(name: "DownloadEngine", targets: ["DownloadEngine"]),
        .library(name: "Conformance", targets: ["Conformance"]),
        .executable(name: "rangeserver", targets: ["RangeServerCommand"]),
        .executable(name: "rangefetch", targets: ["RangeFetchCommand"]),
        .executable(name: "rangecheck", targets: ["RangeCheckCommand"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]
        ),
        .target(
            name: "RangeServer",
            dependencies: [
                "CMicroHTTPD",
                .product(name: "Crypto", package: "swift-crypto"),
                // Its pthread-based lock is visible to ThreadSanitizer; Synchronization.Mutex is not on Linux.
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .target(
            name: "DownloadEngine",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "Conformance",
            dependencies: [
                "RangeServer",
                "DownloadEngine",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "RangeServerCommand",
            dependencies: [
                "RangeServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "RangeFetchCommand",
            dependencies: [
                "DownloadEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "RangeCheckCommand",
            dependencies: [
                "Conformance",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "RangeBench",
            dependencies: ["RangeServer"]
        ),
        .testTarget(
            name: "RangeServerTests",
            dependencies: [
                "RangeServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "DownloadEngineTests",
            dependencies: [
                "DownloadEngine",
                "RangeServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "ConformanceTests",
            dependencies: ["Conformance", "RangeServer", "DownloadEngine"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
