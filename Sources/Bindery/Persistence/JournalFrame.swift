/// One record on disk, in the journal and in snapshot files: a 4-byte payload length and a 4-byte CRC-32 of the
/// payload (both little-endian), then the payload.
///
/// A crash can leave a torn last frame (a short header or payload) or, on some file systems, a tail of zeros or
/// garbage; `scan` stops at the first frame that is not whole and intact, so a record is applied entirely or not at
/// all.
enum JournalFrame {
    static let headerSize = 8
    /// What each journal segment this version opens begins with (segments of earlier versions have none), so that a
    /// segment emptied by something else is told from one nothing was written to.
    static let segmentHeader = Array("BNDJRNL1".utf8)
    /// Larger lengths are taken as garbage (a record is at most a few graphs of a large store).
    static let maximumPayload = 1 << 31

    /// How a scan ended.
    enum End: Equatable {
        /// Every byte belongs to a whole, intact frame.
        case clean
        /// The frame at `offset` is torn or corrupt (`reason`); the bytes from `offset` on are to be dropped.
        case damaged(offset: Int, reason: String)
    }

    /// Appends the frame of `payload` to `bytes`.
    static func append(_ payload: [UInt8], to bytes: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: CRC32.checksum(payload).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: payload)
    }

    /// Whether an intact frame of a change record (a JSON object) starts anywhere after `offset`: then the damage
    /// at `offset` is in the middle of the journal, not a torn end, and cutting there would drop acknowledged
    /// records.
    static func hasIntactFrame(in bytes: [UInt8], after offset: Int) -> Bool {
        bytes.withUnsafeBytes { raw in
            var start = offset + 1
            while start + headerSize < raw.count {
                defer { start += 1 }
                guard raw[start + headerSize] == UInt8(ascii: "{") else { continue }
                let length = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
                let payload = start + headerSize
                guard length > 0, length <= raw.count - payload else { continue }
                let checksum = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self))
                if CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[payload..<payload + length])) == checksum {
                    return true
                }
            }
            return false
        }
    }

    /// The payload ranges of the whole, intact frames of `bytes` from `start` on, and how the scan ended.
    static func scan(_ bytes: [UInt8], from start: Int = 0) -> (payloads: [Range<Int>], end: End) {
        bytes.withUnsafeBytes { raw in
            var payloads: [Range<Int>] = []
            var offset = start
            while offset < raw.count {
                guard raw.count - offset >= headerSize else {
                    return (payloads, .damaged(offset: offset, reason: "a torn record header"))
                }
                let length = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                let checksum = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
                guard length > 0, length <= maximumPayload else {
                    return (payloads, .damaged(offset: offset, reason: "an impossible record length \(length)"))
                }
                let start = offset + headerSize
                guard raw.count - start >= length else {
                    return (payloads, .damaged(offset: offset, reason: "a torn record (\(length) bytes announced)"))
                }
                guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[start..<start + length])) == checksum else {
                    return (payloads, .damaged(offset: offset, reason: "a record whose checksum does not match"))
                }
                payloads.append(start..<start + length)
                offset = start + length
            }
            return (payloads, .clean)
        }
    }
}
