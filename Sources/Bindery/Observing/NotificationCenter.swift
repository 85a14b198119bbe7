import Foundation
import ObjectGraph
import PropertyList

/// A posted notification (API.md §8).
public struct PostedNotification: Sendable, Sequenced {
    public var seq: Int64
    public var name: String
    /// A reference (`Employee/42`, `controllers/NAME`) or any value naming the sender; nil for none.
    public var object: PropertyListValue
    private var info: Info

    /// What `userInfo` is made from: a value, or the objects of an `ObjectsDidChange` (the commit's own id arrays,
    /// not copied), rendered as references only when a client reads the notification: every commit posts one, and
    /// most are never read.
    enum Info: Sendable {
        case value(PropertyListValue)
        case objectsDidChange(inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID])
    }

    var approximateByteCount: Int {
        switch info {
        case .value(let value): 64 + name.utf8.count + object.approximateByteCount + value.approximateByteCount
        case .objectsDidChange(let inserted, let updated, let deleted):
            64 + name.utf8.count + 32 * (inserted.count + updated.count + deleted.count)
        }
    }

    var filterKey: Substring? { name[...] }

    public var userInfo: PropertyListValue {
        get {
            switch info {
            case .value(let value):
                return value
            case .objectsDidChange(let inserted, let updated, let deleted):
                func references(_ ids: [ObjectID]) -> PropertyListValue {
                    .array(ids.map { ["$ref": .string($0.description)] })
                }
                return [
                    "inserted": references(inserted), "updated": references(updated), "deleted": references(deleted),
                ]
            }
        }
        set { info = .value(newValue) }
    }

    init(seq: Int64, name: String, object: PropertyListValue, info: Info) {
        self.seq = seq
        self.name = name
        self.object = object
        self.info = info
    }

    public var json: PropertyListValue {
        ["seq": .integer(seq), "name": .string(name), "object": object, "userInfo": userInfo]
    }

    /// Whether the object is the one a query's `object=` names: a string object by its text, a reference
    /// (`{"$ref": "Employee/1"}`) by its id (`Employee/1`) too, and any object by its JSON (`json`: the text parsed,
    /// so spacing and key order do not count).
    func objectMatches(_ text: String, json: PropertyListValue?) -> Bool {
        switch object {
        case .string(let own) where own.isIdentical(to: text): return true
        case .dictionary(let fields) where fields.count == 1 && fields["$ref"]?.isIdentical(to: .string(text)) == true:
            return true
        default: return json.map { $0.isIdentical(to: object) } ?? false
        }
    }
}

/// NSNotificationCenter for long-poll clients: posted notifications, numbered, kept in a bounded history.
///
/// Confined to the observation queue.
///
/// Notifications are not kept across restarts, but their seqs go on from one run to the next: the center reserves
/// seqs in blocks of `reservation` in a file of the data directory (`notification-seqs`, written durably once per
/// block) and starts after the last reserved one, so that a client's `since` from an earlier run is answered 410,
/// never with another run's notifications. A seq is handed out only once it is reserved: when the next block cannot
/// be written (or the file could not be read at start, so where to go on is unknown), nothing is posted, and the
/// write is tried again at the next post.
final class NotificationCenter {
    private(set) var history: SequenceHistory<PostedNotification>
    private(set) var lastSeq: Int64
    /// The seqs up to this one are reserved in the file (nil: no file, seqs start at 0 in every run).
    private var reservedThrough: Int64
    /// The data directory holding the reservation file (`DataDirectory.notificationSeqsName`).
    private let directory: DataDirectory?
    /// Why the file could not be read at start: no seq can be reserved in this run.
    private let unreadable: ObjectGraphError?
    private static let reservation: Int64 = 10_000
    /// About how many bytes of notifications are kept for long-poll clients (beyond, the oldest are dropped: 410).
    static let maxHistoryBytes = 64 << 20

    /// A center whose seqs go on after the ones reserved in `directory`'s file (nil: they start at 0).
    init(capacity: Int, directory: DataDirectory? = nil) {
        var start: Int64 = 0
        var unreadable: ObjectGraphError?
        if let reservationFile = directory?.file(DataDirectory.notificationSeqsName) {
            do throws(ObjectGraphError) {
                if let bytes = try FileIO.readIfPresent(reservationFile) {
                    let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                    guard let reserved = Int64(text), reserved >= 0 else {
                        throw ObjectGraphError(
                            status: 500, code: "storage-error",
                            message: "\(reservationFile) does not hold a notification seq.")
                    }
                    start = reserved
                }
            } catch {
                unreadable = error
            }
        }
        lastSeq = start
        reservedThrough = start
        self.directory = directory
        self.unreadable = unreadable
        history = SequenceHistory(
            capacity: capacity, maxBytes: Self.maxHistoryBytes, startingAt: start, tracksFilterKeys: true)
    }

    /// Makes sure the next seq is reserved, writing the next block when `lastSeq` reached the reserved ones; throws
    /// (`storage-error`, 503 for a full or failing disk) when it cannot be.
    func reserveNext() throws(ObjectGraphError) {
        guard let directory, lastSeq >= reservedThrough else { return }
        if let unreadable { throw unreadable }
        let next = lastSeq + Self.reservation
        try directory.writeDurably([Array("\(next)\n".utf8)], to: DataDirectory.notificationSeqsName)
        reservedThrough = next
    }

    /// Posts now; returns the notification (with its seq). Throws, posting nothing, when its seq cannot be reserved.
    @discardableResult
    func post(name: String, object: PropertyListValue, userInfo: PropertyListValue) throws(ObjectGraphError)
        -> PostedNotification
    {
        try post(name: name, object: object, info: .value(userInfo))
    }

    @discardableResult
    func post(name: String, object: PropertyListValue, info: PostedNotification.Info) throws(ObjectGraphError)
        -> PostedNotification
    {
        try reserveNext()
        lastSeq += 1
        let notification = PostedNotification(seq: lastSeq, name: name, object: object, info: info)
        history.append(notification)
        return notification
    }

    func notifications(after since: Int64, name: String?, object: String?) -> [PostedNotification] {
        let json = object.flatMap { try? PropertyListValue(jsonBytes: Array($0.utf8)) }
        return history.changes(after: since) { notification in
            (name.map(notification.name.isIdentical) ?? true)
                && (object.map { notification.objectMatches($0, json: json) } ?? true)
        }
    }
}

/// NSNotificationQueue: notifications posted `asap` (at the end of the current turn of the observation queue) or
/// `whenIdle` (once the queue has been quiet for a moment), coalesced on name and/or sender.
///
/// Confined to the observation queue.
final class NotificationQueue {
    enum PostingStyle: String {
        case now, asap, whenIdle
    }

    struct Coalescing: OptionSet {
        let rawValue: Int
        static let name = Coalescing(rawValue: 1)
        static let sender = Coalescing(rawValue: 2)
    }

    struct Pending {
        var name: String
        var object: PropertyListValue
        var userInfo: PropertyListValue
    }

    var asap: [Pending] = []
    var idle: [Pending] = []

    /// Enqueues `notification` unless a queued one matches it (the first queued is kept). A matching one queued
    /// `whenIdle` is moved to `asap` when the new one is `asap`: coalescing never delays a notification. Returns
    /// whether it was queued, and the list that must be flushed (nil when none needs a flush scheduled).
    func enqueue(
        _ notification: Pending, style: PostingStyle, coalescing: Coalescing
    ) -> (queued: Bool, flush: PostingStyle?) {
        let matches = Self.matcher(notification, coalescing)
        if asap.contains(where: matches) { return (false, nil) }
        if let first = idle.firstIndex(where: matches) {
            guard style == .asap else { return (false, nil) }
            asap.append(idle.remove(at: first))
            idle.removeAll(where: matches)
            return (false, .asap)
        }
        if style == .asap { asap.append(notification) } else { idle.append(notification) }
        return (true, style)
    }

    /// Drops the queued notifications `notification` coalesces with: NSPostNow posts "immediately after
    /// coalescing", in place of those.
    func coalesce(with notification: Pending, coalescing: Coalescing) {
        let matches = Self.matcher(notification, coalescing)
        asap.removeAll(where: matches)
        idle.removeAll(where: matches)
    }

    private static func matcher(_ notification: Pending, _ coalescing: Coalescing) -> (Pending) -> Bool {
        { other in
            guard !coalescing.isEmpty else { return false }
            if coalescing.contains(.name), !other.name.isIdentical(to: notification.name) { return false }
            if coalescing.contains(.sender), !other.object.isIdentical(to: notification.object) { return false }
            return true
        }
    }
}
