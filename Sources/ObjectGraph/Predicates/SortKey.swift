import Foundation
import PropertyList

/// One subject's value for one sort descriptor, prepared for cheap repeated comparison (the "decorate" of
/// decorate–sort–undecorate): strings are folded and numeric runs encoded once, not per comparison.
enum SortKey: Sendable {
    case null
    case number(ValueComparison.Number)
    /// `compare:` and `caseInsensitiveCompare:`: the (folded) string's collation form, compared byte by byte.
    case string(String)
    /// `localizedStandardCompare:`: folded scalars weighted by their class, each run of digits as one weight, its
    /// length, then its digits; and the string itself, for the tie-breaks.
    case standard([UInt32], String)
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
            case .compare: self = .string(ValueComparison.collationForm(value))
            case .caseInsensitiveCompare:
                self = .string(
                    ValueComparison.collationForm(
                        StringFolding.fold(value, caseInsensitive: true, diacriticInsensitive: false)))
            case .localizedStandardCompare:
                self = .standard(SortKey.standardScalars(value, diacriticInsensitive: true), value)
            }
        }
    }

    /// Folded scalars weighted so that a plain lexicographic comparison follows the root collation's groups and is
    /// numeric-aware, as the Finder sorts names.
    ///
    /// Each scalar's weight is its group (white space and controls, then punctuation, then symbols, then currency
    /// symbols, then digits, then letters and everything else), then its place within the group: the root
    /// collation's order for common punctuation and symbols (`_ - , ; : ! ? . ' " ( ) [ ] { } @ * / \ & # %`, then
    /// `` ` ^ + < = > | ~ ``, then `$`: `collationRanks`), before the rest of the group by code point. A run of
    /// decimal digits (of any script) becomes the digits' weight, its length without leading zeros, then its digit
    /// values: a shorter number is smaller, and equal lengths compare digit by digit. Without `diacriticInsensitive`,
    /// accents count (the first tie-break); with it, compatibility forms count as what they stand for (full-width
    /// `Ａ`, `ℌ`, `ﬁ`: `NSWidthInsensitiveSearch` and the root collation's primary weights) except numbers, which no
    /// run of digits takes in (`²`, `③`, `½` stay symbols of their own, as ICU sorts them), and the letters that have
    /// no decomposition but sort with a base letter in the root collation (`ø`, `æ`, `ł`...) are spelled with it.
    private static func standardScalars(_ string: String, diacriticInsensitive: Bool) -> [UInt32] {
        var folded: String
        if diacriticInsensitive, !StringFolding.isASCII(string) {
            var compatible = String.UnicodeScalarView()
            for scalar in string.unicodeScalars {
                let numeric = scalar.properties.numericType
                if scalar.isASCII || numeric == .decimal {
                    compatible.append(scalar)
                    continue
                }
                let decomposed = String(scalar).decomposedStringWithCompatibilityMapping.unicodeScalars
                // A number whose decomposition holds digits (², ③, ½) stays itself; Ⅸ is the letters IX.
                if numeric != nil, decomposed.contains(where: { $0.properties.numericType == .decimal }) {
                    compatible.append(scalar)
                } else {
                    compatible.append(contentsOf: decomposed)
                }
            }
            folded = StringFolding.fold(String(compatible), caseInsensitive: true, diacriticInsensitive: true)
            folded = String(folded.unicodeScalars.lazy.flatMap { Self.baseLetters[$0] ?? String($0) })
        } else {
            folded = StringFolding.fold(string, caseInsensitive: true, diacriticInsensitive: diacriticInsensitive)
        }
        var result: [UInt32] = []
        result.reserveCapacity(folded.utf8.count + 4)
        var digits: [UInt32] = []
        func flushDigits() {
            guard !digits.isEmpty else { return }
            var start = 0
            while start < digits.count - 1, digits[start] == 0 { start += 1 }
            result.append(Group.digit.weight)
            result.append(UInt32(digits.count - start))
            result.append(contentsOf: digits[start...])
            digits.removeAll(keepingCapacity: true)
        }
        for scalar in folded.unicodeScalars {
            let group = Group(scalar)
            if group == .digit {
                digits.append(scalar.value < 0x80 ? scalar.value - 0x30 : UInt32(scalar.properties.numericValue ?? 0))
            } else {
                flushDigits()
                result.append(
                    group.weight | (group == .letter ? scalar.value : Self.collationRanks[scalar] ?? scalar.value))
            }
        }
        flushDigits()
        return result
    }

    /// The groups of the root collation, in their order (code points fit in 21 bits; the group is above them).
    private enum Group: UInt32 {
        case space = 1, punctuation, symbol, currency, digit, letter

        var weight: UInt32 { rawValue << 21 }

        init(_ scalar: Unicode.Scalar) {
            switch scalar.value {
            case 0x30...0x39: self = .digit
            case 0x61...0x7A, 0x41...0x5A: self = .letter
            case 0...0x20, 0x7F: self = .space
            case 0x24: self = .currency
            case 0x2B, 0x3C...0x3E, 0x5E, 0x60, 0x7C, 0x7E: self = .symbol
            case 0x21...0x7D: self = .punctuation
            default:
                let properties = scalar.properties
                if properties.numericType == .decimal {
                    self = .digit
                    return
                }
                switch properties.generalCategory {
                case .spaceSeparator, .lineSeparator, .paragraphSeparator, .control, .format: self = .space
                case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
                    .initialPunctuation, .finalPunctuation, .otherPunctuation:
                    self = .punctuation
                case .currencySymbol: self = .currency
                case .mathSymbol, .modifierSymbol, .otherSymbol: self = .symbol
                default: self = .letter
                }
            }
        }
    }

    /// The places of punctuation and symbols (ASCII, Latin-1, General Punctuation) within their groups: the root
    /// collation's order (ICU 72, primary strength; the scalars of one string are equal), below every other scalar's
    /// code point.
    private static let collationRanks: [Unicode.Scalar: UInt32] = {
        let order = [
            "‾", "_", "‗", "-", "‐‑", "‒", "–", "—", "―", "⁓", ",", ";", "⁏", ":", "!", "‼", "⁉", "¡", "?", "⁈", "⁇",
            "¿", "‽", ".․", "‥", "…", "·", "⁕", "⁖", "⁘", "⁙", "⁚", "⁛", "⁜", "⁝", "⁞", "'", "‘", "’", "‚", "‛", "‹",
            "›", "\"", "“", "”", "„", "‟", "«", "»", "(", ")", "[", "]", "{", "}", "⁅", "⁆", "‖", "§", "¶", "⁋", "@",
            "*", "⁎", "⁑", "/", "\\", "&", "⁊", "#", "%", "‰", "‱", "†", "‡", "•", "‣", "‧", "⁃", "⁌", "⁍", "′", "″",
            "‴", "⁗", "‵", "‶", "‷", "‸", "※", "‿", "⁔", "⁀", "⁐", "⁁", "⁂", "`", "´", "^", "¯", "¨", "¸", "°", "©",
            "®", "+", "±", "÷", "×", "<", "=", ">", "¬", "|", "¦", "~", "⁒", "⁄", "¤", "¢", "$", "£", "¥",
        ]
        var ranks: [Unicode.Scalar: UInt32] = [:]
        for (rank, scalars) in order.enumerated() {
            for scalar in scalars.unicodeScalars { ranks[scalar] = UInt32(rank) }
        }
        return ranks
    }()

    /// Letters without a canonical decomposition that the root collation sorts as (or after) base letters.
    private static let baseLetters: [Unicode.Scalar: String] = [
        "ø": "o", "æ": "ae", "œ": "oe", "ß": "ss", "ł": "l", "đ": "d", "ı": "i", "ħ": "h", "ŧ": "t", "ð": "d",
    ]

    /// `localizedStandardCompare:` never finds two different strings the same (`NSForcedOrderingSearch`): equal
    /// keys are ordered by their accents (none first), then their case (lower first), then the leading zeros of
    /// their numbers (fewer first), then their code points.
    private static func standardTieBreak(_ lhs: String, _ rhs: String) -> ComparisonResult {
        if lhs == rhs { return .orderedSame }
        func order<T: Comparable>(_ l: [T], _ r: [T]) -> ComparisonResult? {
            if l == r { return nil }
            return l.lexicographicallyPrecedes(r) ? .orderedAscending : .orderedDescending
        }
        if let accents = order(
            standardScalars(lhs, diacriticInsensitive: false), standardScalars(rhs, diacriticInsensitive: false))
        {
            return accents
        }
        func upperCase(_ string: String) -> [Int] { string.map { $0.isUppercase ? 1 : 0 } }
        if let cases = order(upperCase(lhs), upperCase(rhs)) { return cases }
        func digitRuns(_ string: String) -> [Int] {
            string.split(whereSeparator: { !$0.isASCII || !$0.isNumber }).map(\.count)
        }
        if let zeros = order(digitRuns(lhs), digitRuns(rhs)) { return zeros }
        return ValueComparison.literalOrder(ValueComparison.collationForm(lhs), ValueComparison.collationForm(rhs))
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
        case (.string(let l), .string(let r)): return ValueComparison.literalOrder(l, r)
        case (.standard(let l, let lString), .standard(let r, let rString)):
            if l == r { return standardTieBreak(lString, rString) }
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
        var strings: [CollationBytes: Int32] = [:]
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
                if let slot = strings[CollationBytes(value)] {
                    slots[index] = slot
                } else {
                    let slot = Int32(distinctStrings.count)
                    strings[CollationBytes(value)] = slot
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
            : distinctStrings.indices.sorted {
                ValueComparison.literalOrder(distinctStrings[$0], distinctStrings[$1]) == .orderedAscending
            }
        var rankOfSlot = [Int32](repeating: 0, count: ascending.count)
        for (position, slot) in ascending.enumerated() { rankOfSlot[slot] = Int32(position + 1) }
        return slots.map { $0 < 0 ? 0 : rankOfSlot[Int($0)] }
    }
}

/// A collation form (`ValueComparison.collationForm`) hashed and compared by its UTF-8 bytes: collation forms are
/// canonical, so equal bytes are equal strings, and a `String` key would normalize non-ASCII text at every hash.
private struct CollationBytes: Hashable {
    let form: String

    init(_ form: String) {
        self.form = form
    }

    static func == (lhs: CollationBytes, rhs: CollationBytes) -> Bool {
        lhs.form.utf8.elementsEqual(rhs.form.utf8)
    }

    func hash(into hasher: inout Hasher) {
        var form = form
        form.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
