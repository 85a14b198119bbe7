/// One HTTP response, as a value.
public struct HTTPResponse: Sendable {
    /// What follows the header.
    public enum Body: Sendable {
        case empty
        case bytes([UInt8])
        /// Bytes that live as long as the process (`PersistentBytes`): sent without a copy.
        case persistent(PersistentBytes)
        /// An open regular file, read as it is sent; the server closes the descriptor once the response is done.
        case file(descriptor: Int32, size: Int64)
        /// A body written over time, chunked (server-sent events); see `HTTPStream`.
        case stream(HTTPStream)
    }

    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: Body

    public init(status: Int, headers: [(name: String, value: String)] = [], body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body is UTF-8 text of the given type.
    public init(status: Int, contentType: String, text: String) {
        self.init(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(text.utf8)))
    }

    /// The value of the first header with this name (any case).
    public func header(_ name: String) -> String? {
        headers.first(where: { equalIgnoringASCIICase($0.name, name) })?.value
    }
}

/// A response body made once and kept for the life of the process (a health check's answer), which libmicrohttpd
/// can send without copying it for every response. Never freed: make one per constant, not per request.
public struct PersistentBytes: Sendable {
    /// `@unchecked`: written once here, read-only afterwards.
    private struct Storage: @unchecked Sendable {
        let buffer: UnsafeRawBufferPointer
    }

    private let storage: Storage

    public init(_ bytes: [UInt8]) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
        bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
        storage = Storage(buffer: UnsafeRawBufferPointer(rebasing: buffer[..<bytes.count]))
    }

    public var buffer: UnsafeRawBufferPointer { storage.buffer }
}
