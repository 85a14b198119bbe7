import Foundation

extension PropertyListValue {
    /// The compact JSON text of this value (API.md §1), as UTF-8 bytes.
    ///
    /// Dictionary keys are sorted. Reals use the shortest form that reads back to the same double (Swift's
    /// `description`), always with a fraction or an exponent, so `3.0` stays a real. A non-finite real, which no
    /// decoded value can hold, is written as `null`. Encoding is done here rather than by jansson because jansson
    /// offers only a fixed precision for reals (17 digits writes 0.1 as 0.10000000000000001).
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter()
        writer.write(self)
        return writer.bytes
    }

    /// The compact JSON text of this value.
    public func jsonString() -> String {
        String(decoding: jsonBytes(), as: UTF8.self)
    }
}

/// Appends JSON text to a byte buffer; used by `PropertyListValue.jsonBytes()` and by writers of larger documents.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func write(_ value: PropertyListValue) {
        switch value {
        case .null: append("null")
        case .boolean(let b): append(b ? "true" : "false")
        case .integer(let i): append(String(i))
        case .real(let r): writeReal(r)
        case .string(let s): writeString(s)
        case .date(let d):
            append("{\"$date\":\"")
            append(ISO8601.string(from: d))
            append("\"}")
        case .data(let d):
            append("{\"$data\":\"")
            append(d.base64EncodedString())
            append("\"}")
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .dictionary(let dictionary):
            bytes.append(UInt8(ascii: "{"))
            for (index, entry) in dictionary.sorted(by: { $0.key.precedesByCodePoints($1.key) }).enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(entry.key)
                bytes.append(UInt8(ascii: ":"))
                write(entry.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Writes raw, already valid JSON text.
    public mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Writes raw, already valid JSON bytes.
    public mutating func append(bytes other: [UInt8]) {
        bytes.append(contentsOf: other)
    }

    public mutating func writeReal(_ r: Double) {
        guard r.isFinite else {
            append("null")
            return
        }
        let text = r.description
        append(text)
        if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) { append(".0") }
    }

    /// Writes a JSON string: the bytes as they are, runs of them at once, but for `"`, `\` and control characters.
    public mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { utf8 in
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F else {
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                writeEscape(byte)
                start = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func writeEscape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            append("u00")
            bytes.append(hex.utf8Start[Int(byte >> 4)])
            bytes.append(hex.utf8Start[Int(byte & 0xF)])
        }
    }
}
