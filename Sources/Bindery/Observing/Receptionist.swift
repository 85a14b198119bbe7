import Dispatch
import ObjectGraph
import Synchronization

/// The service's KVO observer: it bounces committed records to the observation queue (the main queue in the server),
/// in seq order, so that nothing that feeds clients runs on the thread that made the change.
///
/// The store delivers records one at a time in seq order. They are appended to a buffer, and one block on the queue
/// takes everything buffered and hands it over at once: under a stream of commits the queue is woken once per batch, not once per record.
final class Receptionist: Sendable {
    private let queue: DispatchQueue
    private let handler: @Sendable ([ChangeRecord]) -> Void
    private let buffer = Mutex((records: [ChangeRecord](), scheduled: false))

    init(queue: DispatchQueue, handler: @escaping @Sendable ([ChangeRecord]) -> Void) {
        self.queue = queue
        self.handler = handler
    }

    func observe(_ record: ChangeRecord) {
        let schedule = buffer.withLock { buffer in
            buffer.records.append(record)
            defer { buffer.scheduled = true }
            return !buffer.scheduled
        }
        guard schedule else { return }
        queue.async { [self] in
            let records = buffer.withLock { buffer in
                buffer.scheduled = false
                return buffer.records.takeAll()
            }
            handler(records)
        }
    }
}
