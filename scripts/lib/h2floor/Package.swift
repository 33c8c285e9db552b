// swift-tools-version: 6.2
import PackageDescription

// h2floor: bench case 11's baseline for what the required HTTP/2 stack (SwiftNIO, NIOSSL, swift-nio-http2) costs on
// its own. Built by scripts/bench only, so the root package's build and tests never compile it.
let package = Package(
    name: "h2floor",
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
    ],
    targets: [
        .executableTarget(
            name: "h2floor",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        )
    ]
)
