import Foundation
import PropertyList

/// One subject's value for one sort descriptor, prepared for cheap repeated comparison (the "decorate" of
/// decorate–sort–undecorate): strings are folded and numeric runs encoded once, not per comparison.
enum SortKey: Sendable {
    case null
    case number(ValueComparison.Number)
    case string(String)
    /// `localizedStandardCompare:`: folded scalars, each run of digits as 0, its length, then its digits.
    case standard([UInt32])
    case date(Double)
    case data(Data)
    case array([SortKey])
    case dictionary
    case object(ObjectID)

    init(_ value: KeyValue, selector: SortDescriptor.Selector) {
        switch value {
        case .value(let value): self.init(value, selector: selector)
        case .object(let id): self = .object(id)
        case .collection(let elements): self = .array(elements.map { SortKey($0, selector: selector) })
        }
    }

    init(_ value: PropertyListValue, selector: SortDescriptor.Selector) {
        switch value {
        case .null: self = .null
        case .boolean(let value): self = .number(.integer(value ? 1 : 0))
        case .integer(let value): self = .number(.integer(value))
        case .real(let value): self = .number(.real(value))
        case .date(let value): self = .date(value.timeIntervalSince1970)
        case .data(let value): self = .data(value)
        case .array(let elements): self = .array(elements.map { SortKey($0, selector: selector) })
        case .dictionary: self = .dictionary
        case .string(let value):
            switch selector {
            case .compare: self = .string(value)
            case .caseInsensitiveCompare:
                self = .string(StringFolding.fold(value, caseInsensitive: true, diacriticInsensitive: false))
            case .localizedStandardCompare: self = .standard(SortKey.standardScalars(value))
            }
        }
    }

    /// Folded scalars with numeric runs encoded so that a plain lexicographic comparison is numeric-aware.
    ///
    /// A run of digits becomes 0 (below every scalar, so numbers sort before letters), its length without leading
    /// zeros, then its digits: a shorter number is smaller, and equal lengths compare digit by digit.
    private static func standardScalars(_ string: String) -> [UInt32] {
        let folded = StringFolding.fold(string, caseInsensitive: true, diacriticInsensitive: true)
        var result: [UInt32] = []
        result.reserveCapacity(folded.utf8.count + 4)
        var digits: [UInt32] = []
        func flushDigits() {
            guard !digits.isEmpty else { return }
            var start = 0
            while start < digits.count - 1, digits[start] == 0x30 { start += 1 }
            result.append(0)
            result.append(UInt32(digits.count - start))
            result.append(contentsOf: digits[start...])
            digits.removeAll(keepingCapacity: true)
        }
        for scalar in folded.unicodeScalars {
            if scalar.value >= 0x30 && scalar.value <= 0x39 {
                digits.append(scalar.value)
            } else {
                flushDigits()
                result.append(scalar.value)
            }
        }
        flushDigits()
        return result
    }

    private var rank: Int {
        switch self {
        case .null: 0
        case .number: 1
        case .string, .standard: 2
        case .date: 3
        case .data: 4
        case .array: 5
        case .dictionary: 6
        case .object: 7
        }
    }

    /// The ascending order of two keys.
    static func compare(_ lhs: SortKey, _ rhs: SortKey) -> ComparisonResult {
        switch (lhs, rhs) {
        case (.null, .null), (.dictionary, .dictionary): return .orderedSame
        case (.number(let l), .number(let r)): return l.compare(r)
        case (.string(let l), .string(let r)): return ValueComparison.order(l, r)
        case (.standard(let l), .standard(let r)):
            if l == r { return .orderedSame }
            return l.lexicographicallyPrecedes(r) ? .orderedAscending : .orderedDescending
        case (.date(let l), .date(let r)): return ValueComparison.order(l, r)
        case (.data(let l), .data(let r)):
            if l == r { return .orderedSame }
            return l.lexicographicallyPrecedes(r) ? .orderedAscending : .orderedDescending
        case (.object(let l), .object(let r)):
            return l == r ? .orderedSame : (l < r ? .orderedAscending : .orderedDescending)
        case (.array(let l), .array(let r)):
            for (left, right) in zip(l, r) {
                let result = compare(left, right)
                if result != .orderedSame { return result }
            }
            return l.count == r.count ? .orderedSame : (l.count < r.count ? .orderedAscending : .orderedDescending)
        default:
            return lhs.rank < rhs.rank ? .orderedAscending : (lhs.rank > rhs.rank ? .orderedDescending : .orderedSame)
        }
    }
}

extension SortKey {
    /// The keys of one sort column as dense ranks, so that sorting compares integers rather than enums.
    ///
    /// Null is 0 and the other keys rank from 1 in ascending order, equal keys sharing a rank, so comparing two ranks
    /// gives exactly `compare(_:_:)` of the two keys. Only for a column whose non-null keys are all integers (and
    /// booleans, which sort as 0 and 1) or all strings (as `compare:` and `caseInsensitiveCompare:` prepare them);
    /// nil for anything else. O(n) hashing plus sorting the distinct keys.
    static func denseRanks(count: Int, key: (Int) -> SortKey) -> [Int32]? {
        guard count < Int(Int32.max) else { return nil }
        // Each key's slot among the distinct keys (-1: null), then the slots' order.
        var slots = [Int32](repeating: -1, count: count)
        var integers: [Int64: Int32] = [:]
        var strings: [String: Int32] = [:]
        var distinctIntegers: [Int64] = []
        var distinctStrings: [String] = []
        for index in 0..<count {
            switch key(index) {
            case .null:
                continue
            case .number(.integer(let value)):
                guard distinctStrings.isEmpty else { return nil }
                if let slot = integers[value] {
                    slots[index] = slot
                } else {
                    let slot = Int32(distinctIntegers.count)
                    integers[value] = slot
                    distinctIntegers.append(value)
                    slots[index] = slot
                }
            case .string(let value):
                guard distinctIntegers.isEmpty else { return nil }
                if let slot = strings[value] {
                    slots[index] = slot
                } else {
                    let slot = Int32(distinctStrings.count)
                    strings[value] = slot
                    distinctStrings.append(value)
                    slots[index] = slot
                }
            default:
                return nil
            }
        }
        // Distinct keys never compare equal, so any sort of them gives the one ascending order.
        let ascending =
            distinctStrings.isEmpty
            ? distinctIntegers.indices.sorted { distinctIntegers[$0] < distinctIntegers[$1] }
            : distinctStrings.indices.sorted { distinctStrings[$0] < distinctStrings[$1] }
        var rankOfSlot = [Int32](repeating: 0, count: ascending.count)
        for (position, slot) in ascending.enumerated() { rankOfSlot[slot] = Int32(position + 1) }
        return slots.map { $0 < 0 ? 0 : rankOfSlot[Int($0)] }
    }
}
