import Foundation

/// Several sort descriptors applied in turn: the comparator of an array controller's `arrangedObjects`.
///
/// Sorting decorates each subject with its sort keys once (one key-path read per subject and descriptor), sorts,
/// and undecorates; it is stable (ties keep their input order). For incremental re-arrangement, keep each arranged
/// subject's `Keys` and place a new or changed subject with `insertionIndex(for:count:keysAt:)` (binary search).
public struct SortOrdering: Sendable, Hashable {
    /// One subject's sort keys for these descriptors, fetched once; compare them with `compare(_:_:)`.
    public struct Keys: Sendable {
        fileprivate let keys: [SortKey]
    }

    public let descriptors: [SortDescriptor]

    public init(_ descriptors: [SortDescriptor]) {
        self.descriptors = descriptors
    }

    /// Reads `subject`'s sort keys through `resolver` (its errors, such as `undefined-key`, propagate).
    public func keys(of subject: KeyValue, resolver: some KeyPathResolving) throws -> Keys {
        var keys: [SortKey] = []
        keys.reserveCapacity(descriptors.count)
        for descriptor in descriptors {
            keys.append(
                SortKey(try resolver.value(forKeyPath: descriptor.key, of: subject), selector: descriptor.selector))
        }
        return Keys(keys: keys)
    }

    /// The order of two subjects' keys: the first descriptor that tells them apart decides.
    public func compare(_ lhs: Keys, _ rhs: Keys) -> ComparisonResult {
        for index in descriptors.indices {
            let result = SortKey.compare(lhs.keys[index], rhs.keys[index])
            if result != .orderedSame { return descriptors[index].ascending ? result : result.reversed }
        }
        return .orderedSame
    }

    /// The order of two subjects (reads their keys; for many comparisons, keep `Keys` instead).
    public func compare(_ lhs: KeyValue, _ rhs: KeyValue, resolver: some KeyPathResolving) throws -> ComparisonResult {
        compare(try keys(of: lhs, resolver: resolver), try keys(of: rhs, resolver: resolver))
    }

    /// `subjects` sorted, stably.
    public func sorted(_ subjects: [KeyValue], resolver: some KeyPathResolving) throws -> [KeyValue] {
        try sorted(subjects, subject: { $0 }, resolver: resolver)
    }

    /// `elements` sorted stably by their subjects (for example `[ObjectID]` with `{ .object($0) }`).
    ///
    /// O(n·d) key-path reads for d descriptors, then O(n log n) comparisons of prepared keys.
    public func sorted<Element>(
        _ elements: [Element], subject: (Element) -> KeyValue, resolver: some KeyPathResolving
    ) throws -> [Element] {
        try sorted(elements) { ResolvedSubject(evaluatedObject: subject($0), resolver: resolver) }
    }

    /// `elements` sorted stably by their subjects: the generic core of the public `sorted` family.
    func sorted<Element, Subject: PredicateSubject>(
        _ elements: [Element], subject: (Element) -> Subject
    ) throws -> [Element] {
        guard elements.count > 1, !descriptors.isEmpty else { return elements }
        let width = descriptors.count
        var keys: [SortKey] = []
        keys.reserveCapacity(elements.count * width)
        for element in elements {
            let value = subject(element)
            for descriptor in descriptors {
                keys.append(SortKey(try value.value(forKeyPath: descriptor.key), selector: descriptor.selector))
            }
        }
        return order(ofRows: keys).map { elements[$0] }
    }

    /// The stable sorted order (row indexes) of subjects whose keys were read already (`keys(of:resolver:)`): as
    /// `sorted` orders them, without reading them again.
    public func order(of keys: [Keys]) -> [Int] {
        guard keys.count > 1, !descriptors.isEmpty else { return Array(keys.indices) }
        var rows: [SortKey] = []
        rows.reserveCapacity(keys.count * descriptors.count)
        for subject in keys { rows += subject.keys }
        return order(ofRows: rows)
    }

    /// The stable sorted order of `keys`, one row of `descriptors.count` keys per subject: by dense ranks packed into
    /// integers when they fit, else by ranks, else by comparing the keys; ties by row.
    private func order(ofRows keys: [SortKey]) -> [Int] {
        let width = descriptors.count
        let ascending = descriptors.map(\.ascending)
        var order = Array(0..<(keys.count / width))
        if let (ranks, maximums) = Self.denseRanks(keys, width: width) {
            if let packed = Self.packedOrder(ranks, maximums: maximums, ascending: ascending) {
                return packed
            }
            ranks.withUnsafeBufferPointer { ranks in
                order.sort { lhs, rhs in
                    let left = lhs * width
                    let right = rhs * width
                    for index in 0..<width where ranks[left + index] != ranks[right + index] {
                        return (ranks[left + index] < ranks[right + index]) == ascending[index]
                    }
                    return lhs < rhs
                }
            }
            return order
        }
        keys.withUnsafeBufferPointer { keys in
            order.sort { lhs, rhs in
                let left = lhs * width
                let right = rhs * width
                for index in 0..<width {
                    let result = SortKey.compare(keys[left + index], keys[right + index])
                    if result != .orderedSame {
                        return (result == .orderedAscending) == ascending[index]
                    }
                }
                return lhs < rhs
            }
        }
        return order
    }

    /// The keys (`width` per element, row by row) as dense ranks laid out the same way, with each column's greatest
    /// rank, when every column has them (see `SortKey.denseRanks`): comparing ranks orders exactly as comparing keys.
    private static func denseRanks(_ keys: [SortKey], width: Int) -> (ranks: [Int32], maximums: [Int32])? {
        let count = keys.count / width
        var ranks = [Int32](repeating: 0, count: keys.count)
        var maximums = [Int32](repeating: 0, count: width)
        for column in 0..<width {
            guard let columnRanks = SortKey.denseRanks(count: count, key: { keys[$0 * width + column] }) else {
                return nil
            }
            for row in 0..<count { ranks[row * width + column] = columnRanks[row] }
            maximums[column] = columnRanks.max() ?? 0
        }
        return (ranks, maximums)
    }

    /// The sorted order of the elements by their ranks, ties by position, when each element's ranks (a descending
    /// column's turned over) and its position fit in one 64-bit integer: then sorting those integers is the sort.
    private static func packedOrder(_ ranks: [Int32], maximums: [Int32], ascending: [Bool]) -> [Int]? {
        let width = maximums.count
        let count = ranks.count / width
        let bits = maximums.map { Int32.bitWidth - $0.leadingZeroBitCount }
        let positionBits = Int.bitWidth - (count - 1).leadingZeroBitCount
        guard bits.reduce(positionBits, +) <= UInt64.bitWidth else { return nil }
        var packed = [UInt64](repeating: 0, count: count)
        for row in 0..<count {
            var key: UInt64 = 0
            for column in 0..<width {
                let rank = ranks[row * width + column]
                let value = ascending[column] ? rank : maximums[column] - rank
                key = key << bits[column] | UInt64(value)
            }
            packed[row] = key << positionBits | UInt64(row)
        }
        packed.sort()
        let mask: UInt64 = positionBits == 0 ? 0 : ~0 >> (UInt64.bitWidth - positionBits)
        return packed.map { Int($0 & mask) }
    }

    /// Where a subject with `keys` goes in a sorted sequence of `count` subjects: after every subject that is not
    /// ordered after it (so equal subjects keep their order of arrival), or, given `precedes` (whether the subject
    /// comes before the one at an index among equals: their order in the content, as a stable full sort has it),
    /// among its equals by that. O(log count) calls to `keysAt`.
    public func insertionIndex(
        for keys: Keys, count: Int, keysAt: (Int) throws -> Keys, precedes: ((Int) -> Bool)? = nil
    ) rethrows -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = low + (high - low) / 2
            let order = compare(keys, try keysAt(middle))
            if order == .orderedAscending || (order == .orderedSame && precedes?(middle) == true) {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }

    /// Where `subject` goes in the already sorted `subjects` (see `insertionIndex(for:count:keysAt:)`).
    public func insertionIndex(
        for subject: KeyValue, in subjects: [KeyValue], resolver: some KeyPathResolving
    ) throws -> Int {
        let keys = try keys(of: subject, resolver: resolver)
        return try insertionIndex(for: keys, count: subjects.count) {
            try self.keys(of: subjects[$0], resolver: resolver)
        }
    }
}

extension ComparisonResult {
    fileprivate var reversed: ComparisonResult {
        switch self {
        case .orderedAscending: .orderedDescending
        case .orderedDescending: .orderedAscending
        case .orderedSame: .orderedSame
        }
    }
}
