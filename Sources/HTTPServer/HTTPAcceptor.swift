private import CMicroHTTPD
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The server's listening socket and the thread that accepts on it, handing each connection to libmicrohttpd with
/// `MHD_add_connection`.
///
/// libmicrohttpd's own accept lets whichever worker thread wakes first take a burst of up to ten connections, so a
/// client that opens its connections at once (a load balancer's pool, wrk) can end up with all of them on one worker
/// while the others idle. `MHD_add_connection` places each connection on a worker chosen by its descriptor, which
/// spreads them evenly, and lets a connection be kept off a worker stuck in a long handler (`WorkerLoad`).
final class HTTPAcceptor: Sendable {
    /// The listening socket.
    let socket: Int32
    let port: UInt16
    private let stopping = Atomic(false)
    /// The accepting thread while it runs (`pthread_t` is an integer on Linux).
    private let thread = Mutex<pthread_t?>(nil)

    /// Binds and listens on `address` (a `sockaddr` of `family`). Throws the system's reason.
    init(address: [UInt8], family: Int32, backlog: Int32) throws(HTTPServerError) {
        let fd = Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Self.systemError() }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            // As libmicrohttpd does for an IPv6 daemon that is not dual-stack.
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = address.withUnsafeBytes { raw in
            bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let failure = Self.systemError()
            close(fd)
            throw failure
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            let failure = Self.systemError()
            close(fd)
            throw failure
        }
        socket = fd
        port = withUnsafeBytes(of: &storage) { raw in
            // sin_port and sin6_port sit at the same offset, in network order.
            UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
        }
    }

    deinit {
        close(socket)
    }

    /// Starts the accepting thread, which hands connections to `daemon` until `stop()`; beyond `limit` connections
    /// held, a new one is closed at once, and `whenFull` is called (to make room for the next ones). `closing` tells
    /// how many of the daemon's connections are shut down and about to close: room already made, not counted as held.
    func start(
        daemon: OpaquePointer, limit: Int, load: WorkerLoad, closing: @escaping @Sendable () -> Int = { 0 },
        whenFull: @escaping @Sendable () -> Void
    ) throws(HTTPServerError) {
        let context = Unmanaged.passRetained(
            AcceptLoop(acceptor: self, daemon: daemon, limit: limit, load: load, closing: closing, whenFull: whenFull)
        ).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { context in
                let loop = Unmanaged<AcceptLoop>.fromOpaque(context!).takeRetainedValue()
                loop.acceptor.run(
                    daemon: loop.daemon, limit: loop.limit, load: loop.load, closing: loop.closing,
                    whenFull: loop.whenFull)
                return nil
            }, context)
        guard created == 0 else {
            Unmanaged<AcceptLoop>.fromOpaque(context).release()
            throw HTTPServerError(message: "cannot start the accepting thread: \(String(cString: strerror(created)))")
        }
        self.thread.withLock { $0 = thread }
    }

    /// Stops accepting and returns once the thread has stopped handing connections to the daemon.
    func stop() {
        stopping.store(true, ordering: .releasing)
        // Wakes the blocked accept (it fails with EINVAL) without closing the descriptor under it.
        shutdown(socket, Int32(SHUT_RDWR))
        if let thread = thread.withLock({ $0.take() }) { pthread_join(thread, nil) }
    }

    private func run(
        daemon: OpaquePointer, limit: Int, load: WorkerLoad, closing: () -> Int, whenFull: () -> Void
    ) {
        var storage = sockaddr_storage()
        // `accept` gives the lowest free descriptor: one this high means the table is nearly full. The ones left are
        // kept for the store's files (journal segments, snapshots, saved defaults) and the static files, which
        // clients holding every descriptor would make fail.
        var files = rlimit()
        let available = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &files) == 0 ? Int(clamping: files.rlim_cur) : 1 << 20
        let descriptorCeiling = Int32(clamping: available - min(Self.reservedDescriptors, available / 4))
        while !stopping.load(ordering: .acquiring) {
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            // (`accept4` is not in Swift's Glibc module.)
            let accepted = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(socket, $0, &length) }
            }
            guard accepted >= 0 else {
                switch errno {
                case EINTR, ECONNABORTED, EAGAIN, EPROTO: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: usleep(10_000)  // out of descriptors: let some close
                default: if !stopping.load(ordering: .acquiring) { usleep(10_000) }
                }
                continue
            }
            // `accept` takes its descriptor when it is called, and waits: connections shed or closed meanwhile may
            // have freed lower ones, and the lowest is taken instead of refusing the client.
            var descriptor = accepted
            if descriptor >= descriptorCeiling {
                let lower = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
                if lower >= 0 {
                    close(descriptor)
                    descriptor = lower
                }
            }
            // The limit is enforced here, not by libmicrohttpd: a 0.9.75 worker that reached its own share of the
            // limit could deadlock on one of its mutexes at shutdown (MHD_stop_daemon never returned). Only this
            // thread adds connections, so the count cannot rise between the check and the add.
            // Connections already shut down (shed) still count in the daemon until their workers close them: the
            // room they made is counted as made, or a client refused meanwhile would shed as many again.
            let held = Int(bindery_mhd_connection_count(daemon)) - closing()
            if held >= limit || descriptor >= descriptorCeiling {
                close(descriptor)
                whenFull()
                continue
            }
            let client = load.steer(descriptor, below: descriptorCeiling)
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            _ = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    MHD_add_connection(daemon, client, $0, length)
                }
            }
        }
    }

    /// Descriptors never given to connections (at most a quarter of the process's limit).
    static let reservedDescriptors = 64

    private static func systemError() -> HTTPServerError {
        HTTPServerError(message: String(cString: strerror(errno)))
    }
}

/// What the accepting thread runs with.
private final class AcceptLoop {
    let acceptor: HTTPAcceptor
    let daemon: OpaquePointer
    let limit: Int
    let load: WorkerLoad
    let closing: @Sendable () -> Int
    let whenFull: @Sendable () -> Void

    init(
        acceptor: HTTPAcceptor, daemon: OpaquePointer, limit: Int, load: WorkerLoad,
        closing: @escaping @Sendable () -> Int, whenFull: @escaping @Sendable () -> Void
    ) {
        self.acceptor = acceptor
        self.daemon = daemon
        self.limit = limit
        self.load = load
        self.closing = closing
        self.whenFull = whenFull
    }
}
