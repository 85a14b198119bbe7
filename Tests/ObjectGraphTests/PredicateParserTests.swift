import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

struct PredicateParserTests {
    /// Input and its canonical description.
    static let canonicalForms: [(String, String)] = [
        ("name == 'Ann'", #"name == "Ann""#),
        (#"name = "Ann""#, #"name == "Ann""#),
        ("a <> 1", "a != 1"),
        ("a =< 1", "a <= 1"),
        ("a => 1", "a >= 1"),
        ("a < -1.5", "a < -1.5"),
        ("name beginswith[cd] 'a'", #"name BEGINSWITH[cd] "a""#),
        ("name Like[c] 'a*'", #"name LIKE[c] "a*""#),
        ("a == 1 || b == 2 && c == 3", "a == 1 OR (b == 2 AND c == 3)"),
        ("(a == 1 or b == 2) and c == 3", "(a == 1 OR b == 2) AND c == 3"),
        ("!a == 1 AND b == 2", "NOT a == 1 AND b == 2"),
        ("NOT (a == 1 AND b == 2)", "NOT (a == 1 AND b == 2)"),
        ("a == 1 AND (b == 2 AND c == 3)", "a == 1 AND b == 2 AND c == 3"),
        ("x between {1, 5}", "x BETWEEN {1, 5}"),
        ("x IN {'a', 2, 2.5, -3, TRUE, NO, nil, NULL}", #"x IN {"a", 2, 2.5, -3, TRUE, FALSE, nil, nil}"#),
        ("x IN {}", "x IN {}"),
        ("x IN {y, 1}", "x IN {y, 1}"),
        ("some children.name == 'x'", #"ANY children.name == "x""#),
        ("ALL children BEGINSWITH 'Kid'", #"ALL children BEGINSWITH "Kid""#),
        ("none children == 'x'", #"NONE children == "x""#),
        ("SELF == 'a'", #"SELF == "a""#),
        ("self.name == 'a'", #"name == "a""#),
        ("truepredicate", "TRUEPREDICATE"),
        ("FALSEPREDICATE OR TRUEPREDICATE", "FALSEPREDICATE OR TRUEPREDICATE"),
        ("employees.@count > 3", "employees.@count > 3"),
        ("employees.@avg.salary >= 1e3", "employees.@avg.salary >= 1000.0"),
        ("#none == 1", "#none == 1"),
        (#"s == 'it\'s "q" \\ \n'"#, #"s == "it's \"q\" \\ \n""#),
        (#"s MATCHES '\d+'"#, #"s MATCHES "\\d+""#),
        ("0x1F == x", "31 == x"),
        (
            "i == -9223372036854775808 OR i == 9223372036854775807",
            "i == -9223372036854775808 OR i == 9223372036854775807"
        ),
        ("'bc' IN 'abcd'", #""bc" IN "abcd""#),
        // \u escapes, a surrogate pair making one character outside the BMP (as in JSON).
        (#"s == '\u00e9\uD83D\uDE00'"#, "s == \"\u{E9}\u{1F600}\""),
    ]

    @Test(arguments: canonicalForms)
    func printsCanonicalForm(input: String, canonical: String) throws {
        let predicate = try ObjectGraph.Predicate(format: input)
        #expect(predicate.description == canonical)
    }

    @Test(arguments: canonicalForms)
    func canonicalFormParsesBackToAnEqualPredicate(input: String, canonical: String) throws {
        let predicate = try ObjectGraph.Predicate(format: input)
        let reparsed = try ObjectGraph.Predicate(format: predicate.description)
        #expect(reparsed == predicate)
        #expect(reparsed.description == canonical)
    }

    @Test func keywordsAreCaseInsensitive() throws {
        let lower = try ObjectGraph.Predicate(format: "any a in {1} and not b contains[c] 'x' or c matches 'y'")
        let upper = try ObjectGraph.Predicate(format: "ANY a IN {1} AND NOT b CONTAINS[c] 'x' OR c MATCHES 'y'")
        #expect(lower == upper)
    }

    @Test func referencedKeyPathsInOrderWithoutDuplicates() throws {
        let predicate = try ObjectGraph.Predicate(
            format: "a == 1 AND (b.c > 2 OR a < 0) AND SELF.d IN {e, 1} AND SELF == 'x' AND ANY f.@count > 0")
        #expect(predicate.keyPaths == ["a", "b.c", "d", "e", "f.@count"])
        #expect(ObjectGraph.Predicate.truePredicate.keyPaths.isEmpty)
        #expect(predicate.aggregatedKeyPaths.map(\.keyPath) == ["f.@count"])
        let aggregated = try ObjectGraph.Predicate(format: "NOT ALL a.b > 1 OR NONE c == 2").aggregatedKeyPaths
        #expect(aggregated.map(\.keyPath) == ["a.b", "c"])
        #expect(aggregated.map(\.column) == [9, 25])
    }

    /// A format string and the column its error must name.
    static let syntaxErrors: [(String, Int)] = [
        ("name == ", 9),
        ("name === 'x'", 8),
        ("name == 'abc", 9),
        ("(a == 1", 8),
        ("a == 1 b == 2", 8),
        ("a BETWEEN {1}", 11),
        ("a MATCHES '(['", 11),
        ("a MATCHES 'a)|(b'", 11),
        ("a ==[x] 1", 6),
        ("a & b", 3),
        ("$x == 1", 1),
        ("a", 2),
        ("== 1", 1),
        ("a == {1, 2", 11),
        ("a == 1 AND", 11),
        ("a == 12abc", 6),
        ("a == 1e999", 6),
        // Integers beyond 64 bits, decimal as hexadecimal (they were rounded to a double: -2^63 - 1 matched -2^63).
        ("i == -9223372036854775809", 6),
        ("i == 9223372036854775808", 6),
        ("i == 0x10000000000000000", 6),
        ("a == 'x' ^", 10),
        ("é == 'é' AND ?", 14),
        // A lone surrogate, high or low: the column of its escape.
        (#"s == 'a\uD83Db'"#, 8),
        (#"s == 'a\uDE00'"#, 8),
        (#"s == '\uD83D\u0041'"#, 7),
        // IN needs a collection (or a string) on its right.
        ("salary IN 5", 11),
        ("a IN NIL", 6),
        // Functions are not part of the language: the column of their name.
        ("hireDate > CAST('2015-01-01', 'NSDate')", 12),
        ("FUNCTION(salary, 'abs') > 1", 1),
        // Keywords are ASCII: `ın` (dotless i) is a key path, so IN is missing.
        ("lastName ın {'a'}", 10),
        // A pattern longer than 4,096 characters (ICU's work per step grows with its groups).
        ("a MATCHES '" + String(repeating: "(a|b)*", count: 700) + "'", 11),
    ]

    @Test(arguments: syntaxErrors)
    func syntaxErrorsAreBadPredicateWithColumn(format: String, column: Int) {
        #expect {
            _ = try ObjectGraph.Predicate(format: format)
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.status == 400 && error.code == "bad-predicate"
                && error.fields["column"] == .integer(Int64(column))
        }
    }

    @Test func nestingIsBoundedSoThatNoRequestCanExhaustTheStack() throws {
        let limit = 100
        for (open, close) in [("(", ")"), ("NOT ", ""), ("!", "")] {
            let within = String(repeating: open, count: limit) + "salary > 1" + String(repeating: close, count: limit)
            _ = try ObjectGraph.Predicate(format: within)
            for count in [limit + 1, 50_000] {
                let deep = String(repeating: open, count: count) + "salary > 1" + String(repeating: close, count: count)
                #expect {
                    _ = try ObjectGraph.Predicate(format: deep)
                } throws: { error in
                    (error as? ObjectGraphError)?.code == "bad-predicate"
                        && (error as? ObjectGraphError)?.fields["column"] == .integer(Int64(limit * open.count + 1))
                }
            }
        }
        let arrays = "a IN " + String(repeating: "{", count: 50_000) + String(repeating: "}", count: 50_000)
        #expect(throws: ObjectGraphError.self) { _ = try ObjectGraph.Predicate(format: arrays) }
    }

    /// Each comparison (and constant) is evaluated on every object filtered: at most 1,000 in one predicate (16,000
    /// ORed clauses over 2,000 objects held the store for 12 s, and 60,000 FALSEPREDICATEs twice what 1,000
    /// comparisons cost); an IN list, however long, is one.
    @Test func termsAreBounded() throws {
        func chain(_ count: Int, _ term: String = "salary == 1") -> String {
            Array(repeating: term, count: count).joined(separator: " OR ")
        }
        _ = try ObjectGraph.Predicate(format: chain(1_000))
        _ = try ObjectGraph.Predicate(format: chain(999) + " OR FALSEPREDICATE")
        for terms in [chain(1_001), chain(1_000) + " OR TRUEPREDICATE", chain(1_001, "FALSEPREDICATE")] {
            let error = expectError("bad-predicate", status: 400) { _ = try ObjectGraph.Predicate(format: terms) }
            #expect(error?.message.contains("1000 comparisons and constants") == true)
        }
        let list = "salary IN {" + (0..<50_000).map(String.init).joined(separator: ", ") + "}"
        _ = try ObjectGraph.Predicate(format: list)
    }
}
