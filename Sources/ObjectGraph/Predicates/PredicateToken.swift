/// One token of a predicate format string, with the 1-based column (in Unicode scalars) where it starts.
struct PredicateToken: Sendable {
    /// The reserved words of the format language; matched case-insensitively.
    enum Keyword: String, Sendable, CaseIterable {
        case and = "AND", or = "OR", not = "NOT"
        case `in` = "IN", between = "BETWEEN", beginsWith = "BEGINSWITH", endsWith = "ENDSWITH"
        case contains = "CONTAINS", like = "LIKE", matches = "MATCHES"
        case any = "ANY", some = "SOME", all = "ALL", none = "NONE"
        case `true` = "TRUE", yes = "YES", `false` = "FALSE", no = "NO", `nil` = "NIL", null = "NULL"
        case `self` = "SELF", truePredicate = "TRUEPREDICATE", falsePredicate = "FALSEPREDICATE"

        private static let byName: [String: Keyword] = Dictionary(
            uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })

        /// The keyword spelled `word` in any ASCII case (`ın`, with a dotless i, is a key path, not `IN`).
        init?(word: String) {
            guard word.utf8.count <= 14, word.utf8.allSatisfy({ $0 < 0x80 }),
                let keyword = Keyword.byName[word.uppercased()]
            else { return nil }
            self = keyword
        }
    }

    enum Kind: Sendable, Equatable {
        case keyPath(String)
        case keyword(Keyword)
        case string(String)
        case integer(Int64)
        case real(Double)
        /// Punctuation and operators: `( ) { } [ ] ,` and `== != < <= > >= && || !` (`=`, `<>`, `=<`, `=>`
        /// arrive normalised to `==`, `!=`, `<=`, `>=`).
        case symbol(String)
        case end
    }

    let kind: Kind
    let column: Int
    /// The source text, for error messages.
    let text: String
}
