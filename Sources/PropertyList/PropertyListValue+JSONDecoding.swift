private import CJansson
import Foundation

extension PropertyListValue {
    /// Decodes a JSON text (API.md §1), with tagged `{"$date": ...}` and `{"$data": ...}` turned into dates and data.
    ///
    /// Parsing is jansson's, with duplicate keys rejected, any value allowed at the root, `\u0000` refused, invalid
    /// UTF-8 refused, integers beyond 64 bits and overflowing reals refused, and nothing allowed after the value.
    /// This is the only file that touches jansson.
    public init(jsonBytes bytes: some Collection<UInt8>) throws(JSONDecodingError) {
        var error = json_error_t()
        let root: UnsafeMutablePointer<json_t>? =
            bytes.withContiguousStorageIfAvailable { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    json_loadb(chars.baseAddress, chars.count, bindery_json_decode_flags(), &error)
                }
            }
            ?? Array(bytes).withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    json_loadb(chars.baseAddress, chars.count, bindery_json_decode_flags(), &error)
                }
            }
        guard let root else {
            let text = withUnsafeBytes(of: error.text) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }.replacingOccurrences(of: " without JSON_ALLOW_NUL", with: "")
            throw JSONDecodingError(
                message: text.isEmpty ? "malformed JSON" : text,
                line: Int(error.line), column: Int(error.column), position: Int(error.position))
        }
        defer { json_decref(root) }
        self = try PropertyListValue.convert(root)
    }

    /// Decodes a JSON text given as a string.
    public init(jsonString: String) throws(JSONDecodingError) {
        try self.init(jsonBytes: Array(jsonString.utf8))
    }

    private static func convert(_ json: UnsafeMutablePointer<json_t>) throws(JSONDecodingError) -> PropertyListValue {
        switch json_type(rawValue: UInt32(bindery_json_type(json))) {
        case JSON_NULL: return .null
        case JSON_TRUE: return .boolean(true)
        case JSON_FALSE: return .boolean(false)
        case JSON_INTEGER: return .integer(json_integer_value(json))
        case JSON_REAL:
            let value = json_real_value(json)
            guard value.isFinite else { throw JSONDecodingError(message: "real number overflow") }
            return .real(value)
        case JSON_STRING: return .string(string(of: json))
        case JSON_ARRAY:
            let count = json_array_size(json)
            var elements: [PropertyListValue] = []
            elements.reserveCapacity(count)
            for index in 0..<count {
                elements.append(try convert(json_array_get(json, index)))
            }
            return .array(elements)
        case JSON_OBJECT:
            var dictionary: [String: PropertyListValue] = [:]
            dictionary.reserveCapacity(json_object_size(json))
            var iterator = json_object_iter(json)
            while let current = iterator {
                let key = String(cString: json_object_iter_key(current))
                dictionary[key] = try convert(json_object_iter_value(current))
                iterator = json_object_iter_next(json, current)
            }
            return try untag(dictionary)
        default:
            throw JSONDecodingError(message: "unknown JSON value")
        }
    }

    private static func string(of json: UnsafeMutablePointer<json_t>) -> String {
        let length = json_string_length(json)
        guard let base = json_string_value(json) else { return "" }
        return base.withMemoryRebound(to: UInt8.self, capacity: length) { pointer in
            String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
        }
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
            guard case .string(let text) = value, let data = Data(base64Encoded: text) else {
                throw JSONDecodingError(message: "$data must be a base64 string")
            }
            return .data(data)
        default:
            return .dictionary(dictionary)
        }
    }
}
