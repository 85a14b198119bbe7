import Foundation
import PropertyList

/// A comparison (NSComparisonPredicate): `[ANY|ALL|NONE] left OPERATOR[options] right`.
///
/// A constant right-hand side is prepared once when the comparison is made: folded for `[c]`/`[d]`, compiled for
/// `LIKE` and `MATCHES`, read as a date and as an object reference. Evaluation then allocates nothing for ASCII
/// strings of up to 15 bytes. A class, so that walking the predicate tree retains one reference rather than
/// copying every field.
final class ComparisonPredicate: Sendable {
    /// How the left-hand side is quantified (NSComparisonPredicateModifier, plus `NONE` = `NOT ANY`).
    enum Modifier: Sendable, Hashable {
        case direct, any, all, none
    }

    /// The comparison operator (NSPredicateOperatorType).
    enum Operator: Sendable, Hashable {
        case equalTo, notEqualTo, lessThan, lessThanOrEqualTo, greaterThan, greaterThanOrEqualTo
        case matches, like, beginsWith, endsWith, contains, `in`, between

        /// `<`, `<=`, `>`, `>=` (`compare:`).
        var isOrdering: Bool {
            self == .lessThan || self == .lessThanOrEqualTo || self == .greaterThan || self == .greaterThanOrEqualTo
        }

        /// The operators that only strings answer (`CONTAINS` too, unless the left side is a collection).
        var isStringOperator: Bool {
            self == .matches || self == .like || self == .beginsWith || self == .endsWith || self == .contains
        }
    }

    /// `[c]`, `[d]` and `[n]` (the last is accepted and has no effect: strings already compare canonically).
    struct Options: OptionSet, Sendable, Hashable {
        let rawValue: UInt8
        static let caseInsensitive = Options(rawValue: 1)
        static let diacriticInsensitive = Options(rawValue: 2)
        static let normalized = Options(rawValue: 4)
    }

    let modifier: Modifier
    let left: PredicateExpression
    let op: Operator
    let options: Options
    let right: PredicateExpression
    /// The right-hand constant with its strings folded as the options ask.
    private let constant: KeyValue?
    /// The right-hand constant string read as an ISO 8601 date, when it is one.
    private let constantDate: Date?
    private let like: LikePattern?
    private let regex: RegularExpression?
    /// The elements of a constant `IN` array of strings only (folded) or integers only, for a lookup rather than a
    /// scan per object: a list of 100,000 held the store's lock for 10 s over 5,000 objects.
    private let members: Members?

    private enum Members {
        case strings(Set<String>)
        case integers(Set<Int64>)
    }
    /// The 1-based columns of the left- and right-hand sides in the format string, for errors found later.
    let leftColumn: Int
    let rightColumn: Int

    private var caseInsensitive: Bool { options.contains(.caseInsensitive) }
    private var diacriticInsensitive: Bool { options.contains(.diacriticInsensitive) }

    /// Makes the comparison; throws the regular-expression error of a constant `MATCHES` pattern.
    init(
        modifier: Modifier, left: PredicateExpression, op: Operator, options: Options, right: PredicateExpression,
        leftColumn: Int, rightColumn: Int
    ) throws {
        self.modifier = modifier
        self.leftColumn = leftColumn
        self.rightColumn = rightColumn
        self.left = left
        self.op = op
        self.options = options
        self.right = right
        guard case .constant(let constant) = right else {
            self.constant = nil
            constantDate = nil
            like = nil
            regex = nil
            members = nil
            return
        }
        let ci = options.contains(.caseInsensitive)
        let di = options.contains(.diacriticInsensitive)
        let folded = ComparisonPredicate.fold(constant, caseInsensitive: ci, diacriticInsensitive: di)
        var date: Date? = nil
        var like: LikePattern? = nil
        var regex: RegularExpression? = nil
        if case .string(let string) = constant {
            date = ISO8601.date(from: string)
            if op == .like {
                like = LikePattern(
                    StringFolding.foldKeepingCharacters(string, caseInsensitive: ci, diacriticInsensitive: di))
            }
            if op == .matches {
                // Only diacritics are folded: lower-casing a pattern would change `\D` into `\d`.
                let pattern = StringFolding.fold(string, caseInsensitive: false, diacriticInsensitive: di)
                // ICU's work per step grows with the pattern's groups, which the step bound does not see: a pattern
                // of thousands of groups took minutes to apply to a few strings. No sensible pattern is near this.
                guard pattern.utf16.count <= RegularExpression.maximumPatternLength else {
                    throw ObjectGraphError.badPredicate(
                        "The MATCHES pattern is longer than \(RegularExpression.maximumPatternLength) characters.",
                        column: rightColumn)
                }
                regex = try RegularExpression(pattern, caseInsensitive: ci)
            }
        }
        self.constant = .value(folded)
        members = op == .in ? Self.members(of: folded) : nil
        constantDate = date
        self.like = like
        self.regex = regex
    }

    /// The members of a constant array of strings only or integers only (a string and an integer are never equal,
    /// so a set of either answers `IN` for a left-hand value of its own kind exactly as the scan does).
    private static func members(of constant: PropertyListValue) -> Members? {
        guard case .array(let elements) = constant, elements.count > 8 else { return nil }
        var strings: Set<String> = []
        var integers: Set<Int64> = []
        for element in elements {
            switch element {
            case .string(let string) where integers.isEmpty: strings.insert(string)
            case .integer(let integer) where strings.isEmpty: integers.insert(integer)
            default: return nil
            }
        }
        return strings.isEmpty ? .integers(integers) : .strings(strings)
    }

    private static func fold(
        _ value: PropertyListValue, caseInsensitive: Bool, diacriticInsensitive: Bool
    ) -> PropertyListValue {
        switch value {
        case .string(let string):
            .string(
                StringFolding.fold(string, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
            )
        case .array(let elements):
            .array(
                elements.map {
                    fold($0, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
                })
        default: value
        }
    }

    /// Evaluates the comparison for `subject`.
    func evaluate(with subject: some PredicateSubject) throws -> Bool {
        let lhs = try left.value(of: subject)
        let rhs: KeyValue
        let rightFolded: Bool
        if let value = constant {
            rhs = value
            rightFolded = true
        } else {
            rhs = try right.value(of: subject)
            rightFolded = false
        }
        switch modifier {
        case .direct:
            // A collection on the left is one value, as in Foundation's in-memory evaluation (which array
            // controllers use): equal only to an equal collection, never ordered, no string; `CONTAINS` and `IN`
            // test membership. `ANY`, `ALL` and `NONE` look at its elements.
            return try test(lhs, rhs, rightFolded: rightFolded)
        case .any:
            return try Self.someElement(of: lhs) { element throws(ObjectGraphError) in
                try test(element, rhs, rightFolded: rightFolded)
            }
        case .none:
            return try !Self.someElement(of: lhs) { element throws(ObjectGraphError) in
                try test(element, rhs, rightFolded: rightFolded)
            }
        case .all:
            return try !Self.someElement(of: lhs) { element throws(ObjectGraphError) in
                try !test(element, rhs, rightFolded: rightFolded)
            }
        }
    }

    /// Whether `body` holds for an element a quantifier looks at (`ValueComparison.elements`: a collection's or an
    /// array's elements, none for null, else the value itself). The elements of nested collections are taken in
    /// turn: a key path through two to-manys (`directReports.directReports.salary`) gives a collection per object,
    /// and `ANY`/`ALL`/`NONE` look through them as Core Data's fetches do (Foundation's in-memory evaluation raises).
    private static func someElement(
        of value: KeyValue, where body: (KeyValue) throws(ObjectGraphError) -> Bool
    ) throws(ObjectGraphError) -> Bool {
        switch value {
        case .collection(let elements):
            for element in elements {
                if case .collection = element {
                    if try someElement(of: element, where: body) { return true }
                } else if try body(element) {
                    return true
                }
            }
            return false
        case .value(.array(let elements)):
            for element in elements where try body(.value(element)) { return true }
            return false
        case .value(.null):
            return false
        default:
            return try body(value)
        }
    }

    /// The operator applied to one left value.
    private func test(_ lhs: KeyValue, _ rhs: KeyValue, rightFolded: Bool) throws(ObjectGraphError) -> Bool {
        var rhs = rhs
        if case .value(.date) = lhs, rightFolded, let date = constantDate { rhs = .value(.date(date)) }
        switch op {
        case .equalTo:
            return equal(lhs, rhs, rightFolded: rightFolded)
        case .notEqualTo:
            return !equal(lhs, rhs, rightFolded: rightFolded)
        case .lessThan:
            return order(lhs, rhs, rightFolded: rightFolded) == .orderedAscending
        case .lessThanOrEqualTo:
            guard let order = order(lhs, rhs, rightFolded: rightFolded) else { return false }
            return order != .orderedDescending
        case .greaterThan:
            return order(lhs, rhs, rightFolded: rightFolded) == .orderedDescending
        case .greaterThanOrEqualTo:
            guard let order = order(lhs, rhs, rightFolded: rightFolded) else { return false }
            return order != .orderedAscending
        case .between:
            let bounds = ValueComparison.elements(rhs)
            guard ValueComparison.isCollection(rhs), bounds.count == 2,
                let low = order(lhs, bounds[0], rightFolded: rightFolded),
                let high = order(lhs, bounds[1], rightFolded: rightFolded)
            else { return false }
            return low != .orderedAscending && high != .orderedDescending
        case .in:
            switch rhs {
            case .collection(let elements):
                for element in elements where equal(lhs, element, rightFolded: rightFolded) { return true }
                return false
            case .value(.array(let elements)):
                switch (rightFolded ? members : nil, lhs) {
                case (.strings(let strings), .value(.string(let string))):
                    return strings.contains(fold(string, already: false))
                case (.integers(let integers), .value(.integer(let integer))):
                    return integers.contains(integer)
                default:
                    for element in elements where equal(lhs, .value(element), rightFolded: rightFolded) { return true }
                    return false
                }
            case .value(.string(let container)):
                guard case .value(.string(let string)) = lhs else { return false }
                return StringFolding.contains(fold(container, already: rightFolded), fold(string, already: false))
            default:
                return false
            }
        case .contains:
            switch lhs {
            case .collection(let elements):
                for element in elements where equal(element, rhs, rightFolded: rightFolded) { return true }
                return false
            case .value(.array(let elements)):
                for element in elements where equal(.value(element), rhs, rightFolded: rightFolded) { return true }
                return false
            default:
                return strings(lhs, rhs, rightFolded: rightFolded, StringFolding.contains)
            }
        case .beginsWith:
            return strings(lhs, rhs, rightFolded: rightFolded, StringFolding.hasPrefix)
        case .endsWith:
            return strings(lhs, rhs, rightFolded: rightFolded, StringFolding.hasSuffix)
        case .like:
            // Folded character by character (`ß` stays one character for `?`), so neither side uses `fold`.
            guard case .value(.string(let string)) = lhs else { return false }
            let subject = StringFolding.foldKeepingCharacters(
                string, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
            if let like { return try matches(subject, like) }
            guard case .value(.string(let pattern)) = rhs else { return false }
            return try matches(
                subject,
                LikePattern(
                    StringFolding.foldKeepingCharacters(
                        pattern, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)))
        case .matches:
            guard case .value(.string(let string)) = lhs else { return false }
            let subject = StringFolding.fold(string, caseInsensitive: false, diacriticInsensitive: diacriticInsensitive)
            if let regex { return try matches(subject, regex) }
            guard case .value(.string(let pattern)) = rhs,
                pattern.utf16.count <= RegularExpression.maximumPatternLength,
                let regex = try? RegularExpression(
                    StringFolding.fold(pattern, caseInsensitive: false, diacriticInsensitive: diacriticInsensitive),
                    caseInsensitive: caseInsensitive)
            else { return false }
            return try matches(subject, regex)
        }
    }

    /// `MATCHES`; a match that reaches the regular-expression limit is a 400 `bad-predicate`, not a "no".
    private func matches(_ subject: String, _ regex: RegularExpression) throws(ObjectGraphError) -> Bool {
        do {
            return try regex.matchesWhole(subject)
        } catch {
            throw limitReached(error, "MATCHES", regex.pattern, "it backtracks too much")
        }
    }

    /// `LIKE`; a match that reaches its limit is a 400 `bad-predicate`, as for `MATCHES`.
    private func matches(_ subject: String, _ like: LikePattern) throws(ObjectGraphError) -> Bool {
        do {
            return try like.matches(subject)
        } catch {
            throw limitReached(error, "LIKE", like.pattern, "its segments with ? are tried at too many places")
        }
    }

    /// The error of a `MATCHES` or `LIKE` that reached a match limit (`ObjectGraphError.isMatchLimit`).
    private func limitReached(
        _ error: RegularExpression.LimitReached, _ op: String, _ pattern: String, _ why: String
    ) -> ObjectGraphError {
        let limit = error.isTotal ? "the limit of all its matches in one request" : "the matching limit"
        return ObjectGraphError(
            status: 400, code: "bad-predicate",
            message: "The \(op) pattern \(pattern) could not be matched within \(limit) (\(why)); simplify it.",
            fields: ["column": .integer(Int64(rightColumn)), "pattern": .string(pattern)])
    }

    private func fold(_ string: String, already: Bool) -> String {
        already
            ? string
            : StringFolding.fold(string, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
    }

    private func strings(
        _ lhs: KeyValue, _ rhs: KeyValue, rightFolded: Bool, _ body: (String, String) -> Bool
    ) -> Bool {
        guard case .value(.string(let string)) = lhs, case .value(.string(let other)) = rhs else { return false }
        return body(fold(string, already: false), fold(other, already: rightFolded))
    }

    private func equal(_ lhs: KeyValue, _ rhs: KeyValue, rightFolded: Bool) -> Bool {
        ValueComparison.equal(
            lhs, rhs, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive,
            rightFolded: rightFolded)
    }

    private func order(_ lhs: KeyValue, _ rhs: KeyValue, rightFolded: Bool) -> ComparisonResult? {
        ValueComparison.order(
            lhs, rhs, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive,
            rightFolded: rightFolded)
    }
}

extension ObjectGraphError {
    /// Whether this is the error of a `MATCHES` or `LIKE` that reached its own or a run's match limit (the only
    /// `bad-predicate` evaluation gives with the `pattern`).
    public var isMatchLimit: Bool { code == "bad-predicate" && fields["pattern"] != nil }
}
