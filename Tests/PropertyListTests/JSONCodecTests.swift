import Foundation
import PropertyList
import Testing

struct JSONCodecTests {
    @Test(arguments: [
        PropertyListValue.null, true, false, 0, -1, 42, .integer(Int64.max), .integer(Int64.min),
        0.5, 3.0, -2.25, 0.1, 1e300, .real(.leastNonzeroMagnitude), -1e-7, "",
        "héllo \"quoted\" \\ back\nline\ttab \u{1}", "😀 emoji",
        .date(Date(timeIntervalSince1970: 1_795_558_340.123)), .date(Date(timeIntervalSince1970: -86_400.5)),
        .data(Data([0, 1, 2, 255])), .data(Data()),
        [], [1, "two", 3.5, nil, [true]], [:], ["a": 1, "b": ["c": [nil, 2.5]], "$id": "Employee/1"],
    ])
    func roundTripsEveryType(value: PropertyListValue) throws {
        let decoded = try PropertyListValue(jsonBytes: value.jsonBytes())
        #expect(decoded == value)
    }

    /// RFC 8259 §8.1: a byte order mark before the text may be ignored, and Windows tools write one; only before it.
    @Test func skipsAByteOrderMarkBeforeTheText() throws {
        let mark: [UInt8] = [0xEF, 0xBB, 0xBF]
        #expect(try PropertyListValue(jsonBytes: mark + Array(#"{"a": [1, "b"]}"#.utf8)) == ["a": [1, "b"]])
        #expect(throws: JSONDecodingError.self) { try PropertyListValue(jsonBytes: mark + mark + Array("1".utf8)) }
        #expect(throws: JSONDecodingError.self) { try PropertyListValue(jsonBytes: Array(" ".utf8) + mark + [0x31]) }
        let bad = #expect(throws: JSONDecodingError.self) {
            try PropertyListValue(jsonBytes: mark + Array("[1,]".utf8))
        }
        #expect(bad?.line == 1)
    }

    @Test func writesRealsInShortestRoundTripForm() {
        #expect(PropertyListValue.real(0.1).jsonString() == "0.1")
        #expect(PropertyListValue.real(3.0).jsonString() == "3.0")
        #expect(PropertyListValue.real(1e300).jsonString() == "1e+300")
        #expect(PropertyListValue.real(.nan).jsonString() == "null")
        #expect(PropertyListValue.real(.infinity).jsonString() == "null")
    }

    @Test func keepsIntegersAndRealsApart() throws {
        #expect(try PropertyListValue(jsonString: "3") == .integer(3))
        #expect(try PropertyListValue(jsonString: "3.0") == .real(3))
        #expect(try PropertyListValue(jsonString: "3.0").integerValue == 3)
        #expect(try PropertyListValue(jsonString: "3.5").integerValue == nil)
    }

    @Test func writesTaggedDatesInUTCWithMilliseconds() throws {
        let date = try #require(ISO8601.date(from: "2026-11-21T22:12:20.123Z"))
        #expect(PropertyListValue.date(date).jsonString() == #"{"$date":"2026-11-21T22:12:20.123Z"}"#)
        #expect(try PropertyListValue(jsonString: #"{"$date":"2026-11-21T23:12:20.123+01:00"}"#) == .date(date))
        #expect(PropertyListValue.data(Data("hi".utf8)).jsonString() == #"{"$data":"aGk="}"#)
    }

    @Test func writesSortedCompactDictionariesAndEscapes() {
        let value: PropertyListValue = ["b": 1, "a": ["x\u{0}y", "é"]]
        #expect(value.jsonString() == #"{"a":["x\u0000y","é"],"b":1}"#)
    }

    /// Keys sort by code point, a total order: Swift's `<` leaves é (one character) and e + accent unordered, so their
    /// order followed each process's hashing.
    @Test func sortsKeysByCodePointsWhateverTheirHashOrder() throws {
        let value = PropertyListValue.dictionary(["e\u{301}": 1, "\u{e9}x": 2, "z": 3])
        #expect(
            Array(value.jsonString().unicodeScalars) == Array("{\"e\u{301}\":1,\"z\":3,\"\u{e9}x\":2}".unicodeScalars))
        let xml = Array(String(decoding: try value.xmlPropertyList(), as: UTF8.self).unicodeScalars)
        let keys = xml.split(separator: "\n").map { String(String.UnicodeScalarView($0)) }.filter {
            $0.contains("<key>")
        }
        #expect(
            keys.map { Array($0.unicodeScalars) }
                == ["e\u{301}", "z", "\u{e9}x"].map { Array("\t<key>\($0)</key>".unicodeScalars) })
    }

    @Test func parsesISO8601Forms() {
        #expect(ISO8601.date(from: "2026-01-02") == Date(timeIntervalSince1970: 1_767_312_000))
        #expect(ISO8601.date(from: "2026-01-02T03:04Z") == Date(timeIntervalSince1970: 1_767_323_040))
        #expect(ISO8601.date(from: "2026-02-30T00:00:00Z") == nil)
        #expect(ISO8601.date(from: "2026-1-2") == nil)
        #expect(ISO8601.date(from: "yesterday") == nil)
        #expect(ISO8601.date(from: "2026-01-02T03:04:05.5Zjunk") == nil)
        // RFC 3339 §5.6 allows a lower-case "t" and "z".
        #expect(ISO8601.date(from: "2026-01-02t03:04z") == ISO8601.date(from: "2026-01-02T03:04Z"))
    }

    /// A leap second is the next minute's first second wherever it falls, the end of a year (where real ones fall)
    /// included; second 61 is refused.
    @Test func leapSecondIsTheNextMinutesFirst() {
        #expect(ISO8601.date(from: "2016-12-31T23:59:60Z") == ISO8601.date(from: "2017-01-01T00:00:00Z"))
        #expect(ISO8601.date(from: "2016-12-31T23:59:60.5Z") == ISO8601.date(from: "2017-01-01T00:00:00.500Z"))
        #expect(ISO8601.date(from: "2026-11-21T22:12:60Z") == ISO8601.date(from: "2026-11-21T22:13:00Z"))
        #expect(ISO8601.date(from: "2017-01-01T00:59:60+01:00") == ISO8601.date(from: "2017-01-01T00:00:00Z"))
        #expect(ISO8601.date(from: "2026-11-21T22:12:61Z") == nil)
        #expect(ISO8601.date(from: "9999-12-31T23:59:60Z") == nil)
    }

    /// Strict base64: Foundation on Linux decodes `====` as a zero byte; such text is refused, as unpadded and
    /// white-spaced text is.
    @Test func base64IsStrict() {
        #expect(Base64.decode("") == Data())
        #expect(Base64.decode("QUI=") == Data("AB".utf8))
        #expect(Base64.decode("QUJD") == Data("ABC".utf8))
        #expect(Base64.decode("QQ==") == Data("A".utf8))
        #expect(Base64.decode("+/+/") == Data([0xFB, 0xFF, 0xBF]))
        for text in ["====", "QUJ=", "QR==", "AA=A", "QUI", "QU I=", "QUI=QUI=", "Q===", "QUI*"] {
            #expect(Base64.decode(text) == nil, "\(text)")
        }
    }

    /// Two spellings of one text (é as one character, or e and an accent) are one key of a Swift dictionary: an
    /// object with both is refused, not collapsed to the last.
    @Test func equivalentKeysAreRefused() {
        let error = #expect(throws: JSONDecodingError.self) {
            try PropertyListValue(jsonBytes: Array("{\"a\": 1,\n \"\u{E9}\": 1, \"e\u{301}\": 2}".utf8))
        }
        #expect(error?.message.contains("same text to Unicode") == true)
        #expect(error?.line == 1)
    }

    /// Text with more than 30 combining marks in a row (Unicode's stream-safe limit) is refused, in keys and values,
    /// at the place of the array or dictionary holding it: Swift's hashing and comparing of such text out of
    /// canonical order is quadratic (a 400 KB key held a request thread for 48 s).
    @Test func refusesTextPastTheStreamSafeLimit() throws {
        func marks(_ count: Int) -> String {
            String(String.UnicodeScalarView((0..<count).map { Unicode.Scalar($0 % 2 == 0 ? 0x301 : 0x316)! }))
        }
        let thirty = "a" + marks(30)
        #expect(
            try PropertyListValue(jsonString: "[\"\(thirty)\", {\"\(thirty)\": 1}]").arrayValue?.first
                == .string(thirty))
        #expect(try PropertyListValue(jsonString: "\"\(thirty)x\(thirty)\"") == .string(thirty + "x" + thirty))
        for (text, line, column) in [
            ("\"a\(marks(31))\"", 1, 1), (" \n  \"a\(marks(31))\"", 2, 3), ("[1,\n [\"a\(marks(31))\"]]", 2, 2),
            ("{\"k\": 1, \"a\(marks(200_000))\": 2}", 1, 1),
            ("[{}, {\"k\": \"\\u0301\(marks(30))\"}]", 1, 6),
        ] {
            let error = #expect(throws: JSONDecodingError.self) { try PropertyListValue(jsonString: text) }
            #expect(error?.message.contains("stream-safe") == true, "\(text.prefix(12))")
            #expect(error?.line == line, "\(text.prefix(12))")
            #expect(error?.column == column, "\(text.prefix(12))")
        }
    }

    /// Fractions of a second are rounded half up to milliseconds on their decimal digits (summing them as doubles
    /// rounded some halves down).
    @Test func fractionsOfASecondRoundHalfUpToMilliseconds() throws {
        func milliseconds(_ fraction: String) throws -> Int {
            let date = try #require(ISO8601.date(from: "2026-11-21T22:12:20." + fraction + "Z"))
            let seconds = try #require(ISO8601.date(from: "2026-11-21T22:12:20Z"))
            return Int((date.timeIntervalSince(seconds) * 1000).rounded())
        }
        for fourth in 0..<10_000 {
            let text = String(String(fourth).reversed()).padding(toLength: 4, withPad: "0", startingAt: 0)
            let digits = String(text.reversed())
            let expected = fourth / 10 + (fourth % 10 >= 5 ? 1 : 0)
            #expect(try milliseconds(digits) == expected, "\(digits)")
        }
        #expect(try milliseconds("5") == 500)
        #expect(try milliseconds("12") == 120)
        #expect(try milliseconds("12349999") == 123)
    }

    /// A real is an integer only below 2^53, where each integer has a double of its own.
    @Test func realsAreIntegersOnlyWhereExact() throws {
        #expect(PropertyListValue.real(9_007_199_254_740_991).integerValue == 9_007_199_254_740_991)
        #expect(PropertyListValue.real(-9_007_199_254_740_991).integerValue == -9_007_199_254_740_991)
        #expect(PropertyListValue.real(9_007_199_254_740_992).integerValue == nil)
        #expect(try PropertyListValue(jsonString: "9007199254740993.0").integerValue == nil)
        #expect(try PropertyListValue(jsonString: "4611686018427387904.5").integerValue == nil)
        #expect(PropertyListValue.real(1.5).integerValue == nil)
        #expect(PropertyListValue.real(42).integerValue == 42)
    }

    /// Every date read can be written and read back: the years 0000–9999 after the zone and the rounding.
    @Test func datesStayWithinFourDigitYears() throws {
        for text in ["9999-12-31T23:59:59.9999Z", "0000-01-01T00:00:00+01:00", "9999-12-31T23:00:00-01:00"] {
            #expect(ISO8601.date(from: text) == nil, "\(text)")
        }
        for text in ["9999-12-31T23:59:59.999Z", "0000-01-01T00:00:00Z", "0000-01-01T00:30:00+00:30"] {
            let date = try #require(ISO8601.date(from: text), "\(text)")
            #expect(ISO8601.date(from: ISO8601.string(from: date)) == date, "\(text)")
        }
    }

    struct BadInput: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var line: Int?
        var column: Int?
        var testDescription: String { name }
    }

    @Test(arguments: [
        BadInput(name: "truncated", bytes: Array("{\"a\": ".utf8), line: 1, column: 6),
        BadInput(name: "second line", bytes: Array("{\n  \"a\": tru }".utf8), line: 2, column: 10),
        BadInput(name: "duplicate key", bytes: Array(#"{"a": 1, "a": 2}"#.utf8), line: 1, column: 12),
        BadInput(name: "integer beyond 64 bits", bytes: Array("[99999999999999999999]".utf8), line: 1, column: 21),
        BadInput(name: "real overflow", bytes: Array("1e400".utf8), line: 1, column: 5),
        BadInput(name: "trailing garbage", bytes: Array("{} x".utf8), line: 1, column: 4),
        BadInput(name: "NUL escape", bytes: Array(#""a\u0000b""#.utf8), line: 1, column: 10),
        BadInput(name: "invalid UTF-8", bytes: [0x22, 0xC3, 0x28, 0x22], line: 1, column: 2),
        BadInput(name: "invalid UTF-8 first", bytes: [0xFF], line: 1, column: 1),
        BadInput(name: "invalid UTF-8 on line 2", bytes: [0x0A, 0xFF], line: 2, column: 1),
        BadInput(name: "raw NUL after a number", bytes: [0x31, 0x00], line: 1, column: 2),
        BadInput(name: "raw NUL in an array", bytes: Array("[1".utf8) + [0] + Array(",2]".utf8), line: 1, column: 3),
        BadInput(name: "raw NUL after é", bytes: Array("\"é".utf8) + [0] + Array("\"".utf8), line: 1, column: 3),
        BadInput(name: "empty", bytes: [], line: 1, column: 0),
    ])
    func rejectsBadInputWithPlace(input: BadInput) {
        #expect {
            try PropertyListValue(jsonBytes: input.bytes)
        } throws: { error in
            guard let error = error as? JSONDecodingError else { return false }
            return error.line == input.line && error.column == input.column && !error.message.isEmpty
        }
    }

    @Test(arguments: [
        BadInput(name: "bad $date", bytes: Array(#"{"$date": "soon"}"#.utf8), line: 1, column: 1),
        BadInput(name: "bad $data", bytes: Array(#"{"$data": "%%%"}"#.utf8), line: 1, column: 1),
        BadInput(name: "$date not a string", bytes: Array(#"{"$date": 5}"#.utf8), line: 1, column: 1),
        // The third dictionary in text order; braces inside strings and good tags before it do not count.
        BadInput(
            name: "bad tag after others",
            bytes: Array(
                """
                {"a": {"$date": "2026-11-21T22:12:20.123Z"}, "s": "{[",
                 "b": [1, {"$data": "@"}]}
                """.utf8),
            line: 2, column: 11),
    ])
    func rejectsBadTagsWithThePlaceOfTheirDictionary(input: BadInput) {
        #expect {
            try PropertyListValue(jsonBytes: input.bytes)
        } throws: { error in
            guard let error = error as? JSONDecodingError else { return false }
            return error.line == input.line && error.column == input.column && error.message.contains("$")
        }
    }

    @Test func refusesValuesNestedBeyondTheLimitWithThePlace() throws {
        let limit = PropertyListValue.valueDepthLimit
        _ = try PropertyListValue(
            jsonString: String(repeating: "[", count: limit) + String(repeating: "]", count: limit))
        let deep =
            #"{"a": "[{", "b": "# + String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
            + "}"
        #expect {
            try PropertyListValue(jsonString: deep)
        } throws: { error in
            // The bracket that opens level 1,001 (the object is level 1; the string's brackets do not count).
            (error as? JSONDecodingError).map { $0.line == 1 && $0.column == 17 + limit } ?? false
        }
    }

    @Test func decodesDeepNestingWithoutCrashing() throws {
        let depth = 1500
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        var value = try PropertyListValue(jsonBytes: Array(text.utf8), maximumDepth: PropertyListValue.fileDepthLimit)
        var levels = 0
        while case .array(let elements) = value, let first = elements.first {
            value = first
            levels += 1
        }
        #expect(levels == depth - 1)
        #expect(throws: JSONDecodingError.self) {
            try PropertyListValue(jsonString: String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000))
        }
    }
}
