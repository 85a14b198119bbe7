/// One HTTP request, as a value: no pointer into libmicrohttpd survives the handler call.
public struct HTTPRequest: Sendable {
    /// The method in upper case (`GET`, `PUT`, ...).
    public var method: String
    /// The request target's path exactly as sent, still percent-encoded, without the query.
    public var rawPath: String
    /// The path's segments, percent-decoded one by one (so an encoded `%2F` stays inside its segment); empty
    /// segments are dropped. Nil when a segment does not decode to valid UTF-8 or holds a NUL byte.
    public var pathSegments: [String]?
    /// Query parameters in order, percent-decoded, with `+` read as a space.
    public var query: [(name: String, value: String)]
    /// The query exactly as sent (what follows `?`, still percent-encoded; bytes outside printable ASCII
    /// percent-encoded), for a redirect that keeps it; nil when the target has no query parameters.
    public var rawQuery: String?
    /// False when a query parameter's name or value is not valid percent-encoded UTF-8 (it stands in `query` as
    /// U+FFFD, which a client may also send on purpose).
    public var queryDecodes = true
    /// Header fields in the order sent, names lower-cased; see `header(_:)`.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(
        method: String, rawPath: String, rawQuery: String? = nil, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = [], body: [UInt8] = []
    ) {
        self.method = method
        self.rawPath = rawPath
        self.rawQuery = rawQuery
        self.pathSegments = HTTPRequest.decodeSegments(rawPath)
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The header field with this name (any case); the values of a repeated field are joined with `, `.
    public func header(_ name: String) -> String? {
        var found: String?
        for field in headers where equalIgnoringASCIICase(field.name, name) {
            found = found.map { $0 + ", " + field.value } ?? field.value
        }
        return found
    }

    /// How the `Accept` header takes the media type `type` (`text/event-stream`): the quality (`q`, 0 to 1) of the
    /// most specific range it matches (RFC 9110 §12.5.1: the type itself, then `text/*`, then `*/*`; the highest
    /// where one is given twice), 0 when none does, and whether that range names the type itself; nil without the
    /// header. `q=0` means "not acceptable"; a `q` that does not read as a number counts as 1.
    public func acceptance(of type: String) -> (quality: Double, named: Bool)? {
        guard let accept = header("Accept") else { return nil }
        let family = String(type.prefix { $0 != "/" }) + "/*"
        var best: (specificity: Int, quality: Double)?
        for range in Self.splitOutsideQuotes(accept, at: ",") {
            let parts = Self.splitOutsideQuotes(range, at: ";").map(trimmingWhitespace)
            guard let name = parts.first else { continue }
            let specificity =
                equalIgnoringASCIICase(name, type)
                ? 3 : equalIgnoringASCIICase(name, family) ? 2 : name == "*/*" ? 1 : 0
            guard specificity > 0 else { continue }
            var q = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map(trimmingWhitespace)
                if pair.count == 2, equalIgnoringASCIICase(pair[0], "q"), let value = Double(pair[1]), value.isFinite {
                    q = min(max(value, 0), 1)
                }
            }
            if let current = best,
                current.specificity > specificity
                    || (current.specificity == specificity && current.quality >= q)
            {
                continue
            }
            best = (specificity, q)
        }
        return (best?.quality ?? 0, best?.specificity == 3)
    }

    /// Whether the `Accept` header asks for one of `types` (alternatives to JSON) rather than JSON: one is acceptable
    /// (`acceptance(of:)`) with a `q` above JSON's, or equal to it where the client names it (a wildcard alone, or no
    /// header, chooses JSON).
    public func prefersToJSON(_ types: [String]) -> Bool {
        let json = acceptance(of: "application/json")?.quality ?? 1
        return types.contains { type in
            guard let taken = acceptance(of: type), taken.quality > 0 else { return false }
            return taken.quality > json || (taken.quality == json && taken.named)
        }
    }

    /// Whether the client takes JSON (no `Accept` header, or one that JSON matches with a `q` above 0).
    public var acceptsJSON: Bool { (acceptance(of: "application/json")?.quality ?? 1) > 0 }

    /// `text` split at `separator` where it is not inside a quoted string (RFC 9110 §5.6.4, backslash escapes too).
    static func splitOutsideQuotes(_ text: some StringProtocol, at separator: Character) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var quoted = false
        var escaped = false
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if escaped {
                escaped = false
            } else if quoted && character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if !quoted && character == separator {
                parts.append(Substring(text[start..<index]))
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        parts.append(Substring(text[start...]))
        return parts
    }

    /// The last value of the query parameter with this name.
    public func queryValue(_ name: String) -> String? {
        query.last(where: { $0.name == name })?.value
    }

    /// The last value of a query parameter that filters: nil when it is absent or empty, as an empty value
    /// (`entity=`, `filter=`) filters nothing.
    public func filterValue(_ name: String) -> String? {
        queryValue(name).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `rawQuery` from the C string after a target's `?`: printable ASCII as it is, other bytes percent-encoded (they
    /// could not go into a `Location` header as they came).
    static func rawQuery(from text: UnsafePointer<CChar>) -> String {
        var query = ""
        var byte = text
        while byte.pointee != 0 {
            let value = UInt8(bitPattern: byte.pointee)
            if (0x21...0x7E).contains(value) {
                query.unicodeScalars.append(Unicode.Scalar(value))
            } else {
                query += percentEncoded(value)
            }
            byte += 1
        }
        return query
    }

    static func decodeSegments(_ path: String) -> [String]? {
        var path = path
        return path.withUTF8 { bytes -> [String]? in
            var segments: [String] = []
            segments.reserveCapacity(bytes.reduce(0) { $1 == UInt8(ascii: "/") ? $0 + 1 : $0 })
            var start = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                if index > start {
                    guard let segment = decodeSegment(UnsafeBufferPointer(rebasing: bytes[start..<index])) else {
                        return nil
                    }
                    segments.append(segment)
                }
                start = index + 1
            }
            return segments
        }
    }

    /// One segment's bytes (between slashes of a valid UTF-8 path) percent-decoded; nil for a bad escape, invalid
    /// UTF-8 or a NUL byte.
    private static func decodeSegment(_ raw: UnsafeBufferPointer<UInt8>) -> String? {
        var escaped = false
        for byte in raw {
            if byte == 0 { return nil }
            if byte == UInt8(ascii: "%") { escaped = true }
        }
        // Nothing to decode: the bytes are already valid UTF-8 (a String's bytes cut at ASCII boundaries).
        guard escaped else { return String(decoding: raw, as: UTF8.self) }
        guard let decoded = percentDecode(raw, asForm: false), !decoded.utf8.contains(0) else { return nil }
        return decoded
    }

    /// Percent-decodes bytes into a string; nil on a bad escape or invalid UTF-8.
    ///
    /// `asForm` decodes as a form (the query, WHATWG's application/x-www-form-urlencoded): `+` is a space, and a `%`
    /// without two hex digits after it is itself (`?q=100%` is "100%"), so only bytes that are not UTF-8 fail.
    static func percentDecode(_ bytes: some Collection<UInt8>, asForm: Bool) -> String? {
        if !bytes.contains(where: { $0 == UInt8(ascii: "%") || (asForm && $0 == UInt8(ascii: "+")) }) {
            return String(validating: bytes, as: UTF8.self)  // nothing to decode
        }
        let bytes = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        func hexValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "%"):
                guard index + 1 < bytes.count, let high = hexValue(bytes[index]), let low = hexValue(bytes[index + 1])
                else {
                    guard asForm else { return nil }
                    out.append(byte)
                    continue
                }
                out.append(high << 4 | low)
                index += 2
            case UInt8(ascii: "+") where asForm:
                out.append(UInt8(ascii: " "))
            default:
                out.append(byte)
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}

/// `text` without the spaces and tabs around it.
func trimmingWhitespace(_ text: some StringProtocol) -> String {
    let isBlank = { (character: Character) in character == " " || character == "\t" }
    guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) })
    else { return "" }
    return String(text[first...last])
}

/// Whether two header field names are equal: they are ASCII tokens, so compare them byte by byte, folding only A–Z.
func equalIgnoringASCIICase(_ lhs: String, _ rhs: String) -> Bool {
    lhs.utf8.count == rhs.utf8.count
        && lhs.utf8.elementsEqual(rhs.utf8) { $0 == $1 || ($0 | 0x20 == $1 | 0x20 && ($0 | 0x20) &- 97 < 26) }
}

/// `%XX`: a byte percent-encoded, two upper-case hex digits.
func percentEncoded(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF".utf8)
    return String(decoding: [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
}
