import Foundation

/// ISO 8601 timestamps as API.md §1 writes them: UTC, millisecond precision (`2026-11-21T22:12:20.123Z`).
///
/// Parsing accepts `YYYY-MM-DD`, and `YYYY-MM-DDTHH:MM[:SS[.fraction]]` followed by `Z` or `±HH:MM` (a missing zone
/// means UTC). Fractions beyond milliseconds are rounded. A timestamp that the zone or the rounding takes out of the
/// years 0000–9999 (`9999-12-31T23:59:59.9999Z`, `0000-01-01T00:00:00+01:00`) is refused, as it could not be written.
public enum ISO8601 {
    /// Formats a date as `YYYY-MM-DDTHH:MM:SS.mmmZ`, or without fractional seconds as `YYYY-MM-DDTHH:MM:SSZ`
    /// (rounded down to the second).
    public static func string(from date: Date, fractionalSeconds: Bool = true) -> String {
        let totalMilliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        var milliseconds = Int64(totalMilliseconds)
        var seconds = milliseconds / 1000
        milliseconds %= 1000
        if milliseconds < 0 {
            milliseconds += 1000
            seconds -= 1
        }
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(abs(value))
            let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
            return value < 0 ? "-" + padded : padded
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))"
            + (fractionalSeconds ? ".\(pad(Int32(milliseconds), 3))Z" : "Z")
    }

    /// Parses an ISO 8601 timestamp, or returns nil.
    public static func date(from string: String) -> Date? {
        var scanner = Scanner(Array(string.utf8))
        guard let year = scanner.number(digits: 4), scanner.take(UInt8(ascii: "-")),
            let month = scanner.number(digits: 2), scanner.take(UInt8(ascii: "-")),
            let day = scanner.number(digits: 2), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var hour = 0
        var minute = 0
        var second = 0
        var milliseconds = 0
        var offsetSeconds = 0
        if scanner.take(UInt8(ascii: "T")) || scanner.take(UInt8(ascii: "t")) || scanner.take(UInt8(ascii: " ")) {
            guard let h = scanner.number(digits: 2), scanner.take(UInt8(ascii: ":")), let m = scanner.number(digits: 2),
                h < 24, m < 60
            else { return nil }
            hour = h
            minute = m
            if scanner.take(UInt8(ascii: ":")) {
                guard let s = scanner.number(digits: 2), s <= 60 else { return nil }
                second = s
                if scanner.take(UInt8(ascii: ".")) || scanner.take(UInt8(ascii: ",")) {
                    // Milliseconds from the decimal digits, rounded half up on the fourth (a sum of doubles rounded
                    // some halves down: .5005 gave .500).
                    var digits = 0
                    while let d = scanner.digit() {
                        if digits < 3 {
                            milliseconds = milliseconds * 10 + d
                        } else if digits == 3, d >= 5 {
                            milliseconds += 1
                        }
                        digits += 1
                    }
                    guard digits > 0 else { return nil }
                    for _ in digits..<max(digits, 3) { milliseconds *= 10 }
                }
            }
            if scanner.take(UInt8(ascii: "Z")) || scanner.take(UInt8(ascii: "z")) {
            } else if let sign = scanner.peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                _ = scanner.take(sign)
                guard let oh = scanner.number(digits: 2), oh < 24 else { return nil }
                _ = scanner.take(UInt8(ascii: ":"))
                guard let om = scanner.number(digits: 2), om < 60 else { return nil }
                offsetSeconds = (oh * 3600 + om * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
            }
        }
        guard scanner.atEnd else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        // A leap second (`:60`) is the next minute's first second, as a Date has no leap seconds: it is added after
        // the day is checked, so that `23:59:60` on the last day of a month is not refused as the next day.
        let leapSecond = second == 60 ? 1 : 0
        parts.tm_sec = Int32(second - leapSecond)
        let epoch = timegm(&parts)
        // timegm normalises out-of-range days (Feb 30 → Mar 2); refuse those.
        guard parts.tm_mday == Int32(day), parts.tm_mon == Int32(month - 1) else { return nil }
        let seconds =
            Double(Int64(epoch) + Int64(leapSecond) - Int64(offsetSeconds)) + Double(milliseconds) / 1000
        // What the zone and the rounding make of it must be writable again in four digits of year.
        guard Self.range.contains(seconds) else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    /// The seconds since 1970 of the dates that can be written (and so read back): 0000-01-01T00:00:00.000Z through
    /// 9999-12-31T23:59:59.999Z.
    static let range = -62_167_219_200.0...253_402_300_799.999

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        var atEnd: Bool { index == bytes.count }
        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }
        mutating func take(_ byte: UInt8) -> Bool {
            guard peek() == byte else { return false }
            index += 1
            return true
        }
        mutating func digit() -> Int? {
            guard let b = peek(), b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") else { return nil }
            index += 1
            return Int(b - UInt8(ascii: "0"))
        }
        mutating func number(digits: Int) -> Int? {
            var value = 0
            for _ in 0..<digits {
                guard let d = digit() else { return nil }
                value = value * 10 + d
            }
            return value
        }
    }
}
