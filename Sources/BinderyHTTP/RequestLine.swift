import Dispatch
import HTTPServer
import Synchronization

/// A serial queue that requests wait their turn on, off the request threads (`answeredInTurn`,
/// `answeredOffRequestThreads`), that stops taking more once its wait is long.
///
/// A line that took every request would keep each client waiting as long as the work of all before it: 2,000 clients
/// each sorting 250,000 objects would wait up to an hour, with no answer in their time. So, while the request first
/// in line has waited more than `patience`, a new request is answered `503 server-busy` with `Retry-After` at once,
/// without its work, as are requests when any other capacity is exhausted; the line takes requests again once the one
/// first in line has waited less (or nobody waits).
public final class RequestLine: Sendable {
    private let queue: DispatchQueue
    /// Seconds the request first in line may have waited before the line takes no more.
    let patience: Double
    private let waiting = Mutex(Waiting())

    /// When the requests waiting came (`DispatchTime` nanoseconds), in the order they were queued, from `first` on.
    private struct Waiting {
        var arrivals: [UInt64] = []
        var first = 0
    }

    init(label: String, patience: Double) {
        self.queue = DispatchQueue(label: label)
        self.patience = patience
    }

    /// Requests waiting for their turn.
    public var waitingCount: Int { waiting.withLock { $0.arrivals.count - $0.first } }

    /// Nil when a request arriving now may join the line; else its answer (`503 server-busy`).
    func refusal() -> HTTPResponse? {
        let oldest = waiting.withLock { $0.first < $0.arrivals.count ? $0.arrivals[$0.first] : nil }
        guard let oldest else { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        let waited = Double(now - min(now, oldest)) / 1e9
        guard waited > patience else { return nil }
        return .error(
            .serverBusy(
                "Requests of this kind wait for their turn one at a time, and the first in line has waited "
                    + "\(Int(waited)) s (more than \(Int(patience)) s); this one was not carried out, retry shortly."))
    }

    /// Runs `turn` when the request's turn comes; `arrived`: when the request came (`DispatchTime.now()`).
    func enqueue(arrived: DispatchTime, _ turn: @escaping @Sendable () -> Void) {
        // Queued under the lock: the arrivals are in the queue's order.
        waiting.withLock { waiting in
            waiting.arrivals.append(arrived.uptimeNanoseconds)
            queue.async {
                self.turnCame()
                turn()
            }
        }
    }

    private func turnCame() {
        waiting.withLock { waiting in
            waiting.first += 1
            if waiting.first == waiting.arrivals.count {
                waiting.arrivals.removeAll(keepingCapacity: waiting.arrivals.count <= 4096)
                waiting.first = 0
            } else if waiting.first >= 4096, waiting.first * 2 >= waiting.arrivals.count {
                waiting.arrivals.removeFirst(waiting.first)
                waiting.first = 0
            }
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
