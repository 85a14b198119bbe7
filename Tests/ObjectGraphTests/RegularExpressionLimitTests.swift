import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

/// The bound on the work of one regular-expression match (`pattern` and `MATCHES`).
struct RegularExpressionLimitTests {
    /// `(a+)+b` fails on a run of `a`s only after trying every way of splitting it: 2^40 ways here.
    static let catastrophic = "(a+)+b"
    static let longRunOfA = String(repeating: "a", count: 40)

    @Test func aBacktrackingPatternReachesTheLimitInsteadOfRunningForHours() throws {
        let expression = try RegularExpression(Self.catastrophic)
        #expect(throws: RegularExpression.LimitReached.self) { try expression.matchesWhole(Self.longRunOfA) }
        // The same pattern decides short strings and strings it matches at once.
        #expect(try !expression.matchesWhole("aaaa"))
        #expect(try expression.matchesWhole(Self.longRunOfA + "b"))
    }

    @Test func theAllowanceGrowsWithTheStringSoLongLinearMatchesSucceed() throws {
        let long = String(repeating: "ab", count: 500_000)
        #expect(try RegularExpression("(?:ab)*").matchesWhole(long))
        #expect(try !RegularExpression("(?:ab)*c").matchesWhole(long))
        #expect(try RegularExpression("[a-z]+").matchesWhole(long))
    }

    @Test func manyMatchesEachUnderTheirLimitShareATotalOne() throws {
        let expression = try RegularExpression(Self.catastrophic)
        let run = try #require(Self.longestDecidedRun(of: expression))
        // Alone, every match is decided (a "no")...
        for _ in 0..<3 { #expect(try !expression.matchesWhole(run)) }
        // ...but under one total limit the same matches run out of it, long before 10,000 of them.
        var decided = 0
        let error = #expect(throws: RegularExpression.LimitReached.self) {
            try RegularExpression.withTotalLimit {
                for _ in 0..<10_000 {
                    _ = try expression.matchesWhole(run)
                    decided += 1
                }
            }
        }
        #expect(error?.isTotal == true)
        #expect(decided > 0 && decided < 10_000)
        // The limit ends with the run: the next match is decided again.
        #expect(try !expression.matchesWhole(run))
    }

    @Test func aStringThatReachedTheLimitOnceThrowsAtOnceAfter() throws {
        let expression = try RegularExpression(Self.catastrophic)
        #expect(throws: RegularExpression.LimitReached.self) { try expression.matchesWhole(Self.longRunOfA) }
        // Each match of it would take its own limit's reports from a total one: 250 would use it up. Remembered,
        // none does.
        RegularExpression.withTotalLimit {
            for _ in 0..<1_000 {
                let error = #expect(throws: RegularExpression.LimitReached.self) {
                    try expression.matchesWhole(Self.longRunOfA)
                }
                #expect(error?.isTotal == false)
            }
            #expect(!RegularExpression.isTotalLimitReached)
        }
        // Other strings are matched as before, and a limit reached on the shared allowance is not remembered.
        #expect(try !expression.matchesWhole("aaaa"))
        #expect(try expression.matchesWhole(Self.longRunOfA + "b"))
        let run = try #require(Self.longestDecidedRun(of: expression))
        _ = try? RegularExpression.withTotalLimit { for _ in 0..<10_000 { _ = try expression.matchesWhole(run) } }
        #expect(try !expression.matchesWhole(run))
    }

    /// The longest run of `a`s (up to 40) on which `expression` is decided within a single match's limit.
    static func longestDecidedRun(of expression: RegularExpression) -> String? {
        var longest: String?
        for length in 8...40 {
            let run = String(repeating: "a", count: length)
            guard (try? expression.matchesWhole(run)) != nil else { break }
            longest = run
        }
        return longest
    }

    @Test func overflowingTheBacktrackingStackIsALimitToo() throws {
        let expression = try RegularExpression("(a|b)*c")
        #expect(throws: RegularExpression.LimitReached.self) {
            try expression.matchesWhole(String(repeating: "a", count: 2_000_000))
        }
    }

    @Test func aStrayParenthesisIsNotBalancedByTheAnchoring() {
        #expect(throws: (any Error).self) { try RegularExpression("a)|(b") }
        #expect(throws: (any Error).self) { try RegularExpression("(") }
    }

    @Test func anAttributeWhosePatternReachesTheLimitFailsValidation() throws {
        let model = try model(
            #"{"entities": {"Item": {"attributes": {"code": {"type": "string", "pattern": "\#(Self.catastrophic)"}}}}}"#
        )
        let store = ObjectStore(model: model)
        let error = expectError("validation-failed", status: 422) {
            try store.transaction { tx in try tx.insert("Item", id: "1", values: ["code": .string(Self.longRunOfA)]) }
        }
        #expect(error?.message.contains("matching limit") == true)
        #expect(store.seq == 0)
        try store.transaction { tx in try tx.insert("Item", id: "1", values: ["code": "aab"]) }
        #expect(store.seq == 1)
    }
}
