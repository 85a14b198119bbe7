import Foundation

extension SortDescriptor {
    /// `subjects` sorted stably by `descriptors` (see `SortOrdering`).
    public static func sort(
        _ subjects: [KeyValue], by descriptors: [SortDescriptor], resolver: some KeyPathResolving
    ) throws -> [KeyValue] {
        try SortOrdering(descriptors).sorted(subjects, resolver: resolver)
    }

    /// The order of two subjects by this descriptor alone.
    public func compare(_ lhs: KeyValue, _ rhs: KeyValue, resolver: some KeyPathResolving) throws -> ComparisonResult {
        try SortOrdering([self]).compare(lhs, rhs, resolver: resolver)
    }
}
