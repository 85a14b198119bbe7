/// Unicode's Stream-Safe Text Format (UAX #15 §13): at most 30 non-starters (characters of a canonical combining
/// class other than 0, combining marks) in a row.
///
/// Text past it is refused where clients' text comes in (JSON and XML property lists): Swift normalises a string to
/// hash or compare it, and putting a long run of combining marks out of canonical order in order is quadratic (a
/// 400 KB dictionary key held a request thread for 48 s; a stored value of that kind made every sort by its key as
/// slow). Real text stacks a handful of marks at most.
enum StreamSafeText {
    static let maximumNonStarters = 30

    static let violation =
        "more than \(maximumNonStarters) combining marks in a row (Unicode's stream-safe limit, UAX #15)"

    /// Whether the UTF-8 text `utf8` keeps the limit. Linear; text without a byte from 0xCC up (nothing at or past
    /// U+0300, where the first non-starters are) is not decoded at all.
    static func isStreamSafe(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard utf8.contains(where: { $0 >= 0xCC }) else { return true }
        var bytes = utf8.makeIterator()
        var decoder = UTF8()
        var run = 0
        while case .scalarValue(let scalar) = decoder.decode(&bytes) {
            if scalar.properties.canonicalCombiningClass == .notReordered {
                run = 0
            } else {
                run += 1
                if run > maximumNonStarters { return false }
            }
        }
        return true
    }
}
