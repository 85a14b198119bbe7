/// A filter in the NSPredicate format language (API.md §6), parsed once and evaluated many times.
///
/// `Predicate(format:)` parses `lastName BEGINSWITH[c] 'a' AND salary > 50000` into a tree whose constant operands
/// are prepared (folded, `LIKE`/`MATCHES` patterns compiled), so evaluation does no parsing and, for short ASCII
/// strings, no allocation. `description` prints the canonical form, which parses back to an equal predicate;
/// equality and hashing go by that form. A value type: safe to share between threads.
///
/// In a file that also imports Foundation, spell it `ObjectGraph.Predicate` if the compiler finds
/// `Foundation.Predicate` ambiguous.
public struct Predicate: Sendable, Hashable, CustomStringConvertible {
    /// The predicate tree (NSCompoundPredicate and NSComparisonPredicate).
    indirect enum Node: Sendable {
        case constant(Bool)
        case not(Node)
        case and([Node])
        case or([Node])
        case comparison(ComparisonPredicate)
    }

    let root: Node

    /// The canonical format string.
    public let description: String

    /// The key paths the predicate reads, in order of first appearance (`SELF.` dropped); a controller re-filters
    /// when one of them changes.
    public let keyPaths: [String]

    /// The key paths on the left of `ANY`, `ALL`, `NONE` or `SOME` (they must give collections), with the column
    /// where each comparison's left side starts.
    public let aggregatedKeyPaths: [(keyPath: String, column: Int)]

    init(root: Node) {
        self.root = root
        description = Predicate.format(root)
        var keyPaths: [String] = []
        Predicate.collectKeyPaths(root, into: &keyPaths)
        self.keyPaths = keyPaths
        var aggregated: [(keyPath: String, column: Int)] = []
        Predicate.collectAggregatedKeyPaths(root, into: &aggregated)
        self.aggregatedKeyPaths = aggregated
    }

    /// Parses a predicate format string.
    ///
    /// Throws `ObjectGraphError` 400 `bad-predicate` with the 1-based `column` (in Unicode scalars) of the offending
    /// token, also for a `MATCHES` literal that is not a valid regular expression.
    public init(format: String) throws {
        self.init(root: try PredicateParser.parse(format))
    }

    /// `TRUEPREDICATE`: every subject passes.
    public static let truePredicate = Predicate(root: .constant(true))
    /// `FALSEPREDICATE`: no subject passes.
    public static let falsePredicate = Predicate(root: .constant(false))

    /// Whether `subject` satisfies the predicate; key paths are read through `resolver`, whose errors (such as
    /// `undefined-key`) propagate.
    public func evaluate(with subject: KeyValue, resolver: some KeyPathResolving) throws -> Bool {
        try Predicate.evaluate(root, with: ResolvedSubject(evaluatedObject: subject, resolver: resolver))
    }

    /// Whether `subject` satisfies the predicate (the generic core of every public `evaluate` and `filter`).
    func evaluate(with subject: some PredicateSubject) throws -> Bool {
        try Predicate.evaluate(root, with: subject)
    }

    /// The subjects that satisfy the predicate, in their order.
    public func filter(_ subjects: [KeyValue], resolver: some KeyPathResolving) throws -> [KeyValue] {
        try subjects.filter { try evaluate(with: $0, resolver: resolver) }
    }

    /// The elements whose subject satisfies the predicate, in their order (for example `[ObjectID]` with `.object`).
    public func filter<Element>(
        _ elements: [Element], subject: (Element) -> KeyValue, resolver: some KeyPathResolving
    ) throws -> [Element] {
        try elements.filter { try evaluate(with: subject($0), resolver: resolver) }
    }

    private static func evaluate(_ node: Node, with subject: some PredicateSubject) throws -> Bool {
        switch node {
        case .constant(let value):
            return value
        case .not(let inner):
            return try !evaluate(inner, with: subject)
        case .and(let nodes):
            for node in nodes where try !evaluate(node, with: subject) { return false }
            return true
        case .or(let nodes):
            for node in nodes where try evaluate(node, with: subject) { return true }
            return false
        case .comparison(let comparison):
            return try comparison.evaluate(with: subject)
        }
    }

    private static func collectKeyPaths(_ node: Node, into keyPaths: inout [String]) {
        forEachComparison(in: node) { comparison in
            comparison.left.collectKeyPaths(into: &keyPaths)
            comparison.right.collectKeyPaths(into: &keyPaths)
        }
    }

    private static func collectAggregatedKeyPaths(_ node: Node, into keyPaths: inout [(keyPath: String, column: Int)]) {
        forEachComparison(in: node) { comparison in
            guard comparison.modifier != .direct else { return }
            var left: [String] = []
            comparison.left.collectKeyPaths(into: &left)
            keyPaths += left.map { ($0, comparison.leftColumn) }
        }
    }

    /// Every comparison of the predicate, in order of appearance.
    var comparisons: [ComparisonPredicate] {
        var comparisons: [ComparisonPredicate] = []
        Predicate.forEachComparison(in: root) { comparisons.append($0) }
        return comparisons
    }

    private static func forEachComparison(in node: Node, _ body: (ComparisonPredicate) -> Void) {
        switch node {
        case .constant: break
        case .not(let inner): forEachComparison(in: inner, body)
        case .and(let nodes), .or(let nodes):
            for node in nodes { forEachComparison(in: node, body) }
        case .comparison(let comparison): body(comparison)
        }
    }

    public static func == (lhs: Predicate, rhs: Predicate) -> Bool {
        lhs.description == rhs.description
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(description)
    }
}
