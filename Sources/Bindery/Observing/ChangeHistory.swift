/// Something with a place in a sequence (a store seq, a notification seq).
protocol Sequenced {
    var seq: Int64 { get }
    /// About how many bytes it holds (its values), for the history's byte budget.
    var approximateByteCount: Int { get }
    /// What a filtered reader names to ask for it (a change's entity, a notification's name); nil for nothing.
    var filterKey: Substring? { get }
}

extension FeedChange: Sequenced {
    var approximateByteCount: Int {
        64 + target.utf8.count + keyPath.utf8.count + (old?.approximateByteCount ?? 0)
            + (new?.approximateByteCount ?? 0) + 8 * (indexes?.count ?? 0)
    }

    var filterKey: Substring? { entity }
}

extension Sequenced {
    var filterKey: Substring? { nil }
}

/// The store's change history: feed changes by store seq.
typealias ChangeHistory = SequenceHistory<FeedChange>

/// A bounded history of items in seq order (several may share a seq): what long-poll clients catch up from.
///
/// Holds at most `capacity` items and about `maxBytes` bytes of their values (older seqs beyond either are dropped;
/// the newest seq is always kept); older ones are dropped whole seq by whole seq, and `compactedThrough` says up to
/// which seq items may be missing, so a `since` below it is answered 410 rather than with a silent gap. The ring
/// grows by doubling up to `capacity` (an observer's history costs nothing until changes come). Not
/// thread-safe: confined to the observation queue.
struct SequenceHistory<Item: Sequenced> {
    let capacity: Int
    let maxBytes: Int
    private var ring: [Item?] = []
    private var start = 0
    private(set) var count = 0
    /// The `approximateByteCount` of the items held.
    private(set) var bytes = 0
    /// Changes with seq ≤ this may have been dropped (or predate the history).
    private(set) var compactedThrough: Int64
    /// When filter keys are tracked: by the hash of a filter key, the newest seq dropped with an item of that key, so
    /// that a filtered reader is refused only when an item it wanted was dropped. Clients name keys, so the map is
    /// bounded and holds no names: keys of one hash share their seq, and past `maxFilterKeys` hashes all are
    /// forgotten into `droppedForgotten`, which then bounds every key (too strict at worst, never a gap).
    private var droppedByKey: [Int: Int64]?
    private var droppedForgotten: Int64
    static var maxFilterKeys: Int { 1024 }

    init(capacity: Int, maxBytes: Int = .max, startingAt seq: Int64, tracksFilterKeys: Bool = false) {
        self.capacity = max(1, capacity)
        self.maxBytes = maxBytes
        compactedThrough = seq
        droppedForgotten = seq
        droppedByKey = tracksFilterKeys ? [:] : nil
    }

    mutating func append(_ change: Item) {
        bytes += change.approximateByteCount
        while bytes > maxBytes, count > 0, let oldest = ring[start], oldest.seq < change.seq {
            dropOldestSeq()
        }
        if count == ring.count, ring.count < capacity {
            // Grow: the items in order from index 0, then room.
            let grown = min(capacity, max(Self.leastRoom, ring.count * 2))
            var items = (0..<count).map { ring[(start + $0) % ring.count] }
            items.append(contentsOf: repeatElement(nil, count: grown - count))
            ring = items
            start = 0
        }
        if count == ring.count { dropOldestSeq() }
        ring[(start + count) % ring.count] = change
        count += 1
    }

    /// The fewest slots a ring that holds anything has: small, since every observer has a ring (thousands of them,
    /// most holding a change or two).
    static var leastRoom: Int { 4 }

    /// About what the history costs in memory: its items' values and its ring's slots (a slot is taken whether an item
    /// is in it or not; the ring doubles as it grows).
    var memoryBytes: Int { bytes + ring.count * MemoryLayout<Item?>.stride }

    /// Drops the oldest seqs until the items with their slots cost at most `limit` bytes (the newest seq is kept),
    /// then gives back the ring's room beyond twice what is left.
    mutating func shrink(toBytes limit: Int) {
        let slot = MemoryLayout<Item?>.stride
        // With the room the ring keeps (twice what is left), so that it then costs at most `limit`.
        while bytes + max(Self.leastRoom, count * 2) * slot > limit, count > 1, let oldest = ring[start],
            let newest = ring[(start + count - 1) % ring.count], oldest.seq < newest.seq
        {
            dropOldestSeq()
        }
        let room = max(Self.leastRoom, count * 2)
        guard ring.count > room else { return }
        var items = (0..<count).map { ring[(start + $0) % ring.count] }
        items.append(contentsOf: repeatElement(nil, count: room - count))
        ring = items
        start = 0
    }

    /// Drops the oldest item and the rest of its seq, so a seq is either wholly present or wholly compacted.
    private mutating func dropOldestSeq() {
        let size = ring.count
        let seq = ring[start]!.seq
        compactedThrough = max(compactedThrough, seq)
        while count > 0, let next = ring[start], next.seq == seq {
            if droppedByKey != nil, let key = next.filterKey {
                droppedByKey![key.hashValue] = seq
                if droppedByKey!.count > Self.maxFilterKeys {
                    droppedForgotten = seq
                    droppedByKey = [:]
                }
            }
            bytes -= next.approximateByteCount
            ring[start] = nil
            start = (start + 1) % size
            count -= 1
        }
    }

    /// Whether every change after `since` is still here; with a `filterKey` (and keys tracked), every change of
    /// that key.
    func covers(since: Int64, filterKey: String? = nil) -> Bool {
        guard let filterKey, let droppedByKey else { return since >= compactedThrough }
        return since >= (droppedByKey[filterKey[...].hashValue] ?? droppedForgotten)
    }

    /// The items with seq > `since` that pass `include`, oldest first.
    func changes(after since: Int64, where include: (Item) -> Bool = { _ in true }) -> [Item] {
        // Binary search for the first change after `since`, then walk forward.
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if ring[(start + middle) % ring.count]!.seq <= since { low = middle + 1 } else { high = middle }
        }
        var result: [Item] = []
        for offset in low..<count {
            let change = ring[(start + offset) % ring.count]!
            if include(change) { result.append(change) }
        }
        return result
    }
}
