import Glibc
import Synchronization

/// Which of libmicrohttpd's worker threads are inside a request handler, and since when, so that the acceptor can
/// give a new connection to a worker that is not stuck in one.
///
/// A worker runs its connections' handlers one at a time, on its own thread: while one handler waits (for the store's
/// lock behind a long listing, say), every other connection of that worker waits too. libmicrohttpd places a new
/// connection on the worker numbered by its descriptor modulo the pool's size (`MHD_add_connection`, when no worker
/// is at its connection limit, which `HTTPAcceptor` ensures), so the acceptor steers a connection by its descriptor
/// (`steer(_:)`). Connections already placed stay where they are.
final class WorkerLoad: Sendable {
    /// One worker's state: monotonic nanoseconds since which its current handler runs, 0 between handlers.
    private final class Slot: Sendable {
        let since = Atomic<UInt64>(0)
    }

    /// A handler running this long makes its worker a bad place for a new connection. Ordinary requests take well
    /// under a millisecond, and a durable write waits for one `fsync`.
    static let stuckAfter: UInt64 = 10_000_000

    /// How many descriptors `steer(_:)` tries. Each try takes the lowest free descriptor from a bound of the chosen
    /// worker's remainder, and the descriptors of that worker's connections may fill a run of them.
    static let steeringTries = 64

    /// How far above an accepted descriptor the steering search may start (`nextDescriptor`): the kernel's table
    /// of descriptors grows to the highest one in use.
    static let searchSpan: Int32 = 1 << 16

    private let slots: [Slot]
    /// Where `steer` looks first: past the last descriptor it made.
    private let nextDescriptor = Atomic<Int32>(0)

    init(workers: Int) {
        slots = (0..<max(1, workers)).map { _ in Slot() }
    }

    /// The worker that holds connections on `socket`.
    func worker(of socket: Int32) -> Int {
        Int(socket) % slots.count
    }

    /// Runs a handler of a connection on `socket` (-1: unknown), on its worker's thread (handlers of one worker never
    /// overlap).
    func handling<Result>(on socket: Int32, _ handler: () -> Result) -> Result {
        guard slots.count > 1, socket >= 0 else { return handler() }
        let slot = slots[worker(of: socket)]
        slot.since.store(HeaderDeadlines.now(), ordering: .relaxed)
        defer { slot.since.store(0, ordering: .relaxed) }
        return handler()
    }

    /// When the worker `socket` would go to is stuck, the worker whose current handler has run the least (an idle
    /// one first), if that is less than the stuck one's: a worker busy for a while with a large request is a better
    /// place than one waiting seconds for a lock.
    func freeWorker(insteadOf socket: Int32) -> Int? {
        guard slots.count > 1 else { return nil }
        let target = worker(of: socket)
        let now = HeaderDeadlines.now()
        let stuckFor = busyTime(of: target, now: now)
        guard stuckFor > Self.stuckAfter else { return nil }
        var best: (worker: Int, busy: UInt64)?
        for worker in slots.indices where worker != target {
            let busy = busyTime(of: worker, now: now)
            if busy < best?.busy ?? .max { best = (worker, busy) }
        }
        guard let best, best.busy < stuckFor else { return nil }
        return best.worker
    }

    /// Nanoseconds the worker's current handler has run (0 between handlers).
    private func busyTime(of worker: Int, now: UInt64) -> UInt64 {
        let since = slots[worker].since.load(ordering: .relaxed)
        return since != 0 && now > since ? now - since : 0
    }

    /// `socket`, or a duplicate of it (the original closed) that libmicrohttpd will place on a better worker
    /// (`freeWorker`), when its own is stuck. Descriptors are duplicated upwards (`F_DUPFD_CLOEXEC` takes the lowest
    /// free one from a bound) until one falls to the chosen worker; a few tries, then the socket stays as it is.
    ///
    /// The search starts past the last descriptor it made (`nextDescriptor`): the lowest free descriptors go to new
    /// connections, and each steered one leaves a free descriptor of the stuck worker behind, so a search from the
    /// accepted descriptor would step over them one try at a time. Only the accepting thread steers. No duplicate is
    /// kept at or past `ceiling`: the descriptors there are kept for files (`HTTPAcceptor`).
    func steer(_ socket: Int32, below ceiling: Int32) -> Int32 {
        guard let worker = freeWorker(insteadOf: socket) else { return socket }
        var misses: [Int32] = []
        defer { for miss in misses { close(miss) } }
        let hint = nextDescriptor.load(ordering: .relaxed)
        var bound = hint > socket && hint - socket < Self.searchSpan ? hint : socket + 1
        for _ in 0..<Self.steeringTries {
            let offset = (worker - Int(bound) % slots.count + slots.count) % slots.count
            let duplicate = fcntl(socket, F_DUPFD_CLOEXEC, bound + Int32(offset))
            guard duplicate >= 0, duplicate < ceiling else {
                if duplicate >= 0 { close(duplicate) }
                // Past the descriptor limit or the ceiling: once more from just above the accepted descriptor.
                guard bound > socket + 1 else { break }
                bound = socket + 1
                continue
            }
            if self.worker(of: duplicate) == worker {
                nextDescriptor.store(duplicate + 1, ordering: .relaxed)
                close(socket)
                return duplicate
            }
            misses.append(duplicate)
            bound = duplicate + 1
        }
        return socket
    }
}
