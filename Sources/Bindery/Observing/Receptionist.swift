import Dispatch
import ObjectGraph
import Synchronization

/// The service's KVO observer: it bounces committed records to the observation queue (the main queue in the server),
/// in seq order, so that nothing that feeds clients runs on the thread that made the change.
///
/// The store delivers records one at a time in seq order. They are appended to a buffer, and one block on the queue
/// takes everything buffered and hands it over at once: under a stream of commits the queue is woken once per batch,
/// not once per record. Work that must come after the records delivered so far and before later ones (the service's
/// own notifications: a `StoreDidSave` after the `ObjectsDidChange` of the changes it saved, before those of the
/// changes made after it) goes through the same buffer (`enqueue`).
final class Receptionist: Sendable {
    enum Item: Sendable {
        case record(ChangeRecord)
        case work(@Sendable () -> Void)
    }

    private let queue: DispatchQueue
    private let handler: @Sendable ([Item]) -> Void
    private let buffer = Mutex((items: [Item](), scheduled: false))

    init(queue: DispatchQueue, handler: @escaping @Sendable ([Item]) -> Void) {
        self.queue = queue
        self.handler = handler
    }

    func observe(_ record: ChangeRecord) {
        enqueue(.record(record))
    }

    /// Runs `work` on the queue after every record delivered before this call, and before every record after it.
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        enqueue(.work(work))
    }

    private func enqueue(_ item: Item) {
        let schedule = buffer.withLock { buffer in
            buffer.items.append(item)
            defer { buffer.scheduled = true }
            return !buffer.scheduled
        }
        guard schedule else { return }
        queue.async { [self] in
            let items = buffer.withLock { buffer in
                buffer.scheduled = false
                return buffer.items.takeAll()
            }
            handler(items)
        }
    }
}
