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
        guard elements.count > 1, !descriptors.isEmpty else { return elements }
        let width = descriptors.count
        var keys: [SortKey] = []
        keys.reserveCapacity(elements.count * width)
        for element in elements {
            let value = subject(element)
            for descriptor in descriptors {
                keys.append(
                    SortKey(try resolver.value(forKeyPath: descriptor.key, of: value), selector: descriptor.selector))
            }
        }
        let ascending = descriptors.map(\.ascending)
        var order = Array(elements.indices)
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
        return order.map { elements[$0] }
    }

    /// Where a subject with `keys` goes in a sorted sequence of `count` subjects: after every subject that is not
    /// ordered after it (so equal subjects keep their order of arrival). O(log count) calls to `keysAt`.
    public func insertionIndex(for keys: Keys, count: Int, keysAt: (Int) throws -> Keys) rethrows -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = low + (high - low) / 2
            if compare(keys, try keysAt(middle)) == .orderedAscending {
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
