/// Something with a place in a sequence (a store seq, a notification seq).
protocol Sequenced {
    var seq: Int64 { get }
}

extension FeedChange: Sequenced {}

/// The store's change history: feed changes by store seq.
typealias ChangeHistory = SequenceHistory<FeedChange>

/// A bounded history of items in seq order (several may share a seq): what long-poll clients catch up from.
///
/// Holds at most `capacity` items; older ones are dropped whole seq by whole seq, and `compactedThrough` says up to
/// which seq items may be missing, so a `since` below it is answered 410 rather than with a silent gap. Not
/// thread-safe: confined to the observation queue.
struct SequenceHistory<Item: Sequenced> {
    let capacity: Int
    private var ring: [Item?]
    private var start = 0
    private(set) var count = 0
    /// Changes with seq ≤ this may have been dropped (or predate the history).
    private(set) var compactedThrough: Int64

    init(capacity: Int, startingAt seq: Int64) {
        self.capacity = max(1, capacity)
        ring = Array(repeating: nil, count: self.capacity)
        compactedThrough = seq
    }

    mutating func append(_ change: Item) {
        if count == capacity {
            let dropped = ring[start]!
            compactedThrough = max(compactedThrough, dropped.seq)
            // Drop the rest of that seq too, so a seq is either wholly present or wholly compacted.
            ring[start] = nil
            start = (start + 1) % capacity
            count -= 1
            while count > 0, let next = ring[start], next.seq == dropped.seq {
                ring[start] = nil
                start = (start + 1) % capacity
                count -= 1
            }
        }
        ring[(start + count) % capacity] = change
        count += 1
    }

    /// Whether every change after `since` is still here.
    func covers(since: Int64) -> Bool {
        since >= compactedThrough
    }

    /// The items with seq > `since` that pass `include`, oldest first.
    func changes(after since: Int64, where include: (Item) -> Bool = { _ in true }) -> [Item] {
        // Binary search for the first change after `since`, then walk forward.
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if ring[(start + middle) % capacity]!.seq <= since { low = middle + 1 } else { high = middle }
        }
        var result: [Item] = []
        for offset in low..<count {
            let change = ring[(start + offset) % capacity]!
            if include(change) { result.append(change) }
        }
        return result
    }
}
