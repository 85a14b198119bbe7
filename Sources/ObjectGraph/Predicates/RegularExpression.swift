import Foundation

/// An ICU regular expression (NSRegularExpression) that must match a whole string, with a bound on the work of
/// every match: the model's `pattern` constraint and the `MATCHES` operator.
///
/// A backtracking pattern such as `(a+)+b` takes time exponential in the length of the string it fails on, so an
/// unbounded match would let one request hold a thread for minutes. Each match therefore runs with ICU's progress
/// callback (which ICU calls every 10,000 matching steps, a fraction of a millisecond) and stops after
/// `stepAllowance(for:)` of them: 20, plus one per 1,000 UTF-16 code units of the string, far above what any
/// pattern that does not backtrack without bound needs. ICU's own 8 MB backtracking stack is the other limit. A
/// match stopped by either throws `LimitReached`; it is never taken as "no match".
///
/// Matches run inside `withTotalLimit(_:)` also draw on one allowance for all of them, so that many
/// matches each just under their own limit (a filter over many objects) cannot add up to minutes either. A string
/// whose match reached its own limit is remembered (`UndecidedStrings`) and throws at once the next time.
///
/// `@unchecked Sendable`: the wrapped expression is immutable after init and `NSRegularExpression` is documented as
/// safe to use from several threads at once.
public final class RegularExpression: @unchecked Sendable, Hashable {
    /// A match that hit the step limit or ICU's backtracking stack before it was decided.
    public struct LimitReached: Error {
        /// Whether the limit reached is the one shared by all the matches of a `withTotalLimit` run.
        public var isTotal = false
    }

    /// The progress reports the matches of a `withTotalLimit` run may still take.
    final class TotalAllowance: @unchecked Sendable {
        // Unchecked: a run's matches happen on the thread that started it (the task-local is not shared).
        var remaining: Int
        init(_ remaining: Int) { self.remaining = remaining }
    }

    @TaskLocal static var totalAllowance: TotalAllowance?

    /// The progress reports all the matches of a `withTotalLimit` run may take: 5,000, about half a second of
    /// backtracking. Matches that do not backtrack without bound take none (a report comes every 10,000 steps of
    /// one match).
    public static let totalReports = 5_000

    /// Runs `body` with one allowance of `totalReports` progress reports for all the matches it makes on this thread,
    /// besides each match's own: for work done under the store's lock (a listing's filter, a controller's check of
    /// a new filter), where many matches each just under their own limit would otherwise hold it for minutes. Once
    /// the allowance is used up every match of the run throws at once: the run fails as a whole, or whatever it
    /// made is made again.
    public static func withTotalLimit<T>(_ body: () throws -> T) rethrows -> T {
        try $totalAllowance.withValue(TotalAllowance(totalReports), operation: body)
    }

    /// Whether the matches of this thread's `withTotalLimit` run have used up its allowance.
    public static var isTotalLimitReached: Bool { (totalAllowance?.remaining ?? 0) < 0 }

    /// The longest `MATCHES` pattern a predicate may give, in UTF-16 units (400 `bad-predicate` beyond).
    public static let maximumPatternLength = 4_096

    /// The pattern as given.
    public let pattern: String
    private let expression: NSRegularExpression
    private let undecided = UndecidedStrings()

    /// Compiles `pattern` anchored at both ends; throws when it is not a valid ICU regular expression.
    public init(_ pattern: String, caseInsensitive: Bool = false) throws {
        let options: NSRegularExpression.Options = caseInsensitive ? [.caseInsensitive] : []
        // Validate the pattern on its own first: wrapping could balance a stray parenthesis (`a)|(b`). ICU refuses an
        // empty pattern, which is a valid expression (it matches only the empty string).
        if !pattern.isEmpty { _ = try NSRegularExpression(pattern: pattern, options: options) }
        expression = try NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z", options: options)
        self.pattern = pattern
    }

    /// How many progress callbacks (10,000 ICU steps each) a match of a string of `length` UTF-16 units may take.
    static func stepAllowance(for length: Int) -> Int { 20 + length / 1000 }

    /// Whether the whole of `string` matches (not just a part of it); throws `LimitReached` when that could not be
    /// decided within the limits.
    public func matchesWhole(_ string: String) throws(LimitReached) -> Bool {
        if undecided.contains(string) { throw LimitReached() }
        if Self.isTotalLimitReached { throw LimitReached(isTotal: true) }
        let length = string.utf16.count
        let allowance = Self.stepAllowance(for: length)
        let total = Self.totalAllowance
        var progressCalls = 0
        var matched = false
        var limitReached: LimitReached?
        expression.enumerateMatches(
            in: string, options: [.reportProgress, .reportCompletion], range: NSRange(location: 0, length: length)
        ) { result, flags, stop in
            if result != nil {
                matched = true
                stop.pointee = true
            } else if flags.contains(.internalError) {
                limitReached = LimitReached()
            } else if flags.contains(.progress) {
                progressCalls += 1
                if let total { total.remaining -= 1 }
                if progressCalls >= allowance || (total?.remaining ?? 0) < 0 {
                    limitReached = LimitReached(isTotal: progressCalls < allowance)
                    stop.pointee = true
                }
            }
        }
        if matched { return true }
        if let limitReached {
            // A limit of its own would be reached again; the shared one depends on the matches before.
            if !limitReached.isTotal { undecided.insert(string) }
            throw limitReached
        }
        return false
    }

    public static func == (lhs: RegularExpression, rhs: RegularExpression) -> Bool {
        lhs.pattern == rhs.pattern && lhs.expression.options == rhs.expression.options
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(pattern) }
}
