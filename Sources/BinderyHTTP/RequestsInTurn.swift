import Dispatch
import HTTPServer
import Synchronization

extension BinderyService {
    /// Carries out `respond` on `line` (serial), off the request threads, and answers what it answers (a suspension
    /// it answers, such as a wait for the journal, continues on the same connection).
    ///
    /// For requests that take the controllers' lock (`/controllers`, `/actions`) once a controller is large: one
    /// re-arranging 250,000 objects holds it for a second or more, and on a libmicrohttpd worker every other such
    /// request would wait for it there, holding the worker and every connection it serves (`/healthz`, writes) as
    /// long. In turn on one queue they wait without a thread, in the order they came, as they would have for the lock.
    ///
    /// If the server stops first, a request not yet begun is not carried out (`503 shutting-down`); one being
    /// carried out is finished and answered with what it answers. One whose client has closed its connection by its
    /// turn is not carried out either (`499 client-gone`), and one that comes while the line is long is refused
    /// (`RequestLine.refusal`). `whileWaiting.begins` runs when a request joins the line, `ends` on the line once its
    /// turn is over, whatever became of it.
    static func answeredInTurn(
        on line: RequestLine, whileWaiting: (begins: @Sendable () -> Void, ends: @Sendable () -> Void)? = nil,
        _ respond: @escaping @Sendable () -> HTTPHandlerResult
    ) -> HTTPHandlerResult {
        if let refusal = line.refusal() { return .response(refusal) }
        whileWaiting?.begins()
        let turn = RequestTurn()
        let arrived = DispatchTime.now()
        return .suspend(
            HTTPSuspension(shutdownResponse: { turn.shutdownResponse() }) { connection in
                line.enqueue(arrived: arrived) {
                    // A client gone by its turn is not worked for, as by `answeredOffRequestThreads`.
                    switch turn.run({ connection.peerHasClosed ? .response(clientGone) : respond() }) {
                    case nil: break  // the server stopped first and answered
                    case .response(let response)?: connection.resume(with: response)
                    case .suspend(let suspension)?: suspension.register(connection)
                    }
                    whileWaiting?.ends()
                }
            })
    }
}

/// One request waiting for its turn on a queue: what the server answers if it stops meanwhile.
private final class RequestTurn: Sendable {
    private enum State {
        case waiting
        case running
        case done(HTTPHandlerResult)
        case dropped
    }

    private let state = Mutex(State.waiting)
    /// Signalled once the request has been carried out (waited for by a stop that comes meanwhile).
    private let finished = DispatchSemaphore(value: 0)

    /// Carries out `respond` unless the server has stopped first (nil then).
    func run(_ respond: () -> HTTPHandlerResult) -> HTTPHandlerResult? {
        let begins = state.withLock { state in
            guard case .waiting = state else { return false }
            state = .running
            return true
        }
        guard begins else { return nil }
        let result = respond()
        state.withLock { $0 = .done(result) }
        finished.signal()
        return result
    }

    /// The answer if the server stops now: a request still waiting is never carried out; one being carried out is
    /// waited for, so that its answer tells what it did.
    func shutdownResponse() -> HTTPResponse {
        let current = state.withLock { state in
            if case .waiting = state { state = .dropped }
            return state
        }
        switch current {
        case .waiting, .dropped: return BinderyService.shuttingDown
        case .running:
            finished.wait()
            finished.signal()
            return shutdownResponse()
        case .done(.response(let response)): return response
        case .done(.suspend(let suspension)): return suspension.shutdownResponse()
        }
    }
}
