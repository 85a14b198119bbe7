import PropertyList

/// A recursive-descent parser for the predicate format language, with Cocoa's precedence: NOT > AND > OR.
///
/// ```
/// predicate   := or
/// or          := and (("OR" | "||") and)*
/// and         := not (("AND" | "&&") not)*
/// not         := ("NOT" | "!") not | primary
/// primary     := "(" or ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | comparison
/// comparison  := ["ANY" | "SOME" | "ALL" | "NONE"] expression operator ["[" c|d|n... "]"] expression
/// operator    := == = != <> < <= =< > >= => BETWEEN IN BEGINSWITH ENDSWITH CONTAINS LIKE MATCHES
/// expression  := string | number | TRUE | YES | FALSE | NO | NIL | NULL | SELF | keyPath | "{" [expression ("," expression)*] "}"
/// ```
struct PredicateParser {
    /// How deep parentheses, `NOT`s and `{...}` may nest: the parser, the evaluator and the tree's release all
    /// recurse once per level, and a request must not be able to exhaust a thread's stack.
    static let maximumDepth = 100
    /// Terms (comparisons, `TRUEPREDICATE`, `FALSEPREDICATE`) in one predicate: each is evaluated on every object
    /// filtered (an `IN` list is one comparison).
    static let maximumTerms = 1_000

    private let tokens: [PredicateToken]
    private var position = 0
    private var depth = 0
    private var terms = 0

    private init(tokens: [PredicateToken]) {
        self.tokens = tokens
    }

    /// Parses `format` into a predicate tree; throws `bad-predicate` with the column of the offending token.
    static func parse(_ format: String) throws -> Predicate.Node {
        var parser = PredicateParser(tokens: try PredicateLexer.tokens(of: format))
        let node = try parser.parseOr()
        guard parser.current.kind == .end else { throw parser.unexpected("Expected AND, OR or the end") }
        return node
    }

    private var current: PredicateToken { tokens[position] }

    private mutating func advance() {
        if position < tokens.count - 1 { position += 1 }
    }

    private func unexpected(_ expectation: String) -> ObjectGraphError {
        let found = current.kind == .end ? "the end of the predicate" : "\"\(current.text)\""
        return ObjectGraphError.badPredicate("\(expectation), found \(found).", column: current.column)
    }

    /// Enters one more level of nesting (leave with `depth -= 1`); 400 `bad-predicate` past `maximumDepth`.
    private mutating func enterNesting() throws {
        depth += 1
        guard depth <= Self.maximumDepth else {
            throw ObjectGraphError.badPredicate(
                "The predicate nests more than \(Self.maximumDepth) levels deep.", column: current.column)
        }
    }

    private func isKeyword(_ keyword: PredicateToken.Keyword) -> Bool {
        current.kind == .keyword(keyword)
    }

    private func isSymbol(_ symbol: String) -> Bool {
        current.kind == .symbol(symbol)
    }

    private mutating func parseOr() throws -> Predicate.Node {
        var nodes = [try parseAnd()]
        while isKeyword(.or) || isSymbol("||") {
            advance()
            nodes.append(try parseAnd())
        }
        guard nodes.count > 1 else { return nodes[0] }
        return .or(
            nodes.flatMap { node -> [Predicate.Node] in
                if case .or(let inner) = node { return inner }
                return [node]
            })
    }

    private mutating func parseAnd() throws -> Predicate.Node {
        var nodes = [try parseNot()]
        while isKeyword(.and) || isSymbol("&&") {
            advance()
            nodes.append(try parseNot())
        }
        guard nodes.count > 1 else { return nodes[0] }
        return .and(
            nodes.flatMap { node -> [Predicate.Node] in
                if case .and(let inner) = node { return inner }
                return [node]
            })
    }

    private mutating func parseNot() throws -> Predicate.Node {
        if isKeyword(.not) || isSymbol("!") {
            try enterNesting()
            defer { depth -= 1 }
            advance()
            return .not(try parseNot())
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws -> Predicate.Node {
        if isSymbol("(") {
            try enterNesting()
            defer { depth -= 1 }
            advance()
            let node = try parseOr()
            guard isSymbol(")") else { throw unexpected("Expected \")\"") }
            advance()
            return node
        }
        terms += 1
        guard terms <= Self.maximumTerms else {
            throw ObjectGraphError.badPredicate(
                "The predicate has more than \(Self.maximumTerms) comparisons and constants; an IN list is one.",
                column: current.column)
        }
        if isKeyword(.truePredicate) {
            advance()
            return .constant(true)
        }
        if isKeyword(.falsePredicate) {
            advance()
            return .constant(false)
        }
        return .comparison(try parseComparison())
    }

    private mutating func parseComparison() throws -> ComparisonPredicate {
        var modifier = ComparisonPredicate.Modifier.direct
        if case .keyword(let keyword) = current.kind {
            switch keyword {
            case .any, .some: modifier = .any
            case .all: modifier = .all
            case .none: modifier = .none
            default: break
            }
            if modifier != .direct { advance() }
        }
        let leftColumn = current.column
        let left = try parseExpression()
        let op = try parseOperator()
        let options = try parseOptions(for: op)
        let rightColumn = current.column
        let right = try parseExpression()
        if op == .between {
            let isPair: Bool
            switch right {
            case .constant(.array(let bounds)): isPair = bounds.count == 2
            case .aggregate(let bounds): isPair = bounds.count == 2
            case .keyPath: isPair = true
            default: isPair = false
            }
            guard isPair else {
                throw ObjectGraphError.badPredicate("BETWEEN needs two bounds: {low, high}.", column: rightColumn)
            }
        }
        if op == .in, case .constant(let value) = right {
            // As Foundation: the right of IN is a collection (or a string to look in), never one number or date.
            switch value {
            case .array, .string: break
            default:
                throw ObjectGraphError.badPredicate("IN needs a collection: {a, b} or a key path.", column: rightColumn)
            }
        }
        do {
            return try ComparisonPredicate(
                modifier: modifier, left: left, op: op, options: options, right: right, leftColumn: leftColumn,
                rightColumn: rightColumn)
        } catch let error as ObjectGraphError {
            throw error
        } catch {
            throw ObjectGraphError.badPredicate(
                "The MATCHES pattern is not a valid regular expression.", column: rightColumn)
        }
    }

    private mutating func parseOperator() throws -> ComparisonPredicate.Operator {
        let op: ComparisonPredicate.Operator
        switch current.kind {
        case .symbol("=="): op = .equalTo
        case .symbol("!="): op = .notEqualTo
        case .symbol("<"): op = .lessThan
        case .symbol("<="): op = .lessThanOrEqualTo
        case .symbol(">"): op = .greaterThan
        case .symbol(">="): op = .greaterThanOrEqualTo
        case .keyword(.between): op = .between
        case .keyword(.in): op = .in
        case .keyword(.beginsWith): op = .beginsWith
        case .keyword(.endsWith): op = .endsWith
        case .keyword(.contains): op = .contains
        case .keyword(.like): op = .like
        case .keyword(.matches): op = .matches
        default: throw unexpected("Expected a comparison operator")
        }
        advance()
        return op
    }

    private mutating func parseOptions(for op: ComparisonPredicate.Operator) throws -> ComparisonPredicate.Options {
        guard isSymbol("[") else { return [] }
        let column = current.column
        advance()
        guard case .keyPath(let letters) = current.kind else { throw unexpected("Expected c, d or n") }
        var options: ComparisonPredicate.Options = []
        for letter in letters.lowercased() {
            switch letter {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n": options.insert(.normalized)
            default: throw unexpected("Expected c, d or n")
            }
        }
        advance()
        guard isSymbol("]") else { throw unexpected("Expected \"]\"") }
        advance()
        if op == .between {
            throw ObjectGraphError.badPredicate("BETWEEN takes no [cdn] options.", column: column)
        }
        return options
    }

    private mutating func parseExpression() throws -> PredicateExpression {
        let token = current
        switch token.kind {
        case .string(let value):
            advance()
            return .constant(.string(value))
        case .integer(let value):
            advance()
            return .constant(.integer(value))
        case .real(let value):
            advance()
            return .constant(.real(value))
        case .keyPath(let keyPath):
            advance()
            guard !isSymbol("(") else {
                throw ObjectGraphError.badPredicate(
                    "Functions (\(keyPath)(...)) are not supported: CAST, FUNCTION, SUBQUERY and the others are not "
                        + "part of Bindery's predicate language; compare a date with an ISO 8601 string instead of "
                        + "CAST.",
                    column: token.column)
            }
            return .keyPath(keyPath)
        case .keyword(.true), .keyword(.yes):
            advance()
            return .constant(.boolean(true))
        case .keyword(.false), .keyword(.no):
            advance()
            return .constant(.boolean(false))
        case .keyword(.nil), .keyword(.null):
            advance()
            return .constant(.null)
        case .keyword(.self):
            advance()
            return .evaluatedObject
        case .symbol("{"):
            try enterNesting()
            defer { depth -= 1 }
            advance()
            var elements: [PredicateExpression] = []
            if !isSymbol("}") {
                while true {
                    elements.append(try parseExpression())
                    if isSymbol("}") { break }
                    guard isSymbol(",") else { throw unexpected("Expected \",\" or \"}\"") }
                    advance()
                }
            }
            advance()
            var constants: [PropertyListValue] = []
            for element in elements {
                guard case .constant(let value) = element else { return .aggregate(elements) }
                constants.append(value)
            }
            return .constant(.array(constants))
        default:
            throw unexpected("Expected a key path or a value")
        }
    }
}
