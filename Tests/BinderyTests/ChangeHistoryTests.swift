import Testing

@testable import Bindery

/// The bounded history behind `/changes`, observers and notifications.
struct ChangeHistoryTests {
    private struct Item: Sequenced, Equatable {
        var seq: Int64
        var tag: Int
        var approximateByteCount = 100
        var key: String?
        var filterKey: Substring? { key?[...] }
    }

    /// With filter keys tracked, a reader filtering on a key is covered from any `since` after the last dropped
    /// item of its key, however much else was dropped; past `maxFilterKeys` keys, every key is bounded by the last
    /// drop (never a gap: too strict at worst).
    @Test func tracksTheLastDroppedSeqOfEachFilterKey() {
        var history = SequenceHistory<Item>(capacity: 4, startingAt: 0, tracksFilterKeys: true)
        history.append(Item(seq: 1, tag: 1, key: "A"))
        for n in 2...10 { history.append(Item(seq: Int64(n), tag: n, key: "B")) }
        #expect(history.compactedThrough == 6)
        #expect(!history.covers(since: 0, filterKey: "A"))
        #expect(history.covers(since: 1, filterKey: "A"))
        #expect(!history.covers(since: 5, filterKey: "B"))
        #expect(history.covers(since: 6, filterKey: "B"))
        #expect(!history.covers(since: 1))
        // A key never seen, in a history that started at 0: nothing of it was dropped.
        #expect(history.covers(since: 0, filterKey: "C"))
        // Untracked, a filter changes nothing.
        var plain = SequenceHistory<Item>(capacity: 4, startingAt: 0)
        for n in 1...10 { plain.append(Item(seq: Int64(n), tag: n, key: "B")) }
        #expect(!plain.covers(since: 1, filterKey: "A"))
        // More keys than are tracked: all are forgotten into the last drop.
        let keys = SequenceHistory<Item>.maxFilterKeys + 1
        var many = SequenceHistory<Item>(capacity: 1, startingAt: 0, tracksFilterKeys: true)
        for n in 1...(keys + 1) { many.append(Item(seq: Int64(n), tag: n, key: "k\(n)")) }
        #expect(!many.covers(since: 0, filterKey: "C"))
        #expect(many.covers(since: Int64(keys), filterKey: "C"))
    }

    /// `covers` is exact at the boundary: from `compactedThrough` every change is here, from one before it the
    /// change of seq `compactedThrough` may be gone (410, never a silent gap of one change).
    @Test func coversExactlyFromTheLastDroppedSeq() {
        var history = SequenceHistory<Item>(capacity: 4, startingAt: 0)
        for n in 1...10 { history.append(Item(seq: Int64(n), tag: n)) }
        #expect(history.compactedThrough == 6)
        #expect(history.covers(since: 6))
        #expect(!history.covers(since: 5))
        #expect(history.changes(after: 6).map(\.tag) == [7, 8, 9, 10])
    }

    /// A full ring drops the whole oldest seq at once, not one of its items.
    @Test func aFullRingDropsTheWholeOldestSeq() {
        var history = SequenceHistory<Item>(capacity: 4, startingAt: 0)
        for tag in 1...3 { history.append(Item(seq: 1, tag: tag)) }
        history.append(Item(seq: 2, tag: 4))
        history.append(Item(seq: 3, tag: 5))
        #expect(history.compactedThrough == 1)
        #expect(history.count == 2)
        #expect(history.changes(after: 0).map(\.tag) == [4, 5])
    }

    /// The ring grows as items come (nothing is set aside for a capacity never used), keeps them in order across
    /// growth, and past its capacity drops whole seqs from the front, saying up to which seq it dropped.
    @Test func growsInOrderThenDropsWholeSeqs() {
        var history = SequenceHistory<Item>(capacity: 40, startingAt: 0)
        #expect(history.changes(after: 0).isEmpty)
        for n in 1...30 { history.append(Item(seq: Int64(n), tag: n)) }
        #expect(history.changes(after: 0).map(\.tag) == Array(1...30))
        #expect(history.changes(after: 25).map(\.tag) == [26, 27, 28, 29, 30])
        #expect(history.covers(since: 0))
        // Seq 31 holds three items, then the ring is full and each new item drops the oldest seq.
        for tag in 31...33 { history.append(Item(seq: 31, tag: tag)) }
        for n in 34...50 { history.append(Item(seq: Int64(n - 2), tag: n)) }
        #expect(history.count <= 40)
        #expect(!history.covers(since: 0))
        let kept = history.changes(after: history.compactedThrough)
        #expect(kept == history.changes(after: 0))
        #expect(kept.last?.tag == 50)
        #expect(kept.map(\.seq) == kept.map(\.seq).sorted())
        // A seq is kept whole or not at all.
        let seq31 = kept.filter { $0.seq == 31 }.count
        #expect(seq31 == 0 || seq31 == 3)
    }

    /// Big items are bounded by bytes too: older seqs go (whole) until the rest fits; the newest seq always stays.
    @Test func dropsOldSeqsPastItsByteBudget() {
        var history = SequenceHistory<Item>(capacity: 1000, maxBytes: 1000, startingAt: 0)
        for n in 1...8 { history.append(Item(seq: Int64(n), tag: n)) }
        #expect(history.bytes == 800)
        #expect(history.covers(since: 0))
        history.append(Item(seq: 9, tag: 9, approximateByteCount: 500))
        #expect(history.bytes <= 1000)
        #expect(history.changes(after: 0).map(\.tag) == [4, 5, 6, 7, 8, 9])
        #expect(history.compactedThrough == 3)
        history.append(Item(seq: 10, tag: 10, approximateByteCount: 5000))
        #expect(history.changes(after: 0).map(\.tag) == [10])
        #expect(history.compactedThrough == 9)
        history.append(Item(seq: 10, tag: 11, approximateByteCount: 5000))
        #expect(history.changes(after: 0).map(\.tag) == [10, 11])
    }

    /// Shrinking drops whole seqs from the front down to the bytes asked for (values and slots), never the newest
    /// seq, and gives back the ring's room.
    @Test func shrinksToABudgetKeepingTheNewestSeq() {
        var history = SequenceHistory<Item>(capacity: 1000, startingAt: 0)
        for n in 1...40 { history.append(Item(seq: Int64(n), tag: n)) }
        let grown = history.memoryBytes
        history.shrink(toBytes: 0)
        #expect(history.changes(after: 0).map(\.tag) == [40])
        #expect(history.memoryBytes < grown / 2)
        history = SequenceHistory<Item>(capacity: 1000, startingAt: 0)
        for n in 1...10 { history.append(Item(seq: Int64(n), tag: n)) }
        history.append(Item(seq: 10, tag: 11))
        // Four items' values and their slots, with the room the ring keeps (twice as many).
        history.shrink(toBytes: 4 * 100 + 8 * MemoryLayout<Item?>.stride)
        #expect(history.changes(after: 0).map(\.tag) == [8, 9, 10, 11])
        #expect(history.compactedThrough == 7)
        history.shrink(toBytes: 0)
        #expect(history.changes(after: 0).map(\.tag) == [10, 11])
        #expect(history.compactedThrough == 9)
    }
}
