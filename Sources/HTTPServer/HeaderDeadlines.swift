// SHUT_RDWR comes from sys/socket.h through the shim: built with --static-swift-stdlib, Glibc's module does not
// export it.
private import CMicroHTTPD
import Dispatch
import Glibc
import Synchronization

/// A deadline for receiving each connection's next request: a connection that has not sent a whole request (header
/// and body) within `timeout` of starting to wait for one (when it was accepted, or when its last answer went out)
/// is shut down.
///
/// libmicrohttpd restarts a connection's idle timeout at every byte, so without this a client that trickles a request
/// a byte at a time holds its connection for ever, and enough of them take every connection (slowloris). Requests
/// being handled, answered or suspended (long-polls) are not waiting for a request and have no deadline.
///
/// Within the deadline, such clients could still hold every connection: past nine tenths of `connectionLimit`, and
/// when the limit is reached (or the descriptors left for connections: `full`), the connections that have waited
/// longest for a request (at least a second: a client trickling its head, or an idle kept-alive one) are shut down
/// until eight tenths are left (`shed`), so that new clients find room. Long-polls, streams and requests being handled are never shed.
///
/// `@unchecked Sendable`: besides its locked and atomic state it holds a dispatch timer, which is set up in `init`
/// and only cancelled, in `deinit`; dispatch sources are safe to use from any thread.
final class HeaderDeadlines: @unchecked Sendable {
    /// One connection's clock.
    final class Clock: Sendable {
        let socket: Int32
        /// Monotonic nanoseconds at which the connection began waiting for a request; 0 while one is handled.
        let waitingSince: Atomic<UInt64>
        /// The length, as a C string, of the current request's target before libmicrohttpd split it (-1: none
        /// seen): shorter than the target when the target holds a NUL byte (`HTTPServer.refusalUpFront`).
        let targetLength = Atomic<Int>(-1)
        /// The query as sent (after `?`) of the last request that had one, before libmicrohttpd decoded it in place.
        let rawQuery = Mutex<String?>(nil)
        /// The `waitingSince` during which the client was last seen gone (0: not seen), by `shutDownLateConnections`
        /// only.
        let seenGoneWhileWaitingSince = Atomic<UInt64>(0)
        /// Shut down by this class (libmicrohttpd closes it soon): no longer counted as held.
        let isShutDown = Atomic<Bool>(false)

        init(socket: Int32, now: UInt64) {
            self.socket = socket
            waitingSince = Atomic(now)
        }

        /// A whole request is in: false when the connection is being shut down (shed or late) and the request must
        /// not be handled, since its answer could not be sent (a write made would be told to nobody).
        func requestReceived() -> Bool {
            waitingSince.exchange(0, ordering: .acquiringAndReleasing) != HeaderDeadlines.shutDownMark
        }

        /// The answer went out: the next request is waited for from now.
        func requestEnded() {
            waitingSince.store(HeaderDeadlines.now(), ordering: .relaxed)
        }
    }

    private let timeout: UInt64
    private let connectionLimit: Int
    /// `waitingSince` of a connection being shut down: a request that comes in meanwhile is not handled.
    static let shutDownMark = UInt64.max
    private let clocks = Mutex<[ObjectIdentifier: Clock]>([:])
    private let timer: any DispatchSourceTimer
    /// When `full` last shed (monotonic nanoseconds): at most every 0.1 s.
    private let lastShed = Atomic<UInt64>(0)
    /// Connections shut down here that libmicrohttpd has not closed yet: room already made, which the acceptor
    /// counts as free and `full` does not make again.
    private let closing = Atomic<Int>(0)

    /// Connections shut down (shed or late) whose close is still to come.
    var closingCount: Int { closing.load(ordering: .relaxed) }

    /// Looks for late connections, and for clients gone while a request was awaited, every `timeout / 2` seconds
    /// (at most every second) while it lives, and sheds waiting connections near `connectionLimit`.
    init(timeout seconds: Int, connectionLimit: Int) {
        timeout = UInt64(max(1, seconds)) * 1_000_000_000
        self.connectionLimit = connectionLimit
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "bindery.header-deadlines"))
        let interval = min(1.0, Double(max(1, seconds)) / 2)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
        timer.setEventHandler { [weak self] in
            self?.shutDownLateConnections()
            self?.shed(above: connectionLimit * 9 / 10)
        }
        timer.resume()
    }

    deinit {
        timer.cancel()
    }

    /// A connection was accepted: its clock, to keep until `closed`.
    func started(socket: Int32) -> Clock {
        let clock = Clock(socket: socket, now: Self.now())
        clocks.withLock { $0[ObjectIdentifier(clock)] = clock }
        return clock
    }

    /// The connection is closing; libmicrohttpd closes its socket after this.
    func closed(_ clock: Clock) {
        clocks.withLock { clocks in
            if clocks.removeValue(forKey: ObjectIdentifier(clock)) != nil, clock.isShutDown.load(ordering: .relaxed) {
                closing.subtract(1, ordering: .relaxed)
            }
        }
    }

    /// Shuts down (both ways) the sockets of connections past their deadline, and of those waiting for a request
    /// whose client has closed its side: libmicrohttpd then reads the end of the stream and closes them. Under the
    /// lock, so that no socket is closed (and its number reused) meanwhile.
    ///
    /// A client that sends the last bytes of an unfinished request and closes at once (both in one segment) leaves
    /// libmicrohttpd's edge-triggered epoll one event, on which it reads the bytes but not the end of the stream: the
    /// connection would be held, half-closed, until its deadline. `poll` tells such a peer (`POLLRDHUP`); it is let
    /// go when, at two looks in a row while the same request is awaited, it is gone with nothing left unread (bytes
    /// unread are libmicrohttpd's to read, perhaps a whole request whose answer the client still waits for).
    private func shutDownLateConnections() {
        let now = Self.now()
        clocks.withLock { clocks in
            var waiting: [(clock: Clock, since: UInt64)] = []
            for clock in clocks.values where !clock.isShutDown.load(ordering: .relaxed) {
                let since = clock.waitingSince.load(ordering: .relaxed)
                if since != 0, since != Self.shutDownMark { waiting.append((clock, since)) }
            }
            guard !waiting.isEmpty else { return }
            var descriptors = waiting.map { pollfd(fd: $0.clock.socket, events: Self.peerClosed, revents: 0) }
            if poll(&descriptors, nfds_t(descriptors.count), 0) < 0 { descriptors = [] }
            for (index, (clock, since)) in waiting.enumerated() {
                var letGo = now > since && now - since > timeout
                if !letGo, index < descriptors.count, descriptors[index].revents & Self.peerClosed != 0,
                    !Self.hasUnreadBytes(clock.socket)
                {
                    letGo = clock.seenGoneWhileWaitingSince.exchange(since, ordering: .relaxed) == since
                } else {
                    clock.seenGoneWhileWaitingSince.store(0, ordering: .relaxed)
                }
                if letGo { shutDown(clock, waitingSince: since) }
            }
        }
    }

    /// The limit was reached (a new connection was refused), or the descriptors left for connections, which a
    /// process whose limit on open files is low reaches first: sheds at once, at most every 0.1 s.
    func full() {
        let now = Self.now()
        let last = lastShed.load(ordering: .relaxed)
        guard now > last + 100_000_000,
            lastShed.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        shed(above: nil)
    }

    /// With more than `highWater` connections held, shuts down the ones that have waited longest for a request (at
    /// least a second) until eight tenths of the limit are left, or none that waited is. Nil: the process holds as
    /// many as it can now (`full`), which may be fewer than the limit: eight tenths of those held are left.
    private func shed(above highWater: Int?) {
        let now = Self.now()
        clocks.withLock { clocks in
            let held = clocks.values.count { !$0.isShutDown.load(ordering: .relaxed) }
            if let highWater, held <= highWater { return }
            // What the process holds now counts the connections shut down but not closed yet: their descriptors are
            // still taken, and a client refused before they close must not shed as many again.
            let capacity = highWater == nil ? min(clocks.count, connectionLimit) : connectionLimit
            var waiting: [(clock: Clock, since: UInt64)] = []
            for clock in clocks.values where !clock.isShutDown.load(ordering: .relaxed) {
                let since = clock.waitingSince.load(ordering: .relaxed)
                if since != 0, now > since, now - since >= 1_000_000_000 { waiting.append((clock, since)) }
            }
            waiting.sort { $0.since < $1.since }
            for (clock, since) in waiting.prefix(max(0, held - capacity * 8 / 10)) {
                shutDown(clock, waitingSince: since)
            }
        }
    }

    /// Shuts the connection's socket down both ways, if it still waits for the request it waited for `since`:
    /// libmicrohttpd then reads the end of the stream and closes it. A request that came in meanwhile is not
    /// handled (`requestReceived`); one that came in first keeps its connection. Under the `clocks` lock, so that no
    /// socket is closed (and its number reused) meanwhile.
    private func shutDown(_ clock: Clock, waitingSince since: UInt64) {
        guard
            clock.waitingSince.compareExchange(
                expected: since, desired: Self.shutDownMark, ordering: .acquiringAndReleasing
            ).exchanged
        else { return }
        clock.isShutDown.store(true, ordering: .relaxed)
        closing.add(1, ordering: .relaxed)
        shutdown(clock.socket, Int32(SHUT_RDWR))
    }

    private static func hasUnreadBytes(_ socket: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// `POLLRDHUP | POLLHUP`: the peer closed its side (or the whole connection). `POLLRDHUP` (Linux's 0x2000) is a
    /// GNU extension that Swift's Glibc module leaves out.
    private static let peerClosed = Int16(0x2000 | POLLHUP)

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
