import Foundation
import PropertyList

extension Predicate {
    /// The canonical format of a tree: upper-case keywords, `==`-style operators, double-quoted strings, and
    /// parentheses around a compound inside another compound (or under NOT).
    static func format(_ node: Node) -> String {
        switch node {
        case .constant(let value):
            return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .not(let inner):
            return "NOT " + formatOperand(inner)
        case .and(let nodes):
            return nodes.map(formatOperand).joined(separator: " AND ")
        case .or(let nodes):
            return nodes.map(formatOperand).joined(separator: " OR ")
        case .comparison(let comparison):
            return format(comparison)
        }
    }

    private static func formatOperand(_ node: Node) -> String {
        switch node {
        case .and, .or: "(" + format(node) + ")"
        default: format(node)
        }
    }

    private static func format(_ comparison: ComparisonPredicate) -> String {
        var text = ""
        switch comparison.modifier {
        case .direct: break
        case .any: text += "ANY "
        case .all: text += "ALL "
        case .none: text += "NONE "
        }
        text += format(comparison.left)
        text += " "
        switch comparison.op {
        case .equalTo: text += "=="
        case .notEqualTo: text += "!="
        case .lessThan: text += "<"
        case .lessThanOrEqualTo: text += "<="
        case .greaterThan: text += ">"
        case .greaterThanOrEqualTo: text += ">="
        case .matches: text += "MATCHES"
        case .like: text += "LIKE"
        case .beginsWith: text += "BEGINSWITH"
        case .endsWith: text += "ENDSWITH"
        case .contains: text += "CONTAINS"
        case .in: text += "IN"
        case .between: text += "BETWEEN"
        }
        if !comparison.options.isEmpty {
            text += "["
            if comparison.options.contains(.caseInsensitive) { text += "c" }
            if comparison.options.contains(.diacriticInsensitive) { text += "d" }
            if comparison.options.contains(.normalized) { text += "n" }
            text += "]"
        }
        text += " "
        text += format(comparison.right)
        return text
    }

    private static func format(_ expression: PredicateExpression) -> String {
        switch expression {
        case .constant(let value): formatConstant(value)
        case .evaluatedObject: "SELF"
        case .keyPath(let keyPath): formatKeyPath(keyPath)
        case .aggregate(let elements): "{" + elements.map(format).joined(separator: ", ") + "}"
        }
    }

    /// A key path, with `#` before any key that would otherwise read as a keyword (and `SELF.` before `SELF`).
    private static func formatKeyPath(_ keyPath: String) -> String {
        let segments = keyPath.split(separator: ".", omittingEmptySubsequences: false)
        guard let first = segments.first, PredicateToken.Keyword(word: String(first)) != nil else { return keyPath }
        return "#" + keyPath
    }

    private static func formatConstant(_ value: PropertyListValue) -> String {
        switch value {
        case .null: return "nil"
        case .boolean(let value): return value ? "TRUE" : "FALSE"
        case .integer(let value): return String(value)
        case .real(let value): return "\(value)"
        case .string(let value): return quote(value)
        case .date(let value): return quote(ISO8601.string(from: value))
        case .data(let value): return quote(value.base64EncodedString())
        case .array(let elements): return "{" + elements.map(formatConstant).joined(separator: ", ") + "}"
        case .dictionary(let entries):
            return "{" + entries.keys.sorted().map { formatConstant(entries[$0] ?? .null) }.joined(separator: ", ")
                + "}"
        }
    }

    /// A double-quoted string literal that the lexer reads back as `string`.
    private static func quote(_ string: String) -> String {
        var text = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\t": text += "\\t"
            case "\r": text += "\\r"
            case "\0": text += "\\0"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        return text + "\""
    }
}
