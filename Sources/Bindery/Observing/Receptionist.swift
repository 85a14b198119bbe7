import Dispatch
import ObjectGraph

/// The service's KVO observer: it bounces each committed record to the observation queue (the main queue in the
/// server), in seq order, so that nothing that feeds clients runs on the thread that made the change.
///
/// The store delivers records one at a time in seq order; `async` onto a serial queue keeps that order.
struct Receptionist: Sendable {
    let queue: DispatchQueue
    let handler: @Sendable (ChangeRecord) -> Void

    init(queue: DispatchQueue, handler: @escaping @Sendable (ChangeRecord) -> Void) {
        self.queue = queue
        self.handler = handler
    }

    @Sendable func observe(_ record: ChangeRecord) {
        queue.async { [handler] in handler(record) }
    }
}
