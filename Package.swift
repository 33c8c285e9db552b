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
        .executable(name: "urlsession-conformance", targets: ["URLSessionConformanceExample"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        // Without its default SubprocessFoundation trait: nothing here needs its Data extensions.
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2", traits: []),
        .package(url: "https://github.com/apple/swift-http-structured-headers.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // HTTPFields: the engine's public request headers.
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]
        ),
        .target(
            name: "HTTPVocabulary",
            dependencies: [
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers")
            ]
        ),
        // openat2 for SystemCalls.openBeneath: no libc wrapper, and a Linux header Swift does not import.
        .target(name: "COpenBeneath"),
        .target(
            name: "SystemCalls",
            dependencies: ["COpenBeneath", .product(name: "SystemPackage", package: "swift-system")]
        ),
        .target(
            name: "RangeServer",
            dependencies: [
                "CMicroHTTPD",
                "HTTPVocabulary",
                "SystemCalls",
                .product(name: "Crypto", package: "swift-crypto"),
                // Its pthread-based lock is visible to ThreadSanitizer; Synchronization.Mutex is not on Linux.
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // gzip for the `encoding` fault: zlib through NIOHTTPCompression's response compressor.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                // The TLS fault listeners that answer before libmicrohttpd could (handshake-fail, handshake-stall).
                .product(name: "NIOPosix", package: "swift-nio"),
                // The HTTP/2 front end (HTTP2/): frames, HPACK, TLS with ALPN.
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                // The throwaway CA and the leaf certificates the TLS port serves.
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "DownloadEngine",
            dependencies: [
                "HTTPVocabulary",
                "SystemCalls",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // NIOSSL's handshake event, awaited inside proxy tunnels.
                .product(name: "NIOTLS", package: "swift-nio"),
                // The HTTP/2 stream errors AsyncHTTPClient passes through (a reset stream's code).
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                // The IP address a certificate names, checked inside proxy tunnels (ProxyTLS).
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "Conformance",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "RangeServer",
                "DownloadEngine",
                "HTTPVocabulary",
                "SystemCalls",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ]
        ),
        .executableTarget(
            name: "RangeServerCommand",
            dependencies: [
                "RangeServer",
                "SystemCalls",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "RangeFetchCommand",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "DownloadEngine",
                "SystemCalls",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "RangeCheckCommand",
            dependencies: [
                "Conformance",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The lock around `rangecheck serve`'s signal sources.
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // A reference client of `rangecheck serve` for app developers to copy: URLSession and a SHA-256 only.
        .executableTarget(
            name: "URLSessionConformanceExample",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        .executableTarget(
            name: "RangeBench",
            dependencies: ["RangeServer"]
        ),
        // Code the test targets share; a plain target, so no test runs from it.
        .target(
            name: "TestSupport",
            dependencies: [.product(name: "Subprocess", package: "swift-subprocess")],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "HTTPVocabularyTests",
            dependencies: [
                "HTTPVocabulary",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "RangeServerTests",
            dependencies: [
                "RangeServer",
                "HTTPVocabulary",
                "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ]
        ),
        .testTarget(
            name: "DownloadEngineTests",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "DownloadEngine",
                "HTTPVocabulary",
                "RangeServer",
                "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                // The forward proxy the proxy tests run on loopback.
                .product(name: "NIOPosix", package: "swift-nio"),
                // NIOSSL's read buffers seen directly (TLSReadBufferTests).
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // HTTP/2 error codes, as the transport maps them (EngineHTTP2Tests).
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // A log handler that keeps lines, to show no credential reaches a log.
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ]
        ),
        .testTarget(
            name: "ConformanceTests",
            dependencies: [
                "Conformance",
                "RangeServer",
                "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
