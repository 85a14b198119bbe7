// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Bindery",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "bindery", targets: ["bindery"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2")
    ],
    targets: [
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CJansson",
            pkgConfig: "jansson",
            providers: [.apt(["libjansson-dev"])]
        ),
        .target(name: "PropertyList", dependencies: ["CJansson"]),
        .target(name: "ObjectGraph", dependencies: ["PropertyList"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD"]),
        .target(name: "Controllers", dependencies: ["ObjectGraph", "PropertyList"]),
        .target(name: "Bindery", dependencies: ["ObjectGraph", "PropertyList"]),
        .target(
            name: "BinderyHTTP", dependencies: ["Bindery", "Controllers", "ObjectGraph", "PropertyList", "HTTPServer"]),
        .executableTarget(
            name: "bindery",
            dependencies: [
                "Bindery",
                "BinderyHTTP",
                "HTTPServer",
                "ObjectGraph",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(name: "HTTPTestSupport", path: "Tests/HTTPTestSupport"),
        .target(
            name: "GraphTestSupport", dependencies: ["ObjectGraph", "PropertyList"], path: "Tests/GraphTestSupport"),
        .testTarget(name: "PropertyListTests", dependencies: ["PropertyList"]),
        .testTarget(name: "ObjectGraphTests", dependencies: ["ObjectGraph", "PropertyList", "GraphTestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "HTTPTestSupport"]),
        .testTarget(name: "BinderyTests", dependencies: ["Bindery", "ObjectGraph", "PropertyList"]),
        .testTarget(
            name: "ControllersTests", dependencies: ["Controllers", "ObjectGraph", "PropertyList", "GraphTestSupport"]),
        .testTarget(
            name: "BinderyHTTPTests",
            dependencies: [
                "Bindery", "BinderyHTTP", "Controllers", "HTTPServer", "ObjectGraph", "PropertyList", "HTTPTestSupport",
                "GraphTestSupport",
            ]
        ),
        .executableTarget(
            name: "ObjectGraphBenchmarks", dependencies: ["ObjectGraph", "PropertyList"],
            path: "Benchmarks/ObjectGraphBenchmarks"
        ),
        .executableTarget(
            name: "ControllerBenchmarks", dependencies: ["Controllers", "ObjectGraph", "PropertyList"],
            path: "Benchmarks/ControllerBenchmarks"
        ),
    ]
)
