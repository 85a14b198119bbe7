import Foundation

/// A compiled `pattern` constraint: an `NSRegularExpression` that must match the whole string.
///
/// `@unchecked Sendable`: the wrapped expression is immutable after init and `NSRegularExpression` is documented as
/// safe to use from several threads at once.
public final class RegularExpression: @unchecked Sendable, Hashable {
    /// The pattern as the model file gives it.
    public let pattern: String
    private let expression: NSRegularExpression

    /// Compiles `pattern`; nil when it is not a valid ICU regular expression.
    public init?(_ pattern: String) {
        guard let expression = try? NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z") else { return nil }
        self.pattern = pattern
        self.expression = expression
    }

    /// Whether the whole of `string` matches (not just a part of it).
    public func matchesWhole(_ string: String) -> Bool {
        let range = NSRange(string.startIndex..<string.endIndex, in: string)
        return expression.firstMatch(in: string, options: [], range: range) != nil
    }

    public static func == (lhs: RegularExpression, rhs: RegularExpression) -> Bool { lhs.pattern == rhs.pattern }
    public func hash(into hasher: inout Hasher) { hasher.combine(pattern) }
}
