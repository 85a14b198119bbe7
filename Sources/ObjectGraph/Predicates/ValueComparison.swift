import Foundation
import PropertyList

/// Equality and ordering of key-value coding results, as predicates and sort descriptors see them.
///
/// Numbers compare by value across integer, real and boolean (`false` is 0, `true` is 1), exactly, without going
/// through a lossy conversion. Strings compare as Foundation's `compare:` does (`order(_:_:)`),
/// dates chronologically, data byte by byte, objects by id, arrays and collections element by element. A string
/// compared with a date is read as an ISO 8601 timestamp, and a string compared with an object as an `Entity/id`
/// reference (Bindery extensions: the predicate language has no date or reference literals).
enum ValueComparison {
    /// Whether `value` is a collection: a to-many result or a property-list array.
    static func isCollection(_ value: KeyValue) -> Bool {
        switch value {
        case .collection, .value(.array): true
        default: false
        }
    }

    /// The elements of a collection, nothing for null, and the value itself otherwise.
    static func elements(_ value: KeyValue) -> [KeyValue] {
        switch value {
        case .collection(let elements): elements
        case .value(.array(let elements)): elements.map(KeyValue.value)
        case .value(.null): []
        default: [value]
        }
    }

    /// Equality; strings are folded as `caseInsensitive`/`diacriticInsensitive` ask (`rightFolded`: `rhs` already is).
    static func equal(
        _ lhs: KeyValue, _ rhs: KeyValue, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false,
        rightFolded: Bool = false
    ) -> Bool {
        switch (lhs, rhs) {
        case (.value(let l), .value(let r)):
            return equal(
                l, r, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive,
                rightFolded: rightFolded)
        case (.object(let l), .object(let r)):
            return l == r
        case (.object(let l), .value(.string(let r))):
            return ObjectID(reference: r) == l
        case (.value(.string(let l)), .object(let r)):
            return ObjectID(reference: l) == r
        default:
            guard isCollection(lhs), isCollection(rhs) else { return false }
            return elements(lhs).elementsEqual(elements(rhs)) {
                equal(
                    $0, $1, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive,
                    rightFolded: rightFolded)
            }
        }
    }

    /// Equality of property-list values (see `equal(_:_:caseInsensitive:diacriticInsensitive:rightFolded:)`).
    static func equal(
        _ lhs: PropertyListValue, _ rhs: PropertyListValue, caseInsensitive: Bool = false,
        diacriticInsensitive: Bool = false, rightFolded: Bool = false
    ) -> Bool {
        switch (lhs, rhs) {
        case (.string(let l), .string(let r)):
            guard caseInsensitive || diacriticInsensitive else { return l == r }
            let foldedLeft = StringFolding.fold(
                l, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
            let foldedRight =
                rightFolded
                ? r
                : StringFolding.fold(r, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
            return foldedLeft == foldedRight
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case (.array(let l), .array(let r)):
            return l.elementsEqual(r) {
                equal(
                    $0, $1, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive,
                    rightFolded: rightFolded)
            }
        case (.dictionary(let l), .dictionary(let r)):
            return l == r
        case (.data(let l), .data(let r)):
            return l == r
        default:
            return order(lhs, rhs) == .orderedSame
        }
    }

    /// The ordering of two values, or nil when they are not comparable (nil involved, or different kinds).
    static func order(
        _ lhs: KeyValue, _ rhs: KeyValue, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false,
        rightFolded: Bool = false
    ) -> ComparisonResult? {
        switch (lhs, rhs) {
        case (.value(let l), .value(let r)):
            return order(
                l, r, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive,
                rightFolded: rightFolded)
        case (.object(let l), .object(let r)):
            return l == r ? .orderedSame : (l < r ? .orderedAscending : .orderedDescending)
        default:
            return nil
        }
    }

    /// The ordering of two property-list values, or nil when they are not comparable.
    static func order(
        _ lhs: PropertyListValue, _ rhs: PropertyListValue, caseInsensitive: Bool = false,
        diacriticInsensitive: Bool = false, rightFolded: Bool = false
    ) -> ComparisonResult? {
        switch (lhs, rhs) {
        case (.string(let l), .string(let r)):
            if caseInsensitive || diacriticInsensitive {
                let foldedLeft = StringFolding.fold(
                    l, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
                let foldedRight =
                    rightFolded
                    ? r
                    : StringFolding.fold(
                        r, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
                return order(foldedLeft, foldedRight)
            }
            return order(l, r)
        case (.date(let l), .date(let r)):
            return order(l.timeIntervalSince1970, r.timeIntervalSince1970)
        case (.date(let l), .string(let r)):
            guard let date = ISO8601.date(from: r) else { return nil }
            return order(l.timeIntervalSince1970, date.timeIntervalSince1970)
        case (.string(let l), .date(let r)):
            guard let date = ISO8601.date(from: l) else { return nil }
            return order(date.timeIntervalSince1970, r.timeIntervalSince1970)
        case (.data(let l), .data(let r)):
            if l == r { return .orderedSame }
            return l.lexicographicallyPrecedes(r) ? .orderedAscending : .orderedDescending
        default:
            guard let l = Number(lhs), let r = Number(rhs) else { return nil }
            return l.compare(r)
        }
    }

    /// Foundation's non-literal order (`compare:`): canonically equivalent strings are the same, others compare by
    /// the scalars of their canonical decomposition, so an accented letter sorts right after its base letter
    /// (`Ångström` before `Bob`, `Éclair` before `Zebra`, `cafe` before `café`).
    static func order(_ lhs: String, _ rhs: String) -> ComparisonResult {
        literalOrder(collationForm(lhs), collationForm(rhs))
    }

    /// The form of `string` whose bytes compare in `order(_:_:)`'s order: its canonical decomposition (NFD), or the
    /// string itself when it is ASCII. Canonically equivalent strings have the same form.
    static func collationForm(_ string: String) -> String {
        StringFolding.isASCII(string) ? string : CanonicalDecomposition.of(string)
    }

    /// Byte order of the UTF-8 forms, which is Unicode scalar order.
    static func literalOrder(_ lhs: String, _ rhs: String) -> ComparisonResult {
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { l in
            rhs.withUTF8 { r in
                let count = min(l.count, r.count)
                if count > 0 {
                    let difference = memcmp(l.baseAddress!, r.baseAddress!, count)
                    if difference != 0 { return difference < 0 ? .orderedAscending : .orderedDescending }
                }
                return l.count == r.count ? .orderedSame : (l.count < r.count ? .orderedAscending : .orderedDescending)
            }
        }
    }

    static func order(_ lhs: Double, _ rhs: Double) -> ComparisonResult {
        lhs < rhs ? .orderedAscending : (lhs > rhs ? .orderedDescending : .orderedSame)
    }

    /// A number as predicates see it: an integer, a real, or a boolean read as 0 or 1.
    enum Number: Sendable {
        case integer(Int64)
        case real(Double)

        init?(_ value: PropertyListValue) {
            switch value {
            case .integer(let i): self = .integer(i)
            case .real(let r): self = .real(r)
            case .boolean(let b): self = .integer(b ? 1 : 0)
            default: return nil
            }
        }

        /// Exact comparison, also between an integer and a real beyond 2^53.
        func compare(_ other: Number) -> ComparisonResult {
            switch (self, other) {
            case (.integer(let l), .integer(let r)):
                return l < r ? .orderedAscending : (l > r ? .orderedDescending : .orderedSame)
            case (.real(let l), .real(let r)):
                return ValueComparison.order(l, r)
            case (.integer(let l), .real(let r)):
                return Number.compare(l, r)
            case (.real(let l), .integer(let r)):
                switch Number.compare(r, l) {
                case .orderedAscending: return .orderedDescending
                case .orderedDescending: return .orderedAscending
                case .orderedSame: return .orderedSame
                }
            }
        }

        private static func compare(_ integer: Int64, _ real: Double) -> ComparisonResult {
            if real.isNaN { return .orderedSame }
            if real >= 9.223_372_036_854_775_808e18 { return .orderedAscending }
            if real < -9.223_372_036_854_775_808e18 { return .orderedDescending }
            let whole = real.rounded(.down)
            let truncated = Int64(whole)
            if integer < truncated { return .orderedAscending }
            if integer > truncated { return .orderedDescending }
            return real > whole ? .orderedAscending : .orderedSame
        }
    }
}
