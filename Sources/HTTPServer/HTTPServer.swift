private import CMicroHTTPD
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why the server could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// A libmicrohttpd daemon that hands requests to an `HTTPResponder` as Swift values.
///
/// The daemon runs its own epoll threads (a pool of `threads`); connections come from `HTTPAcceptor`. Each request is
/// answered on the handler's second call (answering on the first, while only the header is in, would force
/// `Connection: close`). Bodies are collected up to `maxBodySize`; past it they are drained and the responder's 413 is
/// sent. A responder may suspend a connection and answer it later from any thread; `stop()` answers every suspended
/// connection before the daemon stops.
public final class HTTPServer: Sendable {
    /// `@unchecked Sendable`: while the server runs, the pointer is used only by the acceptor's thread
    /// (`MHD_add_connection`, which libmicrohttpd allows from any thread) and `stop()`'s connection count; `stop()`
    /// stops the acceptor before `MHD_stop_daemon`, once, after the state moved to stopping.
    private struct Daemon: @unchecked Sendable {
        let pointer: OpaquePointer
        let acceptor: HTTPAcceptor
    }

    private enum State {
        case idle
        case running(Daemon, port: UInt16)
        case stopping
        case stopped
    }

    public let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    private let state = Mutex(State.idle)
    /// Streams being sent, and whether new ones must end at once.
    private let streams = Mutex((open: [ObjectIdentifier: HTTPStream](), stopping: false))
    /// Suspended connections not yet completed, and whether new suspensions must be answered at once.
    private let suspensions = Mutex((connections: [ObjectIdentifier: HTTPSuspendedConnection](), stopping: false))
    /// Set by `beginDraining()`: every answer closes its connection, and `stop()` waits for the connections to close.
    private let draining = Atomic(false)
    /// Each connection's deadline for receiving its next request (`requestTimeout`).
    fileprivate let headerDeadlines: HeaderDeadlines
    /// Which workers are inside a handler, for the acceptor to keep new connections off stuck ones.
    fileprivate let workerLoad: WorkerLoad
    /// Bytes of the answers of at least `countedBodySize` that libmicrohttpd holds, not yet sent (`UnsentBody`), and
    /// of the streams it sends (`HTTPStream`).
    private let unsentBytes = Atomic<Int>(0)
    /// Answers at least this large are counted in `unsentBytes`. Smaller ones are copied by libmicrohttpd uncounted:
    /// at most this much per connection.
    static let countedBodySize = 16 << 10

    /// Bytes of large answers and of streams waiting for clients to read them (see
    /// `HTTPServerConfiguration.maxUnsentBytes`).
    public var unsentByteCount: Int { unsentBytes.load(ordering: .relaxed) }
    /// The same, for every server of the process (what `/metrics` reports: a responder does not know its server).
    public static var processUnsentByteCount: Int { processUnsentBytes.load(ordering: .relaxed) }
    private static let processUnsentBytes = Atomic<Int>(0)

    /// Counts bytes held for clients (positive) or handed on (negative) in `unsentByteCount` and its process total.
    func countUnsent(_ delta: Int) {
        unsentBytes.add(delta, ordering: .relaxed)
        Self.processUnsentBytes.add(delta, ordering: .relaxed)
    }
    /// Bytes of request bodies being received, beyond each one's first `uncountedBodySize`
    /// (`HTTPServerConfiguration.maxReceivingBytes`).
    private let receivingBytes = Atomic<Int>(0)
    /// The first bytes of each body, which every connection may hold however many others are received (as it holds
    /// its 16 KiB memory pool): a small body is never refused for other clients' uploads.
    static let uncountedBodySize = 16 << 10

    /// Bytes of request bodies being received (see `HTTPServerConfiguration.maxReceivingBytes`).
    public var receivingByteCount: Int { receivingBytes.load(ordering: .relaxed) }
    /// The same, for every server of the process (`/metrics`).
    public static var processReceivingByteCount: Int { processReceivingBytes.load(ordering: .relaxed) }
    private static let processReceivingBytes = Atomic<Int>(0)

    /// Open client connections (suspended ones included), for every server of the process (`/metrics`).
    public static var processConnectionCount: Int { processConnections.load(ordering: .relaxed) }
    fileprivate static let processConnections = Atomic<Int>(0)

    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder) {
        self.configuration = configuration
        self.responder = responder
        headerDeadlines = HeaderDeadlines(
            timeout: configuration.requestTimeout ?? configuration.idleTimeout,
            connectionLimit: configuration.connectionLimit)
        workerLoad = WorkerLoad(workers: configuration.threads)
    }

    /// The bound port while running (the real one when the configuration asked for port 0).
    public var port: UInt16? {
        state.withLock { state in
            if case .running(_, let port) = state { return port }
            return nil
        }
    }

    /// Binds and starts serving. Throws when the address cannot be bound or the server was started before.
    public func start() throws {
        signal(SIGPIPE, SIG_IGN)
        Self.raiseFileLimit()
        let address = try Self.resolve(host: configuration.host, port: configuration.port)
        let acceptor: HTTPAcceptor
        do {
            acceptor = try HTTPAcceptor(
                address: address.bytes, family: address.family, backlog: Int32(configuration.listenBacklog))
        } catch {
            throw HTTPServerError(
                message: "cannot listen on \(configuration.host):\(configuration.port): \(error.message)")
        }
        var flags =
            MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_NO_LISTEN_SOCKET.rawValue | MHD_USE_ERROR_LOG.rawValue | MHD_USE_TURBO.rawValue
        if address.family == AF_INET6 { flags |= MHD_USE_IPv6.rawValue }
        // The daemon holds an unretained pointer to self; `stop()` ends the daemon before self can go away, and the
        // owner keeps the server alive while it runs.
        let context = Unmanaged.passUnretained(self).toOpaque()
        let daemon = bindery_mhd_start(
            flags, accessHandler, context, requestCompleted, context, connectionNotified, context, targetSeen, nil,
            UInt32(max(1, configuration.threads)),
            // The acceptor enforces the limit; libmicrohttpd's own (split per worker) is set so that no worker ever
            // reaches it: version 0.9.75 can deadlock a worker that did, on shutdown. Twice over: the acceptor lets
            // new connections in while shed ones (up to two tenths of the limit) are still closing.
            UInt32(clamping: configuration.connectionLimit * max(1, configuration.threads) * 2),
            UInt32(configuration.idleTimeout),
            configuration.connectionMemoryLimit)
        guard let daemon else {
            throw HTTPServerError(message: "cannot start libmicrohttpd: \(String(cString: strerror(errno)))")
        }
        let started = state.withLock { state in
            guard case .idle = state else { return false }
            state = .running(Daemon(pointer: daemon, acceptor: acceptor), port: acceptor.port)
            return true
        }
        guard started else {
            MHD_stop_daemon(daemon)
            throw HTTPServerError(message: "the server was already started")
        }
        do {
            try acceptor.start(
                daemon: daemon, limit: configuration.connectionLimit, load: workerLoad,
                closing: { [headerDeadlines] in headerDeadlines.closingCount }
            ) { [headerDeadlines] in headerDeadlines.full() }
        } catch {
            stop()
            throw error
        }
    }

    /// The first step of a graceful stop: stops accepting connections (a client connecting from now on is refused)
    /// and has every answer from now on close its connection (`Connection: close`). A client of a kept-alive
    /// connection then learns of the stop from an answer to its next request, not from a connection reset that
    /// leaves it unsure whether that request was carried out; `stop()` gives those clients time to send it.
    public func beginDraining() {
        let acceptor: HTTPAcceptor? = state.withLock { state in
            guard case .running(let daemon, _) = state else { return nil }
            return daemon.acceptor
        }
        guard let acceptor else { return }
        draining.store(true, ordering: .releasing)
        acceptor.stop()
    }

    /// Answers every suspended connection with its shutdown response, ends every stream, waits (up to `grace` seconds) for those
    /// answers to go out, then stops the daemon. After `beginDraining()` it also waits, before stopping the daemon and
    /// up to `drain` seconds more, for every connection to close (each closes after its next answer; an idle one holds
    /// the stop that long).
    /// Safe to call more than once.
    public func stop(grace: Double = 5, drain: Double = 1) {
        let daemon: Daemon? = state.withLock { state in
            guard case .running(let daemon, _) = state else { return nil }
            state = .stopping
            return daemon
        }
        guard let daemon else { return }
        let waiting = suspensions.withLock { suspensions in
            suspensions.stopping = true
            return Array(suspensions.connections.values)
        }
        for connection in waiting { connection.resume(with: connection.shutdownResponse()) }
        let open = streams.withLock { streams in
            streams.stopping = true
            return Array(streams.open.values)
        }
        for stream in open { stream.finish() }
        let deadline = Self.now() + grace
        while suspendedCount + streams.withLock({ $0.open.count }) > 0, Self.now() < deadline {
            usleep(2_000)
        }
        if draining.load(ordering: .acquiring) {
            let drained = Self.now() + drain
            while bindery_mhd_connection_count(daemon.pointer) > 0, Self.now() < drained { usleep(2_000) }
        }
        daemon.acceptor.stop()
        MHD_stop_daemon(daemon.pointer)
        bindery_mhd_log_flush()  // how many of libmicrohttpd's lines were not written, if any
        state.withLock { $0 = .stopped }
    }

    /// Connections suspended and not yet completed.
    public var suspendedCount: Int {
        suspensions.withLock { $0.connections.count }
    }

    // MARK: - Called from the C callbacks

    /// The per-request state behind libmicrohttpd's `*con_cls`, made only when a request has a body or is suspended;
    /// until then `*con_cls` holds `headerSeen`.
    final class RequestContext {
        /// Why the request is answered without its body.
        enum Refusal {
            case bodyTooLarge
            /// The bodies being received would pass `maxReceivingBytes`.
            case receivingLimit
            /// Ambiguous framing (RFC 9112 §6): answered, then the connection is closed.
            case malformed(status: Int, reason: String)
        }

        var body: [UInt8] = []
        /// Bytes of `body`'s capacity counted in the server's `receivingBytes` (released when the body is handed on
        /// or dropped).
        var counted = 0
        /// Bytes of a refused body read and dropped.
        var dropped = 0
        var refusal: Refusal?
        var suspended: HTTPSuspendedConnection?
    }

    /// `*con_cls` after the first call of a request that has no `RequestContext` (yet).
    static var headerSeen: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 1)! }

    /// The context behind `*con_cls`, made (and retained until `requestCompleted`) when there is none yet.
    fileprivate static func context(in slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> RequestContext {
        if let stored = slot.pointee, stored != headerSeen {
            return Unmanaged<RequestContext>.fromOpaque(stored).takeUnretainedValue()
        }
        let context = RequestContext()
        slot.pointee = Unmanaged.passRetained(context).toOpaque()
        return context
    }

    fileprivate func handle(
        connection: OpaquePointer, rawURL: String, method: String,
        contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> HTTPResponse? {
        let existing = contextSlot.pointee == Self.headerSeen ? nil : Self.context(in: contextSlot)
        if let suspended = existing?.suspended {
            return suspended.takeResponse()
        }
        var body: [UInt8] = []
        if let existing {
            swap(&body, &existing.body)
            releaseReceiving(existing)
        }
        let query = Self.query(of: connection)
        // Noted for this request by `targetSeen` when it has parameters (a bare `?` is not kept).
        let rawQuery = query.parameters.isEmpty ? nil : clock(of: connection)?.rawQuery.withLock { $0 }
        var request = HTTPRequest(
            method: method, rawPath: rawURL, rawQuery: rawQuery, query: query.parameters,
            headers: Self.headers(of: connection), body: body)
        request.queryDecodes = query.decodes
        switch existing?.refusal {
        case nil: break
        case .bodyTooLarge?:
            return responder.respondToOversizedBody(request, limit: configuration.maxBodySize)
        case .receivingLimit?:
            return responder.respondToReceivingLimit(request, limit: configuration.maxReceivingBytes)
        case .malformed(let status, let reason)?:
            var response = responder.respondToMalformedRequest(request, status: status, reason: reason)
            response.headers.append(("Connection", "close"))
            return response
        }
        switch responder.respond(to: consume request) {
        case .response(let response):
            return response
        case .suspend(let suspension):
            let handle = HTTPSuspendedConnection(connection: connection, shutdownResponse: suspension.shutdownResponse)
            Self.context(in: contextSlot).suspended = handle
            MHD_suspend_connection(connection)
            let stopping = suspensions.withLock { suspensions in
                suspensions.connections[ObjectIdentifier(handle)] = handle
                return suspensions.stopping
            }
            // Registered even when stopping: an answer that is ready at once (a change the closed document made
            // durable) is the true one; only a connection still unanswered then gets the shutdown response.
            suspension.register(handle)
            if stopping { handle.resume(with: suspension.shutdownResponse()) }
            return nil
        }
    }

    fileprivate func completed(_ context: RequestContext) {
        releaseReceiving(context)
        if let suspended = context.suspended {
            _ = suspensions.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(suspended)) }
        }
    }

    /// Why a request is answered as soon as its header is in, before its body is read (nil: it is not). Such an
    /// answer closes the connection: libmicrohttpd does not read the body of a request it answered first.
    fileprivate func refusalUpFront(
        _ connection: OpaquePointer, method: UnsafePointer<CChar>?, url: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?
    ) -> RequestContext.Refusal? {
        // libmicrohttpd reads the request line by its bytes but hands the target on as a C string: a raw NUL in it
        // would cut the path short (`DELETE /objects/E/1\0/rest` would delete E/1). In the buffer, the target is
        // followed by the space before the HTTP version, which libmicrohttpd turned into the NUL that ends it: the
        // target's length up to its first control character (taken before the query was split off) must reach it.
        // (RFC 9112 §3.2: no control character is part of a target; raw ones in the query would read as encoded.)
        if let url, let version, let length = clock(of: connection)?.targetLength.exchange(-1, ordering: .relaxed),
            length < 0 || url + length + 1 != version
        {
            return .malformed(status: 400, reason: "The request target holds a NUL byte or a control character.")
        }
        // RFC 9112 §3.2: a target is a path (the origin form), an absolute URI, or `*` for a server-wide OPTIONS;
        // libmicrohttpd hands on anything (`GET healthz` would be answered for `/healthz`).
        if let url, url.pointee != CChar(UInt8(ascii: "/")), strncasecmp(url, "http://", 7) != 0,
            strncasecmp(url, "https://", 8) != 0,
            strcmp(url, "*") != 0 || method.map({ strcmp($0, "OPTIONS") }) != 0
        {
            return .malformed(
                status: 400, reason: "The request target is not a path (nor an absolute URI, nor * for OPTIONS).")
        }
        // A target has no white space (RFC 9112 §3.2): libmicrohttpd splits the line at its first and last space, so
        // `GET /a  HTTP/1.1` would be answered for the path `/a ` and `GET /a b HTTP/1.1` for `/a b`. (Only the path
        // is looked at: libmicrohttpd has decoded the query's `%20`s in place by now.)
        if let url, strpbrk(url, " \t") != nil {
            return .malformed(status: 400, reason: "The request target holds white space.")
        }
        // The request head and the response's header fields share the connection's memory pool: a head that leaves
        // too little of it would be handled, and its answer then fail for want of memory (nothing sent). Such heads
        // are refused before anything is done. Each header field, query argument and cookie takes a record of
        // `fieldRecordSize` from the pool besides its bytes (217 ten-byte fields fill it as surely as 14 KiB), and the
        // cookies are read from a copy of the `Cookie` field.
        let fields = Int(bindery_mhd_request_field_count(connection))
        let cookies = MHD_lookup_connection_value(connection, .HEADER_KIND, "Cookie").map { strlen($0) + 1 } ?? 0
        let headSize = bindery_mhd_request_header_size(connection) + fields * Self.fieldRecordSize + cookies
        if headSize > configuration.maximumRequestHeadSize {
            return .malformed(
                status: 431,
                reason: "The request line and its \(fields) header fields and query arguments take \(headSize) bytes "
                    + "of the connection's memory; at most \(configuration.maximumRequestHeadSize) are taken.")
        }
        // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing (an HTTP/1.0 hop before the
        // server may have read its body otherwise); libmicrohttpd would read it chunked and keep the connection.
        if let version, strcmp(version, "HTTP/1.0") == 0,
            MHD_lookup_connection_value(connection, .HEADER_KIND, "Transfer-Encoding") != nil
        {
            return .malformed(
                status: 400, reason: "An HTTP/1.0 request has no Transfer-Encoding (its framing is faulty).")
        }
        let needsHost = version.map { strcmp($0, "HTTP/1.1") == 0 } ?? false
        switch Int(bindery_mhd_framing_problem(connection, method, needsHost ? 1 : 0)) {
        case Int(BINDERY_FRAMING_OK): break
        case Int(BINDERY_FRAMING_CONFLICTING_LENGTHS):
            return .malformed(status: 400, reason: "The request has Content-Length fields that differ.")
        case Int(BINDERY_FRAMING_LENGTH_AND_CHUNKED):
            return .malformed(status: 400, reason: "The request has both Transfer-Encoding and Content-Length.")
        case Int(BINDERY_FRAMING_UNKNOWN_CODING):
            return .malformed(status: 501, reason: "The only transfer coding taken is chunked.")
        case Int(BINDERY_FRAMING_BAD_FIELD_VALUE):
            return .malformed(status: 400, reason: "A header field value holds a control character.")
        case Int(BINDERY_FRAMING_BAD_HOST):
            return .malformed(status: 400, reason: "An HTTP/1.1 request has one Host field; no request has two.")
        default:
            return .malformed(
                status: 400, reason: "A header field name is not a token, or a header line is folded (obs-fold).")
        }
        // A request that waits for `100 Continue` with a body over the limit gets its 413 before sending the body
        // (RFC 9110 §10.1.1). Other bodies over the limit are drained, so that a client that writes its whole body
        // before reading sees the 413 rather than a reset, unless the declared length is beyond any sensible
        // drain: then the 413 goes at once and the connection is closed.
        guard let length = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
            let size = UInt64(String(cString: length)), size > UInt64(configuration.maxBodySize)
        else { return nil }
        if size > UInt64(configuration.maxBodySize) + Self.drainedExcess { return .bodyTooLarge }
        guard let expect = MHD_lookup_connection_value(connection, .HEADER_KIND, "Expect"),
            strcasecmp(expect, "100-continue") == 0
        else { return nil }
        return .bodyTooLarge
    }

    /// What libmicrohttpd 0.9.75 takes from a connection's pool for each header field, query argument or cookie it
    /// keeps: its `struct MHD_HTTP_Header`, seven words, rounded to the pool's alignment.
    static let fieldRecordSize = 64

    /// How far past `maxBodySize` a body is still drained before its 413 (a declared length further over is refused
    /// before its body, `refusalUpFront`; a chunked body that goes further has its connection closed, `append`).
    static let drainedExcess: UInt64 = 64 << 20

    /// Adds bytes of a request's body to its context, unless it is refused (then they are dropped): over
    /// `maxBodySize`, or when the bodies being received would pass `maxReceivingBytes`. The body grows by doubling,
    /// but never past its declared length (`declaredLength`, looked up only then). False when the connection is to
    /// be closed: a refused body still comes `drainedExcess` past `maxBodySize` (a chunked one: a declared length
    /// that far over is refused before its body is read).
    fileprivate func append(
        body data: UnsafePointer<CChar>, count: Int, to context: RequestContext, declaredLength: () -> Int?
    ) -> Bool {
        guard context.refusal == nil else {
            context.dropped += count
            return context.dropped <= configuration.maxBodySize + Int(Self.drainedExcess)
        }
        let needed = context.body.count + count
        if needed > configuration.maxBodySize {
            refuse(context, .bodyTooLarge)
            context.dropped = needed
            return true
        }
        if needed > context.body.capacity {
            // The declared length is looked up only when it can matter (not for a body's first bytes).
            let doubled = context.body.capacity * 2
            let capacity =
                doubled <= needed
                ? needed : max(needed, min(doubled, declaredLength() ?? .max, configuration.maxBodySize))
            let counted = max(0, capacity - Self.uncountedBodySize)
            if counted > context.counted {
                let added = counted - context.counted
                let total = receivingBytes.add(added, ordering: .relaxed).newValue
                // Past the limit unless this body is all that is held.
                if total > configuration.maxReceivingBytes && total != counted {
                    receivingBytes.subtract(added, ordering: .relaxed)
                    refuse(context, .receivingLimit)
                    context.dropped = needed
                    return true
                }
                Self.processReceivingBytes.add(added, ordering: .relaxed)
                context.counted = counted
            }
            context.body.reserveCapacity(capacity)
        }
        data.withMemoryRebound(to: UInt8.self, capacity: count) { bytes in
            context.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: count))
        }
        return true
    }

    private func refuse(_ context: RequestContext, _ refusal: RequestContext.Refusal) {
        context.refusal = refusal
        context.body = []
        releaseReceiving(context)
    }

    private func releaseReceiving(_ context: RequestContext) {
        guard context.counted > 0 else { return }
        receivingBytes.subtract(context.counted, ordering: .relaxed)
        Self.processReceivingBytes.subtract(context.counted, ordering: .relaxed)
        context.counted = 0
    }

    // MARK: - Helpers

    /// What the `MHD_get_connection_values` callback fills in: a value on the caller's stack, reached through the
    /// context pointer while the synchronous call runs (no object allocated per request).
    private struct ValueCollector {
        /// Makes one pair from a key and its value (a function without captures, so nothing is allocated).
        let pair: (UnsafePointer<CChar>, UnsafePointer<CChar>?) -> (name: String, value: String)
        var pairs: [(name: String, value: String)] = []
    }

    /// The connection's values of one kind, in order, in one array sized by a first counting pass.
    private static func values(
        of connection: OpaquePointer, _ kind: MHD_ValueKind,
        _ pair: @escaping (UnsafePointer<CChar>, UnsafePointer<CChar>?) -> (name: String, value: String)
    ) -> [(name: String, value: String)] {
        var collector = ValueCollector(pair: pair)
        collector.pairs.reserveCapacity(Int(MHD_get_connection_values(connection, kind, nil, nil)))
        // The collector lives in this frame for the duration of the synchronous call.
        withUnsafeMutablePointer(to: &collector) { context in
            _ = MHD_get_connection_values(
                connection, kind,
                { context, _, key, value in
                    guard let context, let key else { return .YES }
                    let collector = context.assumingMemoryBound(to: ValueCollector.self)
                    collector.pointee.pairs.append(collector.pointee.pair(key, value))
                    return .YES
                }, context)
        }
        return collector.pairs
    }

    /// The header fields with lower-cased names.
    private static func headers(of connection: OpaquePointer) -> [(name: String, value: String)] {
        values(of: connection, .HEADER_KIND) { key, value in
            // Field names are ASCII tokens: lower-case the bytes rather than going through Unicode.
            let length = strlen(key)
            let name = String(unsafeUninitializedCapacity: length) { buffer in
                for index in 0..<length {
                    let byte = UInt8(bitPattern: key[index])
                    buffer[index] = byte >= 65 && byte <= 90 ? byte | 0x20 : byte
                }
                return length
            }
            return (name, value.map(fieldValue) ?? "")
        }
    }

    /// A field's value without the white space after it (RFC 9112 §5: optional white space around a value is not
    /// part of it; libmicrohttpd skips what comes before it only).
    private static func fieldValue(_ text: UnsafePointer<CChar>) -> String {
        var length = strlen(text)
        while length > 0, text[length - 1] == 0x20 || text[length - 1] == 0x09 { length -= 1 }
        return String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
    }

    /// The query parameters, decoded as a form (`HTTPRequest.percentDecode`), and whether they all decoded: a name or
    /// value that is not UTF-8 is kept as a replacement character so that the application can refuse the request.
    private static func query(of connection: OpaquePointer) -> (
        parameters: [(name: String, value: String)], decodes: Bool
    ) {
        var decodes = true
        let parameters = values(of: connection, .GET_ARGUMENT_KIND) { key, value in
            func decoded(_ text: UnsafePointer<CChar>) -> String {
                let bytes = UnsafeBufferPointer(
                    start: UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self), count: strlen(text))
                guard let decoded = HTTPRequest.percentDecode(bytes, asForm: true) else {
                    decodes = false
                    return "\u{FFFD}"
                }
                return decoded
            }
            return (decoded(key), value.map(decoded) ?? "")
        }
        return (parameters, decodes)
    }

    /// Hands the response to libmicrohttpd. A large answer to a GET or HEAD (whose answer can be replaced without
    /// losing a change) while other large answers hold `maxUnsentBytes` is replaced by the responder's
    /// `respondToUnsentLimit`: clients that do not read could otherwise make the server hold any amount.
    fileprivate func queue(_ response: HTTPResponse, on connection: OpaquePointer, method: String) -> MHD_Result {
        let mhdResponse: OpaquePointer?
        switch response.body {
        case .empty:
            mhdResponse = MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
        case .bytes(let bytes) where bytes.count >= Self.countedBodySize:
            let unsent = unsentBytes.load(ordering: .relaxed)
            if method == "GET" || method == "HEAD", unsent > 0, unsent + bytes.count > configuration.maxUnsentBytes {
                return queue(
                    responder.respondToUnsentLimit(limit: configuration.maxUnsentBytes, held: unsent),
                    on: connection, method: "")
            }
            let body = Unmanaged.passRetained(UnsentBody(copying: bytes, countedIn: self))
            mhdResponse = MHD_create_response_from_buffer_with_free_callback_cls(
                bytes.count, body.takeUnretainedValue().storage.baseAddress, unsentBodyReleased, body.toOpaque())
            if mhdResponse == nil { body.release() }
        case .bytes(let bytes):
            mhdResponse = bytes.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(
                    raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .persistent(let bytes):
            mhdResponse = MHD_create_response_from_buffer(
                bytes.buffer.count, UnsafeMutableRawPointer(mutating: bytes.buffer.baseAddress), .RESPMEM_PERSISTENT)
        case .stream(let stream):
            stream.attach(to: connection, countingIn: self)
            let key = ObjectIdentifier(stream)
            let stopping = streams.withLock { streams in
                streams.open[key] = stream
                return streams.stopping
            }
            stream.serverRelease = { [weak self] in _ = self?.streams.withLock { $0.open.removeValue(forKey: key) } }
            if stopping { stream.finish() }
            // The response holds a retain on the stream, released in `streamReleased` when MHD destroys it.
            mhdResponse = MHD_create_response_from_callback(
                UInt64.max, 4096, streamReader, Unmanaged.passRetained(stream).toOpaque(), streamReleased)
            if method == "HEAD", let mhdResponse { bindery_mhd_response_ends_with_connection(mhdResponse) }
        case .file(let descriptor, let size):
            // The response owns the descriptor from here and closes it when destroyed (`fileReleased`).
            mhdResponse = MHD_create_response_from_callback(
                UInt64(size), 64 << 10, fileReader, UnsafeMutableRawPointer(bitPattern: Int(descriptor) + 1),
                fileReleased)
            if mhdResponse == nil { close(descriptor) }
        }
        guard let mhdResponse else { return .NO }
        func add(_ name: String, _ value: String) {
            // Explicit `withCString`: a small string (most names and values) is then copied to the stack, where
            // passing the String itself would allocate a C copy on the heap.
            _ = name.withCString { name in
                value.withCString { value in MHD_add_response_header(mhdResponse, name, value) }
            }
        }
        for (name, value) in response.headers { add(name, value) }
        if draining.load(ordering: .acquiring), !response.headers.contains(where: { $0.0 == "Connection" }) {
            add("Connection", "close")
        }
        // A closure literal in the call stays on the stack, and `withCString` keeps a small name from being copied
        // to the heap for C.
        responder.addCommonHeaders(
            to: response,
            requestHeader: { name in
                name.withCString { MHD_lookup_connection_value(connection, .HEADER_KIND, $0) }.map {
                    String(cString: $0)
                }
            }, add)
        let result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        MHD_destroy_response(mhdResponse)
        return result
    }

    private struct ResolvedAddress {
        var bytes: [UInt8]
        var family: Int32
    }

    private static func resolve(host: String, port: UInt16) throws -> ResolvedAddress {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let first = result, let address = first.pointee.ai_addr else {
            throw HTTPServerError(message: "cannot resolve host \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(result) }
        let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(first.pointee.ai_addrlen)))
        return ResolvedAddress(bytes: bytes, family: first.pointee.ai_family)
    }

    /// Raises the soft limit on open files to the hard one: every connection is a descriptor and the server may hold
    /// 20,000 (waiting long-polls), while a soft limit of a few thousand would make new clients wait unanswered in the
    /// listen backlog.
    private static func raiseFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

// MARK: - C callbacks (they capture nothing; the server comes back from the context pointer)

private let accessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, version, uploadData, uploadDataSize, contextSlot in
    guard let cls, let connection, let contextSlot else { return .NO }
    // The daemon cannot outlive the server (see `start`): borrow it without retaining.
    return Unmanaged<HTTPServer>.fromOpaque(cls)._withUnsafeGuaranteedRef { server in
        guard contextSlot.pointee != nil else {
            // First call: only the header is in.
            contextSlot.pointee = HTTPServer.headerSeen
            guard let refusal = server.refusalUpFront(connection, method: method, url: url, version: version) else {
                return .YES
            }
            HTTPServer.context(in: contextSlot).refusal = refusal
            let name = method.map(methodName) ?? "GET"
            let response = server.handle(
                connection: connection, rawURL: originForm(url), method: name, contextSlot: contextSlot)
            return response.map { server.queue($0, on: connection, method: name) } ?? .YES
        }
        if let uploadDataSize, uploadDataSize.pointee != 0 {
            if let uploadData,
                !server.append(
                    body: uploadData, count: uploadDataSize.pointee, to: HTTPServer.context(in: contextSlot),
                    declaredLength: {
                        MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length")
                            .flatMap { Int(String(cString: $0)) }
                    })
            {
                return .NO
            }
            uploadDataSize.pointee = 0
            return .YES
        }
        // The whole request is in; not handled on a connection being shut down (its answer could not go out).
        let clock = clock(of: connection)
        if let clock, !clock.requestReceived() { return .NO }
        let name = method.map(methodName) ?? "GET"
        return server.workerLoad.handling(on: clock?.socket ?? -1) {
            let response = server.handle(
                connection: connection, rawURL: originForm(url), method: name, contextSlot: contextSlot)
            guard let response else { return .YES }  // suspended: answered after `resume`
            return server.queue(response, on: connection, method: name)
        }
    }
}

/// The path of a request target: the origin form (`/path`) as it is, the absolute form (`http://host/path`, which a
/// server must accept, RFC 9112 §3.2.2) without its scheme and authority. libmicrohttpd has split off the query.
///
/// Raw bytes that are not UTF-8 are percent-encoded rather than repaired into U+FFFD, so that the path does not
/// decode (`HTTPRequest.pathSegments` is nil: 400 `bad-path`), as for their percent-encoded form.
private func originForm(_ url: UnsafePointer<CChar>?) -> String {
    guard let url else { return "/" }
    let target =
        String(validatingCString: url)
        ?? UnsafeBufferPointer(start: url, count: strlen(url)).reduce(into: "") { text, byte in
            let value = UInt8(bitPattern: byte)
            if value < 0x80 {
                text.unicodeScalars.append(Unicode.Scalar(value))
            } else {
                text += percentEncoded(value)
            }
        }
    guard target.first != "/", let scheme = target.firstRange(of: "://"),
        ["http", "https"].contains(target[..<scheme.lowerBound].lowercased())
    else { return target }
    let afterAuthority = target[scheme.upperBound...].drop { $0 != "/" }
    return afterAuthority.isEmpty ? "/" : String(afterAuthority)
}

/// The request method as a string: the common ones as literals, which need no validation or storage.
private func methodName(_ method: UnsafePointer<CChar>) -> String {
    func `is`(_ literal: StaticString) -> Bool {
        strcmp(method, UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)) == 0
    }
    if `is`("GET") { return "GET" }
    if `is`("PUT") { return "PUT" }
    if `is`("POST") { return "POST" }
    if `is`("DELETE") { return "DELETE" }
    if `is`("HEAD") { return "HEAD" }
    if `is`("OPTIONS") { return "OPTIONS" }
    return String(cString: method)
}

/// A large answer's bytes while libmicrohttpd holds them, counted in the server's `unsentBytes` until released.
private final class UnsentBody {
    let storage: UnsafeMutableRawBufferPointer
    let server: HTTPServer

    init(copying bytes: [UInt8], countedIn server: HTTPServer) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        bytes.withUnsafeBytes { storage.copyMemory(from: $0) }
        self.storage = storage
        self.server = server
        server.countUnsent(bytes.count)
    }

    deinit {
        server.countUnsent(-storage.count)
        storage.deallocate()
    }
}

private let unsentBodyReleased: MHD_ContentReaderFreeCallback = { cls in
    if let cls { Unmanaged<UnsentBody>.fromOpaque(cls).release() }
}

/// Reads a static file's bytes at `position` (the descriptor + 1 is the context). A file cut short since its size was
/// taken ends the answer with an error, which closes the connection: with `MHD_create_response_from_fd64`, whose
/// `sendfile` finds the end early, the client waited for the missing bytes until the idle timeout.
private let fileReader: MHD_ContentReaderCallback = { cls, position, buffer, max in
    guard let buffer, position <= UInt64(Int64.max) else { return -2 }
    let descriptor = Int32(Int(bitPattern: cls) - 1)
    var count: Int
    repeat {
        count = pread(descriptor, buffer, max, off_t(position))
    } while count < 0 && errno == EINTR
    return count > 0 ? count : -2  // MHD_CONTENT_READER_END_WITH_ERROR
}

private let fileReleased: MHD_ContentReaderFreeCallback = { cls in
    close(Int32(Int(bitPattern: cls) - 1))
}

private let streamReader: MHD_ContentReaderCallback = { cls, _, buffer, max in
    guard let cls, let buffer else { return -2 }
    return Unmanaged<HTTPStream>.fromOpaque(cls).takeUnretainedValue().read(into: buffer, max: max)
}

private let streamReleased: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    let stream = Unmanaged<HTTPStream>.fromOpaque(cls).takeRetainedValue()
    stream.released()
}

/// The control characters but NUL (which ends a C string): none is part of a request target.
private let targetControlCharacters = String((1..<0x20).map { Character(Unicode.Scalar(UInt8($0))) }) + "\u{7F}"

/// Notes the length of each request's target up to its first control character (see `refusalUpFront`) and its query
/// as sent (`HTTPRequest.rawQuery`), before libmicrohttpd splits off the query and decodes it in place.
private let targetSeen: bindery_mhd_uri_log_callback = { _, uri, connection in
    guard let uri, let connection, let clock = clock(of: connection) else { return nil }
    clock.targetLength.store(strcspn(uri, targetControlCharacters), ordering: .relaxed)
    // Only a request with a query notes one (and `handle` reads it only then): the others pay nothing for it.
    if let mark = strchr(uri, Int32(UInt8(ascii: "?"))) {
        clock.rawQuery.withLock { $0 = HTTPRequest.rawQuery(from: mark + 1) }
    }
    return nil
}

/// The connection's request clock (its socket context), kept from `MHD_CONNECTION_NOTIFY_STARTED` to `CLOSED`.
private func clock(of connection: OpaquePointer) -> HeaderDeadlines.Clock? {
    bindery_mhd_socket_context(connection).map { Unmanaged<HeaderDeadlines.Clock>.fromOpaque($0).takeUnretainedValue() }
}

/// Gives each connection a request clock when it starts (retained in its socket context) and drops it when it closes.
private let connectionNotified: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
    guard let cls, let connection, let socketContext else { return }
    let deadlines = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().headerDeadlines
    // The codes by value: MHD_CONNECTION_NOTIFY_STARTED is 0, MHD_CONNECTION_NOTIFY_CLOSED 1.
    switch code.rawValue {
    case 0:
        let clock = deadlines.started(socket: bindery_mhd_connection_fd(connection))
        socketContext.pointee = Unmanaged.passRetained(clock).toOpaque()
        HTTPServer.processConnections.add(1, ordering: .relaxed)
    case 1:
        guard let stored = socketContext.pointee else { return }
        socketContext.pointee = nil
        HTTPServer.processConnections.subtract(1, ordering: .relaxed)
        deadlines.closed(Unmanaged<HeaderDeadlines.Clock>.fromOpaque(stored).takeRetainedValue())
    default:
        break
    }
}

private let requestCompleted: MHD_RequestCompletedCallback = { cls, connection, contextSlot, _ in
    if let connection { clock(of: connection)?.requestEnded() }
    guard let cls, let contextSlot, let stored = contextSlot.pointee else { return }
    contextSlot.pointee = nil
    guard stored != HTTPServer.headerSeen else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    server.completed(Unmanaged<HTTPServer.RequestContext>.fromOpaque(stored).takeRetainedValue())
}
