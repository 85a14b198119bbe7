import ObjectGraph
import PropertyList

/// One registration of `POST /observers`: a target, a key path and the options of API.md §7.
///
/// Confined to the observation queue. It keeps its own bounded list of changes for its long-poll clients.
final class KeyValueObserver {
    enum Target: Equatable {
        case object(ObjectID)
        case controller(String)
        case defaults

        var description: String {
            switch self {
            case .object(let id): id.description
            case .controller(let name): "controllers/\(name)"
            case .defaults: "defaults"
            }
        }

        /// A controller or the defaults: read through the center's external reader, not the store.
        var isExternal: Bool {
            if case .object = self { return false }
            return true
        }
    }

    struct Options: OptionSet {
        let rawValue: Int
        static let new = Options(rawValue: 1)
        static let old = Options(rawValue: 2)
        static let initial = Options(rawValue: 4)
        static let prior = Options(rawValue: 8)

        /// Each option with its name in `POST /observers` and `GET /observers/{id}`, in the order they are listed.
        static let named: [(option: Options, name: String)] = [
            (.new, "new"), (.old, "old"), (.initial, "initial"), (.prior, "prior"),
        ]
    }

    let id: String
    let target: Target
    let keyPath: String
    let options: Options
    /// The store seq at registration: changes up to it are not this observer's.
    let since: Int64
    /// Set when the key path is one stored key of the target object: changes then come straight from the records,
    /// with their kinds and indexes; otherwise the value is re-read after each commit and compared.
    let storedKey: Bool
    var lastValue: PropertyListValue
    /// For a target read from snapshots (the defaults), the generation `lastValue` was read from: reports of earlier
    /// snapshots are not this observer's (`ObservationCenter.externalTargetDidChange`).
    var externalGeneration: Int64?
    /// The seq of the `initial` change (one of its own, `ObjectStore.advanceSeq`): like any change it is answered
    /// to every poll from before it, so that a poll whose answer was lost can be repeated, and never after it.
    let initialSeq: Int64?
    /// Every change after `since`, by seq, for any target: a controller's or the defaults' changes have seqs of
    /// their own (`ObjectStore.advanceSeq()`), so every poll is answered by `since` alike.
    var history: ChangeHistory
    var lastActivity: Double
    var activeWaiters = 0

    init(
        id: String, target: Target, keyPath: String, options: Options, since: Int64, initialSeq: Int64?,
        storedKey: Bool, value: PropertyListValue, capacity: Int, maxBytes: Int, now: Double
    ) {
        self.id = id
        self.target = target
        self.keyPath = keyPath
        self.options = options
        self.since = since
        self.storedKey = storedKey
        self.lastValue = value
        self.history = ChangeHistory(capacity: capacity, maxBytes: maxBytes, startingAt: since)
        self.lastActivity = now
        self.initialSeq = initialSeq
    }

    /// Brings `lastValue` (of a stored key) to what it is after `change` of that key, as the record has it (see
    /// `Change`: indexes in the new list for an insertion, in the old one for a removal), without reading the store.
    func keepValue(after change: Change) {
        if change.kind == .setting {
            lastValue = change.new ?? .null
            return
        }
        guard case .array(var elements) = lastValue, let indexes = change.indexes else { return }
        // Taken out first, so that the array is changed in place rather than copied.
        lastValue = .null
        let values = change.kind == .removal ? [] : change.new?.arrayValue ?? []
        switch change.kind {
        case .insertion:
            for (index, value) in zip(indexes, values) where index <= elements.count {
                elements.insert(value, at: index)
            }
        case .removal:
            for index in indexes.sorted(by: >) where index < elements.count { elements.remove(at: index) }
        case .replacement:
            for (index, value) in zip(indexes, values) where index < elements.count { elements[index] = value }
        default:
            break
        }
        lastValue = .array(elements)
    }

    /// The `initial` change, to record when its seq is processed.
    var initialChange: FeedChange? {
        initialSeq.map {
            FeedChange(seq: $0, target: target.description, keyPath: keyPath, kind: .setting, new: lastValue)
        }
    }

    /// Records a change, preceded by its prior notification when asked for.
    func emit(_ change: FeedChange) {
        var changes = [change]
        if options.contains(.prior) {
            var prior = change
            prior.prior = true
            prior.new = nil
            changes.insert(prior, at: 0)
        }
        for change in changes { history.append(change) }
    }

    /// Whether every change of this observer after `since` is still held. A `since` before the registration is
    /// covered while nothing has been dropped: changes before the registration were never this observer's, so
    /// answering from the registration leaves no gap in what it observes (as with a `since` of the registration).
    func covers(since: Int64) -> Bool {
        history.covers(since: since) || history.compactedThrough == self.since
    }

    /// Whether a poll from `since` has something to answer.
    func hasChanges(after since: Int64) -> Bool {
        !history.changes(after: since).isEmpty
    }

    /// The JSON of the changes after `since`, shaped by the options (the initial change always has `new`, never
    /// `old`), at most `limit` of them (`ObservationCenter.page`); `lastSent` is the seq of the last one when more
    /// remain, else nil.
    func answer(after since: Int64, limit: Int = .max) -> (changes: [PropertyListValue], lastSent: Int64?) {
        let all = history.changes(after: since)
        let page = ObservationCenter.page(all, limit: limit, seq: \.seq)
        let changes = page.map { change in
            let isInitial = change.seq == initialSeq
            return change.json(
                includingOld: !isInitial && options.contains(.old), includingNew: isInitial || options.contains(.new))
        }
        return (changes, page.count < all.count ? page.last?.seq : nil)
    }
}
