private import CMicroHTTPD
import Synchronization

/// A connection parked by `MHD_suspend_connection`, waiting for someone to answer it.
///
/// `@unchecked Sendable`: the connection pointer is only handed to `MHD_resume_connection`, which libmicrohttpd
/// allows from any thread, and only once (the state mutex makes the first `resume` win). libmicrohttpd does not
/// close a suspended connection, so the pointer stays valid until that resume.
public final class HTTPSuspendedConnection: @unchecked Sendable {
    enum State {
        case suspended
        case resumed(HTTPResponse)
        case answered
    }

    private let connection: OpaquePointer
    let shutdownResponse: @Sendable () -> HTTPResponse
    private let state = Mutex(State.suspended)
    /// Told the answer by the first `resume` (`onResume`).
    private let resumeObservers = Mutex<[@Sendable (HTTPResponse) -> Void]>([])

    init(connection: OpaquePointer, shutdownResponse: @escaping @Sendable () -> HTTPResponse) {
        self.connection = connection
        self.shutdownResponse = shutdownResponse
    }

    /// Answers the connection with this response. Any thread may call it; only the first call counts.
    /// Returns whether this call was the first.
    @discardableResult
    public func resume(with response: HTTPResponse) -> Bool {
        let first = state.withLock { state in
            guard case .suspended = state else { return false }
            state = .resumed(response)
            return true
        }
        if first {
            for observer in resumeObservers.withLock({ $0 }) { observer(response) }
            MHD_resume_connection(connection)
        }
        return first
    }

    /// Calls `observer` with the answer when the connection is resumed, on the resuming thread (at once when it
    /// already was). For a wrapper of a suspension that must know its answer: add it before the suspension's own
    /// `register` runs, which may resume at once.
    public func onResume(_ observer: @escaping @Sendable (HTTPResponse) -> Void) {
        let answer: HTTPResponse? = state.withLock { state in
            switch state {
            case .suspended:
                resumeObservers.withLock { $0.append(observer) }
                return nil
            case .resumed(let response): return response
            case .answered: return nil
            }
        }
        if let answer { observer(answer) }
    }

    /// Whether the client has closed or reset the connection while it is suspended (libmicrohttpd does not watch a
    /// suspended socket): a non-blocking peek at it. False once resumed. Cheap enough for periodic sweeps.
    public var peerHasClosed: Bool {
        // Under the lock, so that no resume (after which libmicrohttpd may close the socket) runs meanwhile.
        state.withLock { state in
            guard case .suspended = state else { return false }
            return bindery_mhd_peer_closed(connection) != 0
        }
    }

    /// The response given to `resume`, taken once by the server's handler after the resume.
    func takeResponse() -> HTTPResponse? {
        state.withLock { state in
            guard case .resumed(let response) = state else { return nil }
            state = .answered
            return response
        }
    }
}
