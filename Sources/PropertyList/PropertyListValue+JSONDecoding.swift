private import CJansson
import Foundation

extension PropertyListValue {
    /// Decodes a JSON text (API.md §1), with tagged `{"$date": ...}` and `{"$data": ...}` turned into dates and data.
    ///
    /// Parsing is jansson's, with duplicate keys rejected, any value allowed at the root, `\u0000` refused, invalid
    /// UTF-8 refused, integers beyond 64 bits and overflowing reals refused, and nothing allowed after the value.
    /// A NUL byte is refused wherever it is (jansson would end the text there). Arrays and objects may nest
    /// `maximumDepth` levels deep: the default keeps what clients send well inside jansson's own limit (2048), so
    /// that the files which wrap their values in a few levels more (the journal, saved defaults) read back; those
    /// files are read with `PropertyListValue.fileDepthLimit`. A UTF-8 byte order mark before the text is skipped, as
    /// RFC 8259 §8.1 allows (some Windows tools and editors write one). This is the only file that touches jansson.
    public init(
        jsonBytes bytes: some Collection<UInt8>, maximumDepth: Int = PropertyListValue.valueDepthLimit
    ) throws(JSONDecodingError) {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            try self.init(jsonText: bytes.dropFirst(3), maximumDepth: maximumDepth)
        } else {
            try self.init(jsonText: bytes, maximumDepth: maximumDepth)
        }
    }

    /// `init(jsonBytes:maximumDepth:)` after its byte order mark.
    private init(jsonText bytes: some Collection<UInt8>, maximumDepth: Int) throws(JSONDecodingError) {
        var error = json_error_t()
        var nul: Int?
        let root: UnsafeMutablePointer<json_t>? =
            bytes.withContiguousStorageIfAvailable { Self.load($0, &error, &nul) }
            ?? Array(bytes).withUnsafeBufferPointer { Self.load($0, &error, &nul) }
        if let nul {
            let (line, column) = Self.lineAndColumn(of: nul, in: bytes)
            throw JSONDecodingError(message: "NUL byte in the JSON text", line: line, column: column)
        }
        guard let root else {
            let text = withUnsafeBytes(of: error.text) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }.replacingOccurrences(of: " without JSON_ALLOW_NUL", with: "")
            // jansson gives the column of the last character it read; for a byte it could not read, the error is
            // at the next one.
            let atNextByte = text.hasPrefix("unable to decode byte") || text.hasPrefix("control character")
            throw JSONDecodingError(
                message: text.isEmpty ? "malformed JSON" : text,
                line: Int(error.line), column: Int(error.column) + (atNextByte ? 1 : 0), position: Int(error.position))
        }
        defer { json_decref(root) }
        var walk = Walk()
        do {
            self = try PropertyListValue.convert(root, levelsLeft: maximumDepth, walk: &walk)
        } catch  where error.message == Self.tooDeep {
            let offset = Self.firstOpening(in: bytes) { depth, _ in depth > maximumDepth }
            let (line, column) = offset.map { Self.lineAndColumn(of: $0, in: bytes) } ?? (1, 1)
            throw JSONDecodingError(
                message: "arrays and objects nested more than \(maximumDepth) levels deep", line: line, column: column)
        } catch {
            // A bad tag or text: placed at the `{` or `[` that holds it, or at the value itself at the root (a string).
            var placed = error
            let offset =
                if let failed = walk.failedContainer {
                    Self.firstOpening(in: bytes, where: { _, container in container == failed })
                } else {
                    bytes.firstIndex { !" \t\r\n".utf8.contains($0) }.map {
                        bytes.distance(from: bytes.startIndex, to: $0)
                    }
                }
            (placed.line, placed.column) = offset.map { Self.lineAndColumn(of: $0, in: bytes) } ?? (1, 1)
            throw placed
        }
    }

    /// Where `convert` is in the document: arrays and dictionaries are counted in the order their `[` and `{`
    /// appear in the text (jansson keeps a dictionary's keys in the order they were read), so the one holding a
    /// value that fails (a bad tag, text past the stream-safe limit) can be found again in the bytes.
    private struct Walk {
        var containers = 0
        /// The array or dictionary `convert` is in.
        var enclosing: Int?
        var failedContainer: Int?

        /// `failure`, placed at the enclosing array or dictionary.
        mutating func fail(_ failure: JSONDecodingError) -> JSONDecodingError {
            failedContainer = enclosing
            return failure
        }

        /// Runs `body` inside the next container.
        mutating func enter<T>(_ body: (inout Walk) throws(JSONDecodingError) -> T) throws(JSONDecodingError) -> T {
            let outer = enclosing
            enclosing = containers
            containers += 1
            defer { enclosing = outer }
            return try body(&self)
        }
    }

    /// jansson's parse of `buffer`, or nil with `nul` set when the buffer holds a NUL byte (found with `memchr`).
    private static func load(
        _ buffer: UnsafeBufferPointer<UInt8>, _ error: inout json_error_t, _ nul: inout Int?
    ) -> UnsafeMutablePointer<json_t>? {
        if let base = buffer.baseAddress, let found = memchr(base, 0, buffer.count) {
            nul = UnsafeRawPointer(found) - UnsafeRawPointer(base)
            return nil
        }
        return buffer.withMemoryRebound(to: CChar.self) { chars in
            json_loadb(chars.baseAddress, chars.count, bindery_json_decode_flags(), &error)
        }
    }

    /// How deep a client's value may nest (`init(jsonBytes:maximumDepth:)`).
    public static let valueDepthLimit = 1000
    /// How deep a document that wraps clients' values may nest (`PUT /store`, `data.json`: an export of values at
    /// `valueDepthLimit` reads back).
    public static let documentDepthLimit = valueDepthLimit + 8
    /// How deep the service's own files may nest: jansson's limit.
    public static let fileDepthLimit = 2048

    /// The 1-based line and column (in characters, as jansson counts them) of the byte at `offset`.
    private static func lineAndColumn(of offset: Int, in bytes: some Collection<UInt8>) -> (line: Int, column: Int) {
        var line = 1
        var column = 0
        for byte in bytes.prefix(offset + 1) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 0
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return (line, column)
    }

    /// The offset of the first `[` or `{` (outside strings) for which `match(depth, container)` holds: `depth`
    /// counts from 1 at the root, `container` is the array's or dictionary's 0-based number in text order.
    private static func firstOpening(
        in bytes: some Collection<UInt8>, where match: (_ depth: Int, _ container: Int) -> Bool
    ) -> Int? {
        var depth = 0
        var containers = 0
        var inString = false
        var escaped = false
        for (offset, byte) in bytes.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if match(depth, containers) { return offset }
                containers += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return nil
    }

    /// Decodes a JSON text given as a string.
    public init(jsonString: String) throws(JSONDecodingError) {
        try self.init(jsonBytes: Array(jsonString.utf8))
    }

    /// What `convert` throws past the depth limit; the initializer adds the place.
    private static let tooDeep = "too deep"

    private static func convert(
        _ json: UnsafeMutablePointer<json_t>, levelsLeft: Int, walk: inout Walk
    ) throws(JSONDecodingError) -> PropertyListValue {
        switch json_type(rawValue: UInt32(bindery_json_type(json))) {
        case JSON_NULL: return .null
        case JSON_TRUE: return .boolean(true)
        case JSON_FALSE: return .boolean(false)
        case JSON_INTEGER: return .integer(json_integer_value(json))
        case JSON_REAL:
            let value = json_real_value(json)
            guard value.isFinite else { throw JSONDecodingError(message: "real number overflow") }
            return .real(value)
        case JSON_STRING:
            let length = json_string_length(json)
            guard let base = json_string_value(json) else { return .string("") }
            return .string(try text(base, length: length, walk: &walk))
        case JSON_ARRAY:
            guard levelsLeft > 0 else { throw JSONDecodingError(message: tooDeep) }
            return try walk.enter { walk throws(JSONDecodingError) in
                let count = json_array_size(json)
                var elements: [PropertyListValue] = []
                elements.reserveCapacity(count)
                for index in 0..<count {
                    elements.append(try convert(json_array_get(json, index), levelsLeft: levelsLeft - 1, walk: &walk))
                }
                return .array(elements)
            }
        case JSON_OBJECT:
            guard levelsLeft > 0 else { throw JSONDecodingError(message: tooDeep) }
            return try walk.enter { walk throws(JSONDecodingError) in
                var dictionary: [String: PropertyListValue] = [:]
                dictionary.reserveCapacity(json_object_size(json))
                var iterator = json_object_iter(json)
                while let current = iterator {
                    let name = json_object_iter_key(current)!
                    let key = try text(name, length: strlen(name), walk: &walk)
                    let value = try convert(json_object_iter_value(current), levelsLeft: levelsLeft - 1, walk: &walk)
                    // jansson refuses a key twice byte for byte; two spellings of the same text would be one key here.
                    guard dictionary.updateValue(value, forKey: key) == nil else {
                        throw walk.fail(
                            JSONDecodingError(
                                message: "the key \"\(key)\" twice (\(PropertyListValue.equivalentKeysNote))"))
                    }
                    iterator = json_object_iter_next(json, current)
                }
                do throws(JSONDecodingError) {
                    return try untag(dictionary)
                } catch {
                    throw walk.fail(error)
                }
            }
        default:
            throw JSONDecodingError(message: "unknown JSON value")
        }
    }

    /// The string of jansson's UTF-8 text (a value or a key), refused past the stream-safe limit.
    private static func text(
        _ base: UnsafePointer<CChar>, length: Int, walk: inout Walk
    ) throws(JSONDecodingError) -> String {
        let utf8 = base.withMemoryRebound(to: UInt8.self, capacity: length) {
            UnsafeBufferPointer(start: $0, count: length)
        }
        guard StreamSafeText.isStreamSafe(utf8) else {
            throw walk.fail(JSONDecodingError(message: StreamSafeText.violation))
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    /// Turns `{"$date": "..."}` and `{"$data": "..."}` into typed values; other dictionaries stay as they are.
    private static func untag(_ dictionary: [String: PropertyListValue]) throws(JSONDecodingError) -> PropertyListValue
    {
        guard dictionary.count == 1, let (key, value) = dictionary.first else { return .dictionary(dictionary) }
        switch key {
        case "$date":
            guard case .string(let text) = value, let date = ISO8601.date(from: text) else {
                throw JSONDecodingError(message: "$date must be an ISO 8601 timestamp string")
            }
            return .date(date)
        case "$data":
            guard case .string(let text) = value, let data = Base64.decode(text) else {
                throw JSONDecodingError(message: "$data must be a base64 string")
            }
            return .data(data)
        default:
            return .dictionary(dictionary)
        }
    }
}
