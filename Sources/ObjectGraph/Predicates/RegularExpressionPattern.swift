import Foundation

/// A compiled `MATCHES` pattern: an ICU regular expression (NSRegularExpression) that must match the whole string.
///
/// `@unchecked Sendable`: NSRegularExpression is immutable once made and documented safe to use from several threads
/// at once; this wrapper never exposes it for mutation.
struct RegularExpressionPattern: @unchecked Sendable {
    let source: String
    private let expression: NSRegularExpression

    /// Compiles `pattern` anchored at both ends; throws when it is not a valid regular expression.
    init(_ pattern: String, caseInsensitive: Bool) throws {
        var options: NSRegularExpression.Options = []
        if caseInsensitive { options.insert(.caseInsensitive) }
        source = pattern
        // Validate the pattern on its own first: wrapping could balance a stray parenthesis (`a)|(b`).
        _ = try NSRegularExpression(pattern: pattern, options: options)
        expression = try NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z", options: options)
    }

    /// Whether the whole of `string` matches.
    func matches(_ string: String) -> Bool {
        let range = NSRange(location: 0, length: string.utf16.count)
        return expression.firstMatch(in: string, options: [], range: range) != nil
    }
}
