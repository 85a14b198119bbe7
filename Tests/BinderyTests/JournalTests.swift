import Dispatch
import Foundation
import ObjectGraph
import Synchronization
import Testing

@testable import Bindery

#if canImport(Glibc)
    import Glibc
#endif

/// The journal's failure paths, on a device where every write fails (`/dev/full`: ENOSPC).
struct JournalTests {
    final class RollBacks: Sendable {
        let count = Mutex(0)
    }

    private func journal(_ policy: FsyncPolicy, rolledBack: RollBacks = RollBacks()) throws -> Journal {
        Journal(
            directory: DataDirectory(path: NSTemporaryDirectory()), policy: policy,
            file: try FileIO.open("/dev/full", O_WRONLY), firstSeq: 1, size: 0, seq: 0, snapshotSeq: nil,
            recordsSinceSnapshot: 0,
            snapshotRecords: 1_000, snapshotBytes: 1 << 20, deliver: { _ in },
            rollBack: { [rolledBack] in rolledBack.count.withLock { $0 += 1 } })
    }

    private func record(_ seq: Int64) -> ChangeRecord {
        ChangeRecord(
            seq: seq,
            changes: [Change(kind: .setting, target: ObjectID(entity: "E", id: "1"), key: "x", old: 1, new: 2)])
    }

    @Test func batchWriteFailureAnswersTheWaitersAndRefusesLaterCommits() throws {
        let rollBacks = RollBacks()
        let journal = try journal(.batch, rolledBack: rollBacks)
        defer { journal.close() }
        // Queued under the store's lock: the commit itself goes through; the flusher's write fails.
        try journal.append(record(1))
        #expect(throws: ObjectGraphError.self) { try journal.waitUntilDurable(1) }
        // The store is rolled back before the waiters hear of the failure.
        #expect(rollBacks.count.withLock { $0 } == 1)
        let refused = #expect(throws: ObjectGraphError.self) { try journal.append(record(2)) }
        #expect(refused?.code == "journal-failed")
        #expect(refused?.status == 503)
    }

    /// The store is rolled back once per failure: a refused rotation (a `save`) wakes the flusher again, which
    /// must not reload the store (and report it) each time. The failure stays readable for `/healthz`.
    @Test func batchWriteFailureRollsBackOnceAndStaysReported() throws {
        let rollBacks = RollBacks()
        let journal = try journal(.batch, rolledBack: rollBacks)
        defer { journal.close() }
        #expect(journal.failure == nil)
        try journal.append(record(1))
        #expect(throws: ObjectGraphError.self) { try journal.waitUntilDurable(1) }
        for _ in 0..<3 {
            #expect(throws: ObjectGraphError.self) { try journal.rotate(nextSeq: 2) }
        }
        // The flusher's passes after the refused rotations have run once a later waiter is answered.
        #expect(throws: ObjectGraphError.self) { try journal.waitUntilDurable(1) }
        usleep(50_000)
        #expect(rollBacks.count.withLock { $0 } == 1)
        #expect(journal.failure?.code == "journal-failed")
        #expect(journal.failure?.status == 503)
    }

    /// A flush that fails refuses its change (`always`: the transaction fails; `batch`: the waiter is answered 503
    /// and the store rolled back) and cuts its frames back off the file, so that a restart (or the rollback, which
    /// reloads the files) does not bring the refused change back.
    @Test(arguments: [FsyncPolicy.always, .batch])
    func failedFlushRefusesTheChangeAndCutsItOff(_ policy: FsyncPolicy) throws {
        let path = NSTemporaryDirectory() + "bindery-journal-\(UUID()).log"
        defer { unlink(path) }
        let failing = Atomic<Bool>(false)
        let rollBacks = RollBacks()
        let journal = Journal(
            directory: DataDirectory(path: NSTemporaryDirectory()), policy: policy,
            file: try FileIO.open(path, O_WRONLY | O_CREAT | O_APPEND), firstSeq: 1, size: 0, seq: 0,
            snapshotSeq: nil, recordsSinceSnapshot: 0, snapshotRecords: 1_000, snapshotBytes: 1 << 20,
            deliver: { _ in },
            rollBack: { [rollBacks] in rollBacks.count.withLock { $0 += 1 } },
            syncFile: { fd in failing.load(ordering: .relaxed) ? EIO : FileIO.sync(fd) })
        defer { journal.close() }
        try journal.append(record(1))
        try journal.waitUntilDurable(1)
        let durableSize = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect((durableSize ?? 0) > 0)
        failing.store(true, ordering: .relaxed)
        if policy == .always {
            let refused = #expect(throws: ObjectGraphError.self) { try journal.append(record(2)) }
            #expect(refused?.code == "journal-failed")
            #expect(refused?.status == 503)
        } else {
            try journal.append(record(2))
            #expect(throws: ObjectGraphError.self) { try journal.waitUntilDurable(2) }
            #expect(rollBacks.count.withLock { $0 } == 1)
        }
        #expect(journal.durableSeq == 1)
        #expect(journal.failure?.code == "journal-failed")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == durableSize)
    }

    /// The snapshot the segments follow is gone: a change is refused (the snapshot that recovers is the journal's
    /// to write), and its frame is cut back off the segment, which a start still reads: a refused change left there
    /// would come back, or meet the next change given its seq.
    @Test(arguments: [FsyncPolicy.always, .never])
    func aMissingSnapshotRefusesTheChangeAndCutsItOff(_ policy: FsyncPolicy) throws {
        let directory = NSTemporaryDirectory() + "bindery-journal-\(UUID())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/journal.log"
        let journal = Journal(
            directory: DataDirectory(path: directory), policy: policy,
            file: try FileIO.open(path, O_WRONLY | O_CREAT | O_APPEND), firstSeq: 1, size: 0, seq: 0,
            snapshotSeq: 0, recordsSinceSnapshot: 0, snapshotRecords: 1_000, snapshotBytes: 1 << 20,
            deliver: { _ in }, rollBack: {})
        defer { journal.close() }
        let refused = #expect(throws: ObjectGraphError.self) { try journal.append(record(1)) }
        #expect(refused?.code == "journal-segment-removed")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == 0)
    }

    final class Reports: Sendable {
        let lines = Mutex<[String]>([])
    }

    final class Disk: Sendable {
        let isFull: Atomic<Bool>
        init(full: Bool) { isFull = Atomic(full) }
        func fill(_ full: Bool) { isFull.store(full, ordering: .relaxed) }
    }

    /// A journal on a fresh file whose writes fail with ENOSPC while `disk` is full.
    private func journalOnFillableDisk(
        _ policy: FsyncPolicy, disk: Disk, rolledBack: RollBacks = RollBacks(), reports: Reports = Reports(),
        patience: Double = 5, probeInterval: Double = 1
    ) throws -> (Journal, path: String) {
        let path = NSTemporaryDirectory() + "bindery-journal-\(UUID()).log"
        let journal = Journal(
            directory: DataDirectory(path: NSTemporaryDirectory()), policy: policy,
            file: try FileIO.open(path, O_WRONLY | O_CREAT | O_APPEND), firstSeq: 1, size: 0, seq: 0,
            snapshotSeq: nil, recordsSinceSnapshot: 0, snapshotRecords: 1_000, snapshotBytes: 1 << 20,
            deliver: { _ in }, rollBack: { [rolledBack] in rolledBack.count.withLock { $0 += 1 } },
            report: { [reports] line in reports.lines.withLock { $0.append(line) } }, fullDiskPatience: patience,
            probeInterval: probeInterval,
            writeFile: { fd, bytes in disk.isFull.load(ordering: .relaxed) ? ENOSPC : FileIO.writeAll(fd, bytes) })
        return (journal, path)
    }

    /// With `batch` the change is committed already when the flusher's write finds the disk full: the write is tried
    /// again while space may come back (a snapshot that did not fit removes its temporary file), and the change is
    /// acknowledged once written, the journal never failed.
    @Test func batchRetriesAWriteThatFailsForWantOfSpace() throws {
        let disk = Disk(full: true)
        let rollBacks = RollBacks()
        let (journal, path) = try journalOnFillableDisk(.batch, disk: disk, rolledBack: rollBacks)
        defer { unlink(path) }
        defer { journal.close() }
        try journal.append(record(1))
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { disk.fill(false) }
        try journal.append(record(2))
        try journal.waitUntilDurable(2)
        #expect(journal.durableSeq == 2)
        #expect(journal.failure == nil)
        #expect(rollBacks.count.withLock { $0 } == 0)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect(size == journalFrame(record(1).jsonBytes()).count + journalFrame(record(2).jsonBytes()).count)
        // A rotation (a snapshot) that finds the disk full leaves the records queued and the segment in place.
        disk.fill(true)
        try journal.append(record(3))
        let refused = #expect(throws: ObjectGraphError.self) { try journal.rotate(nextSeq: 4) }
        #expect(refused?.code == "storage-error")
        #expect(journal.failure == nil)
        disk.fill(false)
        try journal.waitUntilDurable(3)
        #expect(rollBacks.count.withLock { $0 } == 0)
    }

    /// A disk that stays full fails the journal once the flusher's patience is spent, as a failed flush does.
    @Test func batchFailsWhenTheDiskStaysFull() throws {
        let rollBacks = RollBacks()
        let reports = Reports()
        let (journal, path) = try journalOnFillableDisk(
            .batch, disk: Disk(full: true), rolledBack: rollBacks, reports: reports, patience: 0.1)
        defer { unlink(path) }
        defer { journal.close() }
        try journal.append(record(1))
        let refused = #expect(throws: ObjectGraphError.self) { try journal.waitUntilDurable(1) }
        #expect(refused?.code == "journal-failed")
        #expect(refused?.message.contains(String(cString: strerror(ENOSPC))) == true)
        #expect(rollBacks.count.withLock { $0 } == 1)
        #expect(reports.lines.withLock { $0 } == [journal.failure?.message])
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == 0)
    }

    /// With `always` and `never`, a write that fails refuses its change only; the failure is readable (for
    /// `/healthz`) and reported once until a write succeeds again.
    @Test(arguments: [FsyncPolicy.always, .never])
    func aFailingWriteIsToldUntilOneSucceeds(_ policy: FsyncPolicy) throws {
        let disk = Disk(full: false)
        let reports = Reports()
        let (journal, path) = try journalOnFillableDisk(policy, disk: disk, reports: reports)
        defer { unlink(path) }
        defer { journal.close() }
        try journal.append(record(1))
        #expect(journal.writeFailure == nil)
        disk.fill(true)
        for seq in 2...3 {
            let refused = #expect(throws: ObjectGraphError.self) { try journal.append(record(Int64(seq))) }
            #expect(refused?.code == "storage-error")
            #expect(journal.writeFailure?.code == "storage-error")
        }
        #expect(reports.lines.withLock { $0.count } == 1)
        disk.fill(false)
        try journal.append(record(2))
        #expect(journal.writeFailure == nil)
        #expect(journal.failure == nil)
        #expect(reports.lines.withLock { $0.count } == 2)
        // A client alternating a change too large for the disk with one that fits flips the state each time: told
        // at most once a minute, so that it cannot fill the disk the log may share.
        for seq in 3...12 {
            disk.fill(true)
            _ = try? journal.append(record(Int64(seq)))
            disk.fill(false)
            try journal.append(record(Int64(seq)))
        }
        #expect(reports.lines.withLock { $0.count } == 2, "\(reports.lines.withLock { $0 })")
        #expect(journal.writeFailure == nil)
    }

    /// With `never`, a rotation flushes the old segment before the new one is made durable: a machine crash must not
    /// leave a torn segment before the last, which no start reads past.
    @Test func aRotationWithNeverFlushesTheOldSegment() throws {
        try withTemporaryDirectory { path in
            let syncs = Mutex<[String]>([])
            let (file, size) = try Journal.openSegment(DataDirectory(path: path), firstSeq: 1)
            let journal = Journal(
                directory: DataDirectory(path: path), policy: .never, file: file, firstSeq: 1, size: size, seq: 0,
                snapshotSeq: nil, recordsSinceSnapshot: 0, snapshotRecords: 1_000, snapshotBytes: 1 << 20,
                deliver: { _ in }, rollBack: {},
                syncFile: { fd in
                    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"))
                    syncs.withLock { $0.append(target ?? "?") }
                    return FileIO.sync(fd)
                })
            defer { journal.close() }
            for seq in 1...3 {
                try journal.append(
                    ChangeRecord(
                        seq: Int64(seq),
                        changes: [
                            Change(kind: .setting, target: ObjectID(entity: "E", id: "1"), key: "x", old: 1, new: 2)
                        ]
                    ))
            }
            #expect(syncs.withLock { $0 }.isEmpty)
            try journal.rotate(nextSeq: 4)
            #expect(syncs.withLock { $0 } == [path + "/" + DataDirectory.segmentName(1)])
        }
    }

    /// A rotation for a snapshot still to be written does not start a new segment after one that was removed: it
    /// is refused (the removed segment's records would be nowhere if that snapshot failed) and the segment stays
    /// lost for the recovery, whose snapshot is written first (`covered`).
    @Test func aRotationAfterARemovedSegmentWaitsForItsRecovery() throws {
        try withTemporaryDirectory { path in
            let (file, size) = try Journal.openSegment(DataDirectory(path: path), firstSeq: 1)
            let journal = Journal(
                directory: DataDirectory(path: path), policy: .always, file: file, firstSeq: 1, size: size, seq: 0,
                snapshotSeq: nil, recordsSinceSnapshot: 0, snapshotRecords: 1_000, snapshotBytes: 1 << 20,
                deliver: { _ in }, rollBack: {})
            defer { journal.close() }
            let recoveries = Mutex(0)
            journal.setRecovery { _ in
                recoveries.withLock { $0 += 1 }
                return nil
            }
            try journal.append(record(1))
            #expect(unlink(path + "/" + DataDirectory.segmentName(1)) == 0)
            let refused = #expect(throws: ObjectGraphError.self) { try journal.rotate(nextSeq: 2) }
            #expect(refused?.code == "journal-segment-removed")
            #expect(journal.isSegmentLost)
            #expect(recoveries.withLock { $0 } == 1)
            #expect(!FileManager.default.fileExists(atPath: path + "/" + DataDirectory.segmentName(2)))
            try journal.rotate(nextSeq: 2, covered: true)
            #expect(!journal.isSegmentLost)
            #expect(FileManager.default.fileExists(atPath: path + "/" + DataDirectory.segmentName(2)))
        }
    }

    /// A freed disk clears the failure without a change being tried (`/healthz` asks `recheckWriteFailure`): a
    /// test write, at most once per interval, which fails while the disk stays full.
    @Test func aFreedDiskIsFoundByATestWrite() throws {
        let disk = Disk(full: false)
        let reports = Reports()
        let (journal, path) = try journalOnFillableDisk(.always, disk: disk, reports: reports, probeInterval: 0.2)
        defer { unlink(path) }
        defer { journal.close() }
        #expect(journal.recheckWriteFailure() == nil)
        disk.fill(true)
        #expect(throws: ObjectGraphError.self) { try journal.append(record(1)) }
        #expect(journal.recheckWriteFailure()?.code == "storage-error")
        disk.fill(false)
        #expect(journal.recheckWriteFailure()?.code == "storage-error", "tried once in the interval")
        Thread.sleep(forTimeInterval: 0.25)
        #expect(journal.recheckWriteFailure() == nil)
        #expect(journal.writeFailure == nil)
        #expect(reports.lines.withLock { $0.last?.hasSuffix("changes are taken again") } == true)
        #expect(!FileManager.default.fileExists(atPath: NSTemporaryDirectory() + "write-probe.tmp"))
        try journal.append(record(1))
    }

    @Test(arguments: [FsyncPolicy.always, .never])
    func inlineWriteFailureFailsTheTransaction(_ policy: FsyncPolicy) throws {
        let journal = try journal(policy)
        defer { journal.close() }
        let failed = #expect(throws: ObjectGraphError.self) { try journal.append(record(1)) }
        #expect(failed?.message.contains("write") == true)
        #expect(failed?.status == 503)
    }
}

/// The journal frame of `payload`, as `JournalFrame` writes it (length, CRC-32, payload).
func journalFrame(_ payload: [UInt8]) -> [UInt8] {
    var bytes: [UInt8] = []
    JournalFrame.append(payload, to: &bytes)
    return bytes
}
