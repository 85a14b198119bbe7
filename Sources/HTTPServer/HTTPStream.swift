private import CMicroHTTPD
import Synchronization

/// A response body written over time (server-sent events): chunked, until `finish()` or the client goes away.
///
/// While nothing is buffered the connection is suspended from the content reader (libmicrohttpd allows
/// `MHD_suspend_connection` there), so an idle stream costs no thread and no polling; `write` resumes it.
/// `@unchecked Sendable`: the connection pointer is used only under the state mutex, and only between the response
/// being queued and the stream being released by libmicrohttpd.
public final class HTTPStream: @unchecked Sendable {
    private struct State {
        /// What was written and not yet sent, as written: parts are shared with the writer, not copied (one
        /// rendered change goes to many streams).
        var parts: [[UInt8]] = []
        /// The first part not wholly sent, and how much of it was.
        var head = 0
        var offset = 0
        /// The bytes of `parts` not yet sent.
        var unsent = 0
        var finished = false
        var released = false
        var parked = false
        var connection: Connection?
        /// The server sending it, which counts its unsent bytes (`HTTPServer.unsentByteCount`).
        weak var server: HTTPServer?
        /// Called once everything written so far has been handed to libmicrohttpd (`write(_:whenSent:)`).
        var whenSent: (@Sendable () -> Void)?
    }

    /// `@unchecked Sendable`: used only under the state mutex (see the type's comment).
    private struct Connection: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private let state = Mutex(State())
    private let closeHandler = Mutex<(@Sendable () -> Void)?>(nil)
    /// Set by the server that sends the stream, to stop tracking it.
    nonisolated(unsafe) var serverRelease: (@Sendable () -> Void)?

    public init() {}

    /// Called once when the stream ends (finished and sent, or the client went away).
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        closeHandler.withLock { $0 = handler }
    }

    /// The bytes written and not yet sent (the client reads slower than the stream is written when this grows).
    public var bufferedCount: Int {
        state.withLock { $0.unsent }
    }

    /// Whether the client has closed or reset the connection while the stream is parked waiting for bytes
    /// (libmicrohttpd does not watch a suspended socket): a non-blocking peek at it. False while bytes are being
    /// sent (libmicrohttpd then sees a closed connection itself). Cheap enough for periodic sweeps.
    public var peerHasClosed: Bool {
        // Under the lock, so that no resume (after which libmicrohttpd may close the socket) runs meanwhile.
        state.withLock { state in
            guard state.parked, let connection = state.connection else { return false }
            return bindery_mhd_peer_closed(connection.pointer) != 0
        }
    }

    /// Appends bytes; returns false once the stream has ended. `whenSent` is called once, on a libmicrohttpd
    /// thread, when every byte written so far has been sent (it must not block): a writer with more to say writes
    /// the next part then, so that a slow client holds one part in memory, not all of them.
    @discardableResult
    public func write(_ bytes: [UInt8], whenSent: (@Sendable () -> Void)? = nil) -> Bool {
        write(parts: [bytes], whenSent: whenSent)
    }

    /// `write(_:whenSent:)` of the parts one after the other, each kept as it is (not copied).
    @discardableResult
    public func write(parts: [[UInt8]], whenSent: (@Sendable () -> Void)? = nil) -> Bool {
        state.withLock { state in
            guard !state.finished, !state.released else { return false }
            let count = parts.reduce(0) { $0 + $1.count }
            state.parts += parts.filter { !$0.isEmpty }
            state.unsent += count
            state.server?.countUnsent(count)
            if let whenSent { state.whenSent = whenSent }
            wake(&state)
            return true
        }
    }

    /// Ends the stream once what is buffered has been sent.
    public func finish() {
        state.withLock { state in
            state.finished = true
            wake(&state)
        }
    }

    private func wake(_ state: inout State) {
        if state.parked, let connection = state.connection {
            state.parked = false
            MHD_resume_connection(connection.pointer)
        }
    }

    // MARK: Server side

    func attach(to connection: OpaquePointer, countingIn server: HTTPServer) {
        let connection = Connection(pointer: connection)
        state.withLock { state in
            state.connection = connection
            state.server = server
            server.countUnsent(state.unsent)
        }
    }

    /// Whether `count` more bytes would take what the server sending the stream holds for clients (its large answers
    /// and streams, `HTTPServerConfiguration.maxUnsentBytes`) past its limit while it holds anything: the writer
    /// should end the stream rather than write them (a large answer to a GET is refused the same way; one larger
    /// than the limit still goes when nothing else is held). False before the server sends the stream.
    public func wouldPassServerUnsentLimit(adding count: Int) -> Bool {
        state.withLock { state in
            guard let server = state.server else { return false }
            let held = server.unsentByteCount
            return held > 0 && held + count > server.configuration.maxUnsentBytes
        }
    }

    /// The content reader: copies buffered bytes, ends the stream, or parks the connection until `write`; then runs
    /// `whenSent` once everything written is out.
    func read(into destination: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        let (count, sent) = state.withLock { state -> (Int, (@Sendable () -> Void)?) in
            let count = copy(into: destination, max: max, &state)
            guard state.unsent == 0, let sent = state.whenSent else { return (count, nil) }
            state.whenSent = nil
            return (count, sent)
        }
        sent?()
        return count
    }

    /// Under the lock: copies buffered bytes, ends the stream, or parks the connection until `write`.
    private func copy(into destination: UnsafeMutablePointer<CChar>, max: Int, _ state: inout State) -> Int {
        if state.unsent > 0 {
            var count = 0
            while count < max, state.head < state.parts.count {
                let part = state.parts[state.head]
                let taken = min(max - count, part.count - state.offset)
                part.withUnsafeBufferPointer { source in
                    (UnsafeMutableRawPointer(destination) + count).copyMemory(
                        from: source.baseAddress! + state.offset, byteCount: taken)
                }
                count += taken
                state.offset += taken
                if state.offset == part.count {
                    state.head += 1
                    state.offset = 0
                }
            }
            state.unsent -= count
            state.server?.countUnsent(-count)
            if state.head == state.parts.count {
                state.parts.removeAll(keepingCapacity: state.parts.capacity <= 64)
                state.head = 0
            } else if state.head >= 64 {
                state.parts.removeFirst(state.head)
                state.head = 0
            }
            return count
        }
        if state.finished { return -1 }  // MHD_CONTENT_READER_END_OF_STREAM
        if let connection = state.connection {
            state.parked = true
            MHD_suspend_connection(connection.pointer)
        }
        return 0
    }

    /// libmicrohttpd is done with the response: the connection may be gone.
    func released() {
        state.withLock { state in
            state.released = true
            state.connection = nil
            state.server?.countUnsent(-state.unsent)
            state.server = nil
            state.parts = []
            state.head = 0
            state.offset = 0
            state.unsent = 0
        }
        let handler = closeHandler.withLock { handler in
            defer { handler = nil }
            return handler
        }
        handler?()
        serverRelease?()
    }
}
