/// How an `HTTPServer` listens and what it tolerates.
public struct HTTPServerConfiguration: Sendable {
    /// A numeric address or host name to bind; `0.0.0.0` or `::` for every interface.
    public var host: String
    /// The port; 0 picks a free one (see `HTTPServer.port`).
    public var port: UInt16
    /// Worker threads, each with its own epoll loop.
    public var threads: Int
    /// The largest request body accepted; a larger one is drained and answered 413.
    public var maxBodySize: Int
    /// Connections held at once, suspended ones included, over all worker threads (the acceptor enforces it).
    public var connectionLimit: Int
    /// Seconds after which an idle (not suspended) connection is closed.
    public var idleTimeout: Int
    /// Seconds a connection has to send a whole request (head and body) once it starts waiting for one, however
    /// steadily the bytes come (against slowloris); nil: `idleTimeout`.
    public var requestTimeout: Int?
    /// Bytes of large answers (`HTTPServer.countedBodySize` and over) and of streams held for clients that have not
    /// read them yet; while more is held, a GET or HEAD whose answer is large gets `HTTPResponder.respondToUnsentLimit`
    /// instead (unless nothing else is held: one answer larger than the limit still goes), and a stream's writer is
    /// told its client is too slow (`HTTPStream.wouldPassServerUnsentLimit(adding:)`).
    public var maxUnsentBytes: Int
    /// Bytes of request bodies being received, together, beyond each body's first `HTTPServer.uncountedBodySize`;
    /// a body that would take them past it is read and dropped, then answered by
    /// `HTTPResponder.respondToReceivingLimit` (unless nothing else is held: one body larger than the limit still
    /// goes). Against clients that stall their uploads just short of the end, each holding up to `maxBodySize`.
    public var maxReceivingBytes = 256 << 20
    /// Bytes of libmicrohttpd's per-connection memory pool (request line, headers, response headers).
    public var connectionMemoryLimit: Int
    public var listenBacklog: Int

    /// The largest request head (request line and header fields) handled: the pool less 4 KiB, which the response's
    /// header fields need. A larger head is answered 431 before anything is done (libmicrohttpd would otherwise let
    /// it be handled and then fail to send the answer).
    public var maximumRequestHeadSize: Int { max(1024, connectionMemoryLimit - 4096) }

    public init(
        host: String = "127.0.0.1", port: UInt16 = 8080, threads: Int = HTTPServerConfiguration.processorCount,
        maxBodySize: Int = 1 << 20, connectionLimit: Int = 20_000, idleTimeout: Int = 60,
        connectionMemoryLimit: Int = 16 * 1024, listenBacklog: Int = 4096, maxUnsentBytes: Int = 1 << 30
    ) {
        self.host = host
        self.port = port
        self.threads = threads
        self.maxBodySize = maxBodySize
        self.connectionLimit = connectionLimit
        self.idleTimeout = idleTimeout
        self.connectionMemoryLimit = connectionMemoryLimit
        self.listenBacklog = listenBacklog
        self.maxUnsentBytes = maxUnsentBytes
    }

    /// The number of online processors.
    public static var processorCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
