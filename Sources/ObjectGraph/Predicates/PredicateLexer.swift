/// Splits a predicate format string into tokens.
///
/// Key paths (`department.name`, `employees.@avg.salary`, `#in` for a key named like a keyword) are single tokens;
/// `SELF.` in front of a key path is dropped. In string literals `\\`, `\'`, `\"`, `\n`, `\t`, `\r`, `\0` and
/// `\uXXXX` are escapes; any other backslash is kept as it is, so `'\d+'` reaches `MATCHES` as `\d+`.
struct PredicateLexer {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(_ source: String) {
        scalars = Array(source.unicodeScalars)
    }

    /// All tokens, ending with `.end`.
    static func tokens(of source: String) throws -> [PredicateToken] {
        var lexer = PredicateLexer(source)
        var tokens: [PredicateToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }

    private func text(from start: Int) -> String {
        var string = String.UnicodeScalarView()
        string.append(contentsOf: scalars[start..<index])
        return String(string)
    }

    private static func isKeyStart(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "_" || scalar == "@" || scalar.properties.isAlphabetic
    }

    private static func isKeyContinuation(_ scalar: Unicode.Scalar) -> Bool {
        isKeyStart(scalar) || ("0"..."9").contains(scalar)
    }

    private mutating func next() throws -> PredicateToken {
        while let scalar = peek(), scalar.properties.isWhitespace { index += 1 }
        let start = index
        let column = start + 1
        guard let scalar = peek() else { return PredicateToken(kind: .end, column: column, text: "end of input") }
        func symbol(_ name: String, length: Int) -> PredicateToken {
            index += length
            return PredicateToken(kind: .symbol(name), column: column, text: text(from: start))
        }
        switch scalar {
        case "(", ")", "{", "}", "[", "]", ",":
            return symbol(String(scalar), length: 1)
        case "=":
            if peek(1) == "=" { return symbol("==", length: 2) }
            if peek(1) == "<" { return symbol("<=", length: 2) }
            if peek(1) == ">" { return symbol(">=", length: 2) }
            return symbol("==", length: 1)
        case "!":
            if peek(1) == "=" { return symbol("!=", length: 2) }
            return symbol("!", length: 1)
        case "<":
            if peek(1) == "=" { return symbol("<=", length: 2) }
            if peek(1) == ">" { return symbol("!=", length: 2) }
            return symbol("<", length: 1)
        case ">":
            if peek(1) == "=" { return symbol(">=", length: 2) }
            return symbol(">", length: 1)
        case "&":
            guard peek(1) == "&" else { throw ObjectGraphError.badPredicate("Expected \"&&\".", column: column) }
            return symbol("&&", length: 2)
        case "|":
            guard peek(1) == "|" else { throw ObjectGraphError.badPredicate("Expected \"||\".", column: column) }
            return symbol("||", length: 2)
        case "'", "\"":
            return try string(quote: scalar)
        case "$":
            throw ObjectGraphError.badPredicate("Variables ($name) are not supported.", column: column)
        default:
            if ("0"..."9").contains(scalar) || (scalar == "-" && peek(1).map { ("0"..."9").contains($0) } == true) {
                return try number()
            }
            if scalar == "#" || PredicateLexer.isKeyStart(scalar) { return try keyPath() }
            throw ObjectGraphError.badPredicate("Unexpected character \"\(scalar)\".", column: column)
        }
    }

    private mutating func string(quote: Unicode.Scalar) throws -> PredicateToken {
        let start = index
        index += 1
        var value = String.UnicodeScalarView()
        while true {
            guard let scalar = peek() else {
                throw ObjectGraphError.badPredicate("Unterminated string literal.", column: start + 1)
            }
            index += 1
            if scalar == quote { break }
            guard scalar == "\\" else {
                value.append(scalar)
                continue
            }
            guard let escaped = peek() else {
                throw ObjectGraphError.badPredicate("Unterminated string literal.", column: start + 1)
            }
            index += 1
            switch escaped {
            case "\\", "'", "\"": value.append(escaped)
            case "n": value.append("\n")
            case "t": value.append("\t")
            case "r": value.append("\r")
            case "0": value.append("\0")
            case "u":
                let escapeColumn = index - 1
                var code = try fourHexDigits()
                // A high surrogate followed by `\uDC00`–`\uDFFF` is one character outside the BMP, as in JSON.
                if (0xD800...0xDBFF).contains(code), peek() == "\\", peek(1) == "u" {
                    index += 2
                    let low = try fourHexDigits()
                    if (0xDC00...0xDFFF).contains(low) {
                        code = 0x10000 + (code - 0xD800) << 10 + (low - 0xDC00)
                    } else {
                        index -= 6
                    }
                }
                guard let unicode = Unicode.Scalar(code) else {
                    let hexCode = String(code, radix: 16, uppercase: true)
                    throw ObjectGraphError.badPredicate(
                        "\\u\(hexCode) is not a Unicode scalar (a lone surrogate).", column: escapeColumn)
                }
                value.append(unicode)
            default:
                value.append("\\")
                value.append(escaped)
            }
        }
        return PredicateToken(kind: .string(String(value)), column: start + 1, text: text(from: start))
    }

    /// The four hex digits of a `\u` escape (the index is just past the `u`).
    private mutating func fourHexDigits() throws -> UInt32 {
        var code: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = peek(), let nibble = hex(digit) else {
                throw ObjectGraphError.badPredicate("Expected four hex digits after \\u.", column: index + 1)
            }
            code = code << 4 | nibble
            index += 1
        }
        return code
    }

    private func hex(_ scalar: Unicode.Scalar) -> UInt32? {
        switch scalar {
        case "0"..."9": scalar.value - 48
        case "a"..."f": scalar.value - 87
        case "A"..."F": scalar.value - 55
        default: nil
        }
    }

    private mutating func number() throws -> PredicateToken {
        let start = index
        let negative = peek() == "-"
        if negative { index += 1 }
        if peek() == "0", let base = peek(1).flatMap({ ["x": 16, "X": 16, "o": 8, "O": 8, "b": 2, "B": 2][$0] }) {
            index += 2
            var magnitude: UInt64 = 0
            var digits = 0
            while let scalar = peek(), let digit = hex(scalar), digit < base {
                let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: UInt64(base))
                guard !overflow, shifted <= UInt64(Int64.max) - UInt64(digit) + (negative ? 1 : 0) else {
                    throw ObjectGraphError.badPredicate("Integer literal out of range.", column: start + 1)
                }
                magnitude = shifted + UInt64(digit)
                digits += 1
                index += 1
            }
            guard digits > 0 else { throw ObjectGraphError.badPredicate("Malformed number.", column: start + 1) }
            let value = negative ? Int64(bitPattern: 0 &- magnitude) : Int64(magnitude)
            return try finishNumber(.integer(value), start: start)
        }
        var isReal = false
        while let scalar = peek(), ("0"..."9").contains(scalar) { index += 1 }
        if peek() == ".", let after = peek(1), ("0"..."9").contains(after) {
            isReal = true
            index += 1
            while let scalar = peek(), ("0"..."9").contains(scalar) { index += 1 }
        }
        if peek() == "e" || peek() == "E" {
            var offset = 1
            if peek(1) == "+" || peek(1) == "-" { offset = 2 }
            if let digit = peek(offset), ("0"..."9").contains(digit) {
                isReal = true
                index += offset
                while let scalar = peek(), ("0"..."9").contains(scalar) { index += 1 }
            }
        }
        let literal = text(from: start)
        if !isReal {
            // As a hexadecimal one, and as JSON's integers (API.md §1): not rounded to the nearest double.
            guard let value = Int64(literal) else {
                throw ObjectGraphError.badPredicate("Integer literal out of range.", column: start + 1)
            }
            return try finishNumber(.integer(value), start: start)
        }
        guard let value = Double(literal), value.isFinite else {
            throw ObjectGraphError.badPredicate("Number \(literal) is out of range.", column: start + 1)
        }
        return try finishNumber(.real(value), start: start)
    }

    private func finishNumber(_ kind: PredicateToken.Kind, start: Int) throws -> PredicateToken {
        if let scalar = peek(), PredicateLexer.isKeyContinuation(scalar) || scalar == "." {
            throw ObjectGraphError.badPredicate("Malformed number.", column: start + 1)
        }
        return PredicateToken(kind: kind, column: start + 1, text: text(from: start))
    }

    private mutating func keyPath() throws -> PredicateToken {
        let start = index
        var segments: [String] = []
        var firstQuoted = false
        while true {
            let segmentStart = index
            let quoted = peek() == "#"
            if quoted { index += 1 }
            guard let first = peek(), PredicateLexer.isKeyStart(first) else {
                throw ObjectGraphError.badPredicate("Expected a key.", column: index + 1)
            }
            let keyStart = index
            while let scalar = peek(), PredicateLexer.isKeyContinuation(scalar) { index += 1 }
            if segmentStart == start { firstQuoted = quoted }
            segments.append(text(from: keyStart))
            guard peek() == "." else { break }
            index += 1
        }
        let column = start + 1
        let source = text(from: start)
        if !firstQuoted, let keyword = PredicateToken.Keyword(word: segments[0]) {
            if segments.count == 1 { return PredicateToken(kind: .keyword(keyword), column: column, text: source) }
            if keyword == .self { segments.removeFirst() }
        }
        return PredicateToken(kind: .keyPath(segments.joined(separator: ".")), column: column, text: source)
    }
}
