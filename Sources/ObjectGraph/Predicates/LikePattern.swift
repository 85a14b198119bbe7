import Foundation

/// A compiled `LIKE` pattern: `*` matches any run of characters, `?` exactly one, `\` escapes the next one.
///
/// The pattern is compiled once (already folded for `[c]`/`[d]`) into its segments between stars; matching works on
/// the UTF-8 of the composed forms (NFC, so that both spellings of `é` match, and `?` takes `é` whole). The segment
/// before the first star must match at the start, the one after the last star at the end, and each one between is
/// taken where it first occurs after the one before (the earliest place leaves the most room for the rest, so no
/// other place need be tried). A segment without `?` is found with `ByteSearch` (linear); one with `?` is tried at each
/// place its first bytes occur, which can take the product of the lengths (`*a?a?…b*` over `aaaa…`), so those tries
/// are counted and bounded as a regular expression's steps are: past the bound the match throws
/// `RegularExpression.LimitReached` rather than hold the store's lock for minutes.
struct LikePattern: Sendable, Hashable {
    /// A run of literal bytes (NFC UTF-8, whole scalars) or one `?`.
    enum Piece: Sendable, Hashable {
        case bytes([UInt8])
        case any
    }

    /// The pattern as given (folded).
    let pattern: String
    /// The pattern split at its stars: one segment for a pattern without any.
    let segments: [[Piece]]

    init(_ pattern: String) {
        self.pattern = pattern
        var segments: [[Piece]] = [[]]
        var literal: [UInt8] = []
        func endLiteral() {
            if !literal.isEmpty { segments[segments.count - 1].append(.bytes(literal)) }
            literal = []
        }
        var escaped = false
        for scalar in StringFolding.composed(pattern).unicodeScalars {
            if !escaped, scalar == "*" || scalar == "?" {
                endLiteral()
                if scalar == "*" { segments.append([]) } else { segments[segments.count - 1].append(.any) }
            } else if !escaped, scalar == "\\" {
                escaped = true
                continue
            } else {
                literal += Array(String(scalar).utf8)
            }
            escaped = false
        }
        if escaped { literal.append(UInt8(ascii: "\\")) }
        endLiteral()
        self.segments = segments
    }

    /// Failed tries a match may take before it throws: a million, plus a hundred per byte of the string.
    static func stepAllowance(for length: Int) -> Int { 1_000_000 + 100 * length }

    /// Whether the whole of `string` matches; throws `LimitReached` when that could not be decided within the bound.
    func matches(_ string: String) throws(RegularExpression.LimitReached) -> Bool {
        var composed = StringFolding.composed(string)
        var steps = Steps(allowance: Self.stepAllowance(for: composed.utf8.count))
        let result = composed.withUTF8 { text in
            Result { () throws(RegularExpression.LimitReached) in try matches(text, &steps) }
        }
        return try result.get()
    }

    private func matches(_ text: UnsafeBufferPointer<UInt8>, _ steps: inout Steps) throws(RegularExpression
        .LimitReached) -> Bool
    {
        guard let first = segments.first, let last = segments.last else { return text.isEmpty }
        guard let afterFirst = Self.match(first, in: text, at: 0) else { return false }
        if segments.count == 1 { return afterFirst == text.count }
        // The last segment takes as many scalars as it has pieces' scalars, counted back from the end.
        guard let lastStart = Self.start(of: last, endingAt: text.count, in: text), lastStart >= afterFirst,
            Self.match(last, in: text, at: lastStart) == text.count
        else { return false }
        var position = afterFirst
        for segment in segments.dropFirst().dropLast() where !segment.isEmpty {
            guard let end = try Self.firstMatch(of: segment, in: text, from: position, before: lastStart, &steps)
            else { return false }
            position = end
        }
        return true
    }

    /// The end of `segment` matched at `position` of `text`, or nil.
    private static func match(_ segment: [Piece], in text: UnsafeBufferPointer<UInt8>, at position: Int) -> Int? {
        var position = position
        for piece in segment {
            switch piece {
            case .bytes(let bytes):
                guard text.count - position >= bytes.count,
                    bytes.withUnsafeBufferPointer({ memcmp(text.baseAddress! + position, $0.baseAddress!, $0.count) })
                        == 0
                else { return nil }
                position += bytes.count
            case .any:
                guard position < text.count else { return nil }
                position = nextScalar(after: position, in: text)
            }
        }
        return position
    }

    /// The end of the first match of `segment` in `text` starting at or after `position` and ending at or before
    /// `limit`, or nil.
    private static func firstMatch(
        of segment: [Piece], in text: UnsafeBufferPointer<UInt8>, from position: Int, before limit: Int,
        _ steps: inout Steps
    ) throws(RegularExpression.LimitReached) -> Int? {
        // What a failed try may have compared (for the bound).
        let length = segment.reduce(0) { sum, piece in
            if case .bytes(let bytes) = piece { sum + bytes.count } else { sum + 4 }
        }
        var candidate = position
        while candidate < limit {
            if case .bytes(let lead) = segment[0] {
                // Only where the segment's first bytes are (UTF-8 is self-synchronising: a found scalar is whole).
                let rest = UnsafeBufferPointer(rebasing: text[candidate..<limit])
                guard let found = lead.withUnsafeBufferPointer({ ByteSearch.firstOffset(of: $0, in: rest) }) else {
                    return nil
                }
                candidate += found
                if segment.count == 1 { return candidate + lead.count }
            }
            if let end = match(segment, in: text, at: candidate) {
                // A later place would end later still: the segment matches a fixed number of scalars.
                return end <= limit ? end : nil
            }
            try steps.take(length)
            candidate = nextScalar(after: candidate, in: text)
        }
        return nil
    }

    /// Where `segment` would start to end at `end`: as many scalars back as it matches, or nil past the start.
    private static func start(of segment: [Piece], endingAt end: Int, in text: UnsafeBufferPointer<UInt8>) -> Int? {
        var position = end
        for piece in segment.reversed() {
            switch piece {
            case .bytes(let bytes):
                position -= bytes.count
                guard position >= 0 else { return nil }
            case .any:
                guard position > 0 else { return nil }
                position -= 1
                while position > 0, text[position] & 0xC0 == 0x80 { position -= 1 }
            }
        }
        return position
    }

    private static func nextScalar(after position: Int, in text: UnsafeBufferPointer<UInt8>) -> Int {
        var next = position + 1
        while next < text.count, text[next] & 0xC0 == 0x80 { next += 1 }
        return next
    }

    /// The failed tries of one match, drawn also on a `RegularExpression.withTotalLimit` run's allowance (one of
    /// its reports per 10,000 tries, as ICU reports every 10,000 steps).
    private struct Steps {
        let allowance: Int
        var taken = 0

        init(allowance: Int) { self.allowance = allowance }

        mutating func take(_ count: Int) throws(RegularExpression.LimitReached) {
            let before = taken / 10_000
            taken += count
            if taken / 10_000 > before, let total = RegularExpression.totalAllowance {
                total.remaining -= taken / 10_000 - before
                if total.remaining < 0 { throw RegularExpression.LimitReached(isTotal: true) }
            }
            if taken > allowance { throw RegularExpression.LimitReached() }
        }
    }
}
