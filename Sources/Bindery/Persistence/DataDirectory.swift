import Foundation
import ObjectGraph

#if canImport(Glibc)
    import Glibc
#endif

/// The files of a data directory (`--data`, API.md §9).
///
/// - `lock`: held with `flock` while a server uses the directory, so a second server refuses to start; the directory
///   itself is locked too, so that deleting `lock` does not let a second server in.
/// - `snapshot-<seq>.bin`: the whole store at `seq` (`SnapshotFile` over `ReadView.binarySnapshot()`), written to a
///   `.tmp`, fsynced, renamed, directory fsynced. Only the newest is needed; older ones are removed after it is
///   durable.
/// - `journal-<first seq>.log`: segments of journal frames (`JournalFrame`, payload: `ChangeRecord.json` as JSON),
///   one per snapshot interval; a segment whose records are all in a durable snapshot is removed.
/// - `saved.bin`: a hard link to the snapshot of the last `save` (or of the first seeding): what `revertToSaved`
///   returns to.
/// - `saved-state`: `"<seq of saved.bin> <content seq>\n"`, written (durably) after a `revertToSaved` and at a clean
///   close when the document is not edited: the store's content at that content seq (`ReadView.contentSeq`) equals
///   `saved.bin`, so the next start finds the document unedited. Ignored once `saved.bin` holds another seq.
///
/// Sequence numbers in names are zero-padded to 20 digits, so names sort in seq order.
///
/// Files are named by path, so every write by name first checks that the path still leads to the directory this run
/// locked (`checkInPlace`): a directory removed (or moved away) under a running server, and perhaps made anew for
/// another server, must not receive this run's snapshots or lose its files to this run's clean-up.
struct DataDirectory: Sendable {
    let path: String
    /// The device and inode of the directory `lock()` locked.
    private var locked: (device: UInt64, inode: UInt64)?

    init(path: String) {
        self.path = path
    }

    static let savedName = "saved.bin"
    static let savedStateName = "saved-state"
    /// Written (durably) by a clean close, removed (durably) when a run starts: without it, the last run crashed.
    static let closedCleanlyName = "closed-cleanly"
    /// The notification center's reserved seqs (`NotificationCenter`).
    static let notificationSeqsName = "notification-seqs"
    /// The files besides snapshots and journal that a run leaves (`defaults.json`: the saved user defaults, written
    /// by the REST layer): any of them shows the directory was used, so it is not seeded again.
    static let stateNames: Set = [
        savedName, savedStateName, closedCleanlyName, notificationSeqsName, "defaults.json",
    ]

    func file(_ name: String) -> String { path + "/" + name }

    static func snapshotName(_ seq: Int64) -> String { "snapshot-" + padded(seq) + ".bin" }

    static func segmentName(_ firstSeq: Int64) -> String { "journal-" + padded(firstSeq) + ".log" }

    private static func padded(_ seq: Int64) -> String {
        let digits = String(seq)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }

    /// Snapshots (by seq) and journal segments (by first seq) present, in increasing order.
    func contents() throws(ObjectGraphError) -> (snapshots: [Int64], segments: [Int64]) {
        var snapshots: [Int64] = []
        var segments: [Int64] = []
        for name in try FileIO.list(path) {
            if let seq = Self.number(in: name, prefix: "snapshot-", suffix: ".bin") { snapshots.append(seq) }
            if let seq = Self.number(in: name, prefix: "journal-", suffix: ".log") { segments.append(seq) }
        }
        return (snapshots.sorted(), segments.sorted())
    }

    /// Removes leftovers of interrupted snapshot writes.
    func removeTemporaryFiles() throws(ObjectGraphError) {
        for name in try FileIO.list(path) where name.hasSuffix(".tmp") { unlink(file(name)) }
    }

    private static func number(in name: String, prefix: String, suffix: String) -> Int64? {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
        return Int64(name.dropFirst(prefix.count).dropLast(suffix.count))
    }

    /// Takes the directory's lock for as long as the returned descriptors live: `flock` on the directory itself, and
    /// on its `lock` file (created if missing, never removed), which earlier versions lock.
    ///
    /// The directory's own lock is what holds when `lock` is deleted (a new `lock` file is another file, free to
    /// lock). 409 `data-directory-locked` when another process (or another document in this one) holds either.
    mutating func lock() throws(ObjectGraphError) -> [OwnedFileDescriptor] {
        let directory = try FileIO.open(path, O_RDONLY | O_DIRECTORY)
        try lock(directory)
        var status = stat()
        guard fstat(directory.fd, &status) == 0 else { throw FileIO.error("fstat", path) }
        locked = (UInt64(status.st_dev), UInt64(status.st_ino))
        let lockFile = try FileIO.open(file("lock"), O_RDWR | O_CREAT)
        try lock(lockFile)
        return [directory, lockFile]
    }

    /// Writes the file `name` durably (`FileIO.writeDurably`: a temporary file, fsynced, renamed, directory fsynced)
    /// once `checkInPlace` passed.
    func writeDurably(_ parts: [[UInt8]], to name: String) throws(ObjectGraphError) {
        try checkInPlace()
        try FileIO.writeDurably(parts, to: file(name), directory: path)
    }

    /// Throws 500 `storage-error` when the path no longer leads to the directory `lock()` locked (it was removed or
    /// moved, and perhaps another made in its place): nothing may then be written or removed by name.
    func checkInPlace() throws(ObjectGraphError) {
        guard let locked else { return }
        var status = stat()
        guard stat(path, &status) == 0, UInt64(status.st_dev) == locked.device, UInt64(status.st_ino) == locked.inode
        else {
            throw ObjectGraphError(
                status: 500, code: "storage-error",
                message: "The data directory \(path) was removed or replaced while in use; nothing more is written "
                    + "there. Restart the server.")
        }
    }

    private func lock(_ descriptor: OwnedFileDescriptor) throws(ObjectGraphError) {
        guard flock(descriptor.fd, LOCK_EX | LOCK_NB) == 0 else {
            if errno == EWOULDBLOCK {
                let held = descriptor.path == path ? "the directory" : descriptor.path
                throw ObjectGraphError(
                    status: 409, code: "data-directory-locked",
                    message: "\(path) is in use by another bindery (\(held) is locked); stop it or choose "
                        + "another --data directory.")
            }
            throw FileIO.error("flock", descriptor.path)
        }
    }
}

/// A snapshot file: `"BNDSNAPH"`, the payload length (u64), the payload's CRC-32 (u32), the payload.
///
/// Earlier versions wrote `"BNDSNAPF"`, read the same way; `"BNDSNAPH"` also says that every journal segment after
/// the snapshot was opened with a header (`JournalFrame.segmentHeader`).
enum SnapshotFile {
    static let magic = Array("BNDSNAPH".utf8)
    static let magicBeforeSegmentHeaders = Array("BNDSNAPF".utf8)
    static let headerSize = 20

    /// Whether the journal segments after the snapshot in `bytes` begin with a header (see the type's comment).
    static func isFollowedBySegmentHeaders(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: magic)
    }

    static func header(for payload: [UInt8]) -> [UInt8] {
        var bytes = magic
        withUnsafeBytes(of: UInt64(payload.count).littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: CRC32.checksum(payload).littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// The payload of a snapshot file, checked; 500 `bad-snapshot` when the file is short or corrupt.
    static func payload(of bytes: [UInt8], path: String) throws(ObjectGraphError) -> [UInt8] {
        func bad(_ reason: String) -> ObjectGraphError {
            ObjectGraphError(status: 500, code: "bad-snapshot", message: "\(path): \(reason).")
        }
        guard bytes.count >= headerSize, [magic, magicBeforeSegmentHeaders].contains(Array(bytes[0..<8])) else {
            throw bad("not a snapshot file")
        }
        let (length, checksum) = bytes.withUnsafeBytes { raw in
            (
                UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self))
            )
        }
        guard UInt64(bytes.count - headerSize) == length else { throw bad("torn (length differs)") }
        let matches = bytes.withUnsafeBytes { raw in
            CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[headerSize...])) == checksum
        }
        guard matches else { throw bad("corrupt (checksum differs)") }
        return Array(bytes[headerSize...])
    }
}
