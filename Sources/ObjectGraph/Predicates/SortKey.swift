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
