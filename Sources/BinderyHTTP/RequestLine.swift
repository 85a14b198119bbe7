import Dispatch
import HTTPServer
import Synchronization

/// A serial queue that requests wait their turn on, off the request threads (`answeredInTurn`,
/// `answeredOffRequestThreads`), that stops taking more once its wait is long.
///
/// A line that took every request would keep each client waiting as long as the work of all before it: 2,000 clients
/// each sorting 250,000 objects would wait up to an hour, with no answer in their time. So, while requests wait and
/// the one whose turn came last had waited more than `patience`, a new request is answered `503 server-busy` with
/// `Retry-After` at once, without its work, as are requests when any other capacity is exhausted; the line takes
/// requests again once that wait falls back under `patience` or nobody waits.
public final class RequestLine: Sendable {
    private let queue: DispatchQueue
    /// Seconds a request may have waited for its turn before the line takes no more (while it is still long).
    let patience: Double
    private let waiting = Atomic<Int>(0)
    /// Nanoseconds the request whose turn came last had waited (0 when nobody waited behind it).
    private let lastWait = Atomic<UInt64>(0)

    init(label: String, patience: Double) {
        self.queue = DispatchQueue(label: label)
        self.patience = patience
    }

    /// Requests waiting for their turn.
    public var waitingCount: Int { waiting.load(ordering: .relaxed) }

    /// Nil when a request arriving now may join the line; else its answer (`503 server-busy`).
    func refusal() -> HTTPResponse? {
        guard waiting.load(ordering: .relaxed) > 0 else { return nil }
        let waited = Double(lastWait.load(ordering: .relaxed)) / 1e9
        guard waited > patience else { return nil }
        return .error(
            .serverBusy(
                "Requests of this kind wait for their turn one at a time, and the last one waited "
                    + "\(Int(waited)) s (more than \(Int(patience)) s); this one was not carried out, retry shortly."))
    }

    /// Runs `turn` when the request's turn comes; `arrived`: when the request came (`DispatchTime.now()`).
    func enqueue(arrived: DispatchTime, _ turn: @escaping @Sendable () -> Void) {
        waiting.add(1, ordering: .relaxed)
        queue.async {
            let left = self.waiting.subtract(1, ordering: .relaxed).newValue
            let now = DispatchTime.now().uptimeNanoseconds
            // The last of a burst: the line is empty, and the next burst is judged by its own waits.
            self.lastWait.store(left == 0 ? 0 : now - min(now, arrived.uptimeNanoseconds), ordering: .relaxed)
            turn()
        }
    }

    /// Runs `work` on the line's queue, as no request (tests hold the line with it).
    public func async(execute work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Runs `work` on the line's queue, once all before it have run, and waits for it.
    public func sync(execute work: () -> Void) {
        queue.sync(execute: work)
    }
}
