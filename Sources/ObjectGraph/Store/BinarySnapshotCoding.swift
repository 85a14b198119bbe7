import Foundation
import PropertyList

/// Little-endian writing of the binary snapshot format (`ReadView.binarySnapshot()`).
struct BinarySnapshotWriter {
    var bytes: [UInt8] = []

    init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    mutating func append(_ value: UInt8) {
        bytes.append(value)
    }

    mutating func append(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ value: Int32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ value: Int64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            append(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// One property-list value: a tag byte, then its payload.
    mutating func append(_ value: PropertyListValue) {
        switch value {
        case .null: append(UInt8(0))
        case .boolean(let flag): append(UInt8(flag ? 2 : 1))
        case .integer(let number):
            append(UInt8(3))
            append(number)
        case .real(let number):
            append(UInt8(4))
            append(Int64(bitPattern: number.bitPattern))
        case .string(let text):
            append(UInt8(5))
            append(text)
        case .date(let date):
            append(UInt8(6))
            append(Int64(bitPattern: date.timeIntervalSince1970.bitPattern))
        case .data(let data):
            append(UInt8(7))
            append(UInt32(data.count))
            bytes.append(contentsOf: data)
        case .array(let elements):
            append(UInt8(8))
            append(UInt32(elements.count))
            for element in elements { append(element) }
        case .dictionary(let dictionary):
            append(UInt8(9))
            append(UInt32(dictionary.count))
            for (key, element) in dictionary {
                append(key)
                append(element)
            }
        }
    }
}

/// Bounds-checked little-endian reading of the binary snapshot format; every read throws when the bytes run out.
struct BinarySnapshotReader: ~Copyable {
    let buffer: UnsafeRawBufferPointer
    var offset = 0

    init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }

    var isAtEnd: Bool { offset == buffer.count }

    private mutating func take(_ count: Int) throws(ObjectGraphError) -> Int {
        guard count >= 0, buffer.count - offset >= count else { throw Self.truncated() }
        let start = offset
        offset += count
        return start
    }

    mutating func byte() throws(ObjectGraphError) -> UInt8 {
        buffer[try take(1)]
    }

    mutating func uint32() throws(ObjectGraphError) -> UInt32 {
        let start = try take(4)
        return UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: start, as: UInt32.self))
    }

    mutating func int32() throws(ObjectGraphError) -> Int32 {
        let start = try take(4)
        return Int32(littleEndian: buffer.loadUnaligned(fromByteOffset: start, as: Int32.self))
    }

    mutating func int64() throws(ObjectGraphError) -> Int64 {
        let start = try take(8)
        return Int64(littleEndian: buffer.loadUnaligned(fromByteOffset: start, as: Int64.self))
    }

    mutating func count() throws(ObjectGraphError) -> Int {
        let count = Int(try uint32())
        guard count <= buffer.count - offset else { throw Self.truncated() }
        return count
    }

    mutating func string() throws(ObjectGraphError) -> String {
        let length = try count()
        let start = try take(length)
        return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[start..<start + length]), as: UTF8.self)
    }

    mutating func value() throws(ObjectGraphError) -> PropertyListValue {
        switch try byte() {
        case 0: return .null
        case 1: return .boolean(false)
        case 2: return .boolean(true)
        case 3: return .integer(try int64())
        case 4: return .real(Double(bitPattern: UInt64(bitPattern: try int64())))
        case 5: return .string(try string())
        case 6: return .date(Date(timeIntervalSince1970: Double(bitPattern: UInt64(bitPattern: try int64()))))
        case 7:
            let length = try count()
            let start = try take(length)
            return .data(Data(buffer[start..<start + length]))
        case 8:
            let count = try count()
            var elements: [PropertyListValue] = []
            elements.reserveCapacity(count)
            for _ in 0..<count { elements.append(try value()) }
            return .array(elements)
        case 9:
            let count = try count()
            var dictionary: [String: PropertyListValue] = [:]
            dictionary.reserveCapacity(count)
            for _ in 0..<count {
                let key = try string()
                dictionary[key] = try value()
            }
            return .dictionary(dictionary)
        case let tag:
            throw Self.bad("unknown value tag \(tag) at byte \(offset - 1).")
        }
    }

    static func truncated() -> ObjectGraphError {
        bad("it ends too early.")
    }

    static func bad(_ reason: String) -> ObjectGraphError {
        ObjectGraphError(status: 500, code: "bad-snapshot", message: "Snapshot: \(reason)")
    }
}
