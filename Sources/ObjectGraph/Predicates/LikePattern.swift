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
/// `RegularExpression.LimitReached` rather than hold the store's lock for minutes (and the string is remembered, as
/// a regular expression's is, to throw at once the next time).
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
    private let undecided = UndecidedStrings()

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

    /// The work failed tries may take before a match throws, in bytes compared (and one per try): a million, plus a
    /// hundred per byte of the string.
    static func stepAllowance(for length: Int) -> Int { 1_000_000 + 100 * length }

    /// Whether the whole of `string` matches; throws `LimitReached` when that could not be decided within the bound.
    func matches(_ string: String) throws(RegularExpression.LimitReached) -> Bool {
        if undecided.contains(string) { throw RegularExpression.LimitReached() }
        if RegularExpression.isTotalLimitReached { throw RegularExpression.LimitReached(isTotal: true) }
        var composed = StringFolding.composed(string)
        var steps = Steps(allowance: Self.stepAllowance(for: composed.utf8.count))
        let result = composed.withUTF8 { text in
            Result { () throws(RegularExpression.LimitReached) in try matches(text, &steps) }
        }
        do {
            return try result.get()
        } catch {
            if !error.isTotal { undecided.insert(string) }
            throw error
        }
    }

    static func == (lhs: LikePattern, rhs: LikePattern) -> Bool { lhs.pattern == rhs.pattern }
    func hash(into hasher: inout Hasher) { hasher.combine(pattern) }

    private func matches(_ text: UnsafeBufferPointer<UInt8>, _ steps: inout Steps) throws(RegularExpression
        .LimitReached) -> Bool
    {
        guard let first = segments.first, let last = segments.last else { return text.isEmpty }
        var compared = 0  // (anchored matches are linear: not counted)
        guard case .matched(let afterFirst) = Self.match(first, in: text, at: 0, upTo: text.count, &compared)
        else { return false }
        if segments.count == 1 { return afterFirst == text.count }
        // The last segment takes as many scalars as it has pieces' scalars, counted back from the end.
        guard let lastStart = Self.start(of: last, endingAt: text.count, in: text), lastStart >= afterFirst,
            case .matched(text.count) = Self.match(last, in: text, at: lastStart, upTo: text.count, &compared)
        else { return false }
        var position = afterFirst
        for segment in segments.dropFirst().dropLast() where !segment.isEmpty {
            guard let end = try Self.firstMatch(of: segment, in: text, from: position, before: lastStart, &steps)
            else { return false }
            position = end
        }
        return true
    }

    private enum Outcome: Equatable {
        case matched(end: Int)
        case mismatched
        /// The segment would end past the end given: so would it at any later place.
        case pastTheEnd
    }

    /// `segment` matched at `position` of `text`, using no byte from `end` on (a scalar boundary); adds the bytes
    /// it compared to `compared`.
    private static func match(
        _ segment: [Piece], in text: UnsafeBufferPointer<UInt8>, at position: Int, upTo end: Int,
        _ compared: inout Int
    ) -> Outcome {
        var position = position
        for piece in segment {
            switch piece {
            case .bytes(let bytes):
                guard end - position >= bytes.count else { return .pastTheEnd }
                var offset = 0
                while offset < bytes.count, text[position + offset] == bytes[offset] { offset += 1 }
                compared += offset + 1
                guard offset == bytes.count else { return .mismatched }
                position += bytes.count
            case .any:
                guard position < end else { return .pastTheEnd }
                position = nextScalar(after: position, in: text)
            }
        }
        return .matched(end: position)
    }

    /// The end of the first match of `segment` in `text` starting at or after `position` and ending at or before
    /// `limit`, or nil.
    private static func firstMatch(
        of segment: [Piece], in text: UnsafeBufferPointer<UInt8>, from position: Int, before limit: Int,
        _ steps: inout Steps
    ) throws(RegularExpression.LimitReached) -> Int? {
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
            var compared = 0
            switch match(segment, in: text, at: candidate, upTo: limit, &compared) {
            case .matched(let end): return end
            case .pastTheEnd: return nil  // (the segment matches a fixed number of scalars)
            case .mismatched: try steps.take(compared)
            }
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

    /// The work of one match's failed tries, drawn also on a `RegularExpression.withTotalLimit` run's allowance (one
    /// of its reports per 10,000 steps, as ICU reports every 10,000 of its steps).
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
