import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A response as a test sees it.
public struct TestResponse: Sendable {
    public var status: Int
    /// Lower-cased header names.
    public var headers: [String: String]
    public var body: [UInt8]

    public var text: String { String(decoding: body, as: UTF8.self) }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

public struct TestHTTPError: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// A blocking HTTP/1.1 client over a plain socket, for tests: one request per connection (`Connection: close`),
/// or raw bytes for malformed-request tests.
public struct TestHTTPClient: Sendable {
    public var port: UInt16
    public var timeout: Double

    public init(port: UInt16, timeout: Double = 10) {
        self.port = port
        self.timeout = timeout
    }

    /// Sends one request and reads the whole response.
    public func request(
        _ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil
    ) throws -> TestResponse {
        let raw = try exchange(head(method, path, headers: headers, contentLength: body?.count) + (body ?? []))
        guard let response = Self.parse(raw, method: method) else {
            throw TestHTTPError(description: "unparsable response: \(String(decoding: raw.prefix(200), as: UTF8.self))")
        }
        return response
    }

    /// Sends a JSON text body.
    public func request(
        _ method: String, _ path: String, headers: [String: String] = [:], json: String
    ) throws -> TestResponse {
        var headers = headers
        headers["Content-Type"] = headers["Content-Type"] ?? "application/json"
        return try request(method, path, headers: headers, body: Array(json.utf8))
    }

    /// Writes raw bytes, then reads until the server closes the connection (or the timeout passes).
    public func exchange(_ bytes: [UInt8], shutdownWrite: Bool = false) throws -> [UInt8] {
        let socket = try connect()
        defer { close(socket) }
        try send(bytes, on: socket)
        if shutdownWrite { shutdown(socket, Int32(SHUT_WR)) }
        return receiveAll(on: socket)
    }

    /// The bytes of a request that leaves its connection open, for tests of kept-alive connections
    /// (`receiveResponse(on:)` reads its answer).
    public func keptAliveRequest(_ method: String, _ path: String, body: [UInt8] = []) -> [UInt8] {
        head(method, path, contentLength: body.count, keepAlive: true) + body
    }

    /// A request's line and headers: `Connection: close` unless it keeps its connection, `Content-Length` when it
    /// has a body.
    private func head(
        _ method: String, _ path: String, headers: [String: String] = [:], contentLength: Int?, keepAlive: Bool = false
    ) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\n"
        if headers["Host"] == nil { head += "Host: 127.0.0.1:\(port)\r\n" }
        if !keepAlive { head += "Connection: close\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let contentLength { head += "Content-Length: \(contentLength)\r\n" }
        return Array((head + "\r\n").utf8)
    }

    /// Reads one response with a `Content-Length` from a kept-alive connection; nil when the connection closes (or
    /// the timeout passes) before it is whole.
    public func receiveResponse(on socket: Int32) -> TestResponse? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let response = Self.parse(received), let length = response.header("Content-Length").flatMap(Int.init),
                response.body.count >= length
            {
                return response
            }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return nil }
            received.append(contentsOf: buffer[0..<count])
        }
    }

    /// Opens a connection (the caller closes it).
    public func connect() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestHTTPError(description: "socket failed") }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(fd)
            throw TestHTTPError(description: "connect to port \(port) failed: errno \(errno)")
        }
        return fd
    }

    public func send(_ bytes: [UInt8], on socket: Int32) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw TestHTTPError(description: "send failed: errno \(errno)") }
            offset += sent
        }
    }

    public func receiveAll(on socket: Int32) -> [UInt8] {
        receiveUntilClosed(on: socket).bytes
    }

    /// `receiveAll`, telling whether the server closed the connection (`closed`) or the timeout passed first.
    public func receiveUntilClosed(on socket: Int32) -> (bytes: [UInt8], closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received.append(contentsOf: buffer[0..<count])
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return (received, count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            }
        }
    }

    /// Parses one response (Content-Length or read-to-close bodies).
    public static func parse(_ raw: [UInt8], method: String = "GET") -> TestResponse? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = raw.indices.first(where: { raw[$0...].starts(with: separator) }) else { return nil }
        let head = String(decoding: raw[..<headEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        var body = Array(raw[(headEnd + 4)...])
        if let length = headers["content-length"].flatMap(Int.init), method != "HEAD", body.count > length {
            body = Array(body[0..<length])
        }
        return TestResponse(status: status, headers: headers, body: body)
    }
}
