import Foundation
import ObjectGraph
import PropertyList
import Synchronization
import Testing

@testable import Bindery

#if canImport(Glibc)
    import Glibc
#endif

/// The data directory: restart, crash recovery, torn tails, snapshots, the lock (API.md §9).
struct PersistenceTests {
    @Test func restartKeepsEveryChangeAndDoesNotReseed() throws {
        try withTemporaryDirectory { path in
            let before: PropertyListValue
            do {
                let document = try openDocument(path)
                #expect(document.store.seq == 1)
                try document.set(99_000, "salary", of: "Employee/3")
                try document.transaction { try $0.insert("Department", id: "9", values: ["name": "Ops"]) }
                try document.transaction { try $0.delete(ObjectID(reference: "Employee/4")!) }
                before = document.graphWithVersions
                document.close()
            }
            let document = try openDocument(path)
            #expect(document.store.seq == 4)
            #expect(document.graphWithVersions == before)
            #expect(try document.value("salary", of: "Employee/3") == 99_000)
            #expect(try document.value("name", of: "Department/9") == "Ops")
            #expect(document.store.read { $0.contains(ObjectID(reference: "Employee/4")!) } == false)
        }
    }

    /// A snapshot whose bytes no longer match its checksum is not loaded (a flipped byte in a value would be served
    /// as data): with no other snapshot, the start is refused.
    @Test func aSnapshotWithAWrongChecksumIsNotLoaded() throws {
        try withTemporaryDirectory { path in
            do {
                let document = try openDocument(path)
                try document.transaction { try $0.insert("Department", id: "9", values: ["name": "Opsxyz"]) }
                document.close()
            }
            let needle = Array("Opsxyz".utf8)
            for name in try FileManager.default.contentsOfDirectory(atPath: path) where name.hasPrefix("snapshot-") {
                let url = URL(fileURLWithPath: path + "/" + name)
                var bytes = [UInt8](try Data(contentsOf: url))
                let at = try #require(
                    (20...(bytes.count - needle.count)).first { Array(bytes[$0..<($0 + needle.count)]) == needle })
                bytes[at + 3] = UInt8(ascii: "X")
                try Data(bytes).write(to: url)
            }
            #expect {
                try openDocument(path)
            } throws: { error in
                (error as? ObjectGraphError)?.code == "bad-snapshot"
            }
        }
    }

    /// With several snapshots (an older one left by a crash before it was removed), the newest is loaded.
    @Test func theNewestOfSeveralSnapshotsIsLoaded() throws {
        try withTemporaryDirectory { path in
            var older: (name: String, bytes: Data)?
            do {
                let document = try openDocument(path)
                try document.set(101, "salary", of: "Employee/4")
                document.close()
            }
            for name in try FileManager.default.contentsOfDirectory(atPath: path) where name.hasPrefix("snapshot-") {
                older = (name, try Data(contentsOf: URL(fileURLWithPath: path + "/" + name)))
            }
            do {
                let document = try openDocument(path)
                try document.set(202, "salary", of: "Employee/4")
                document.close()
            }
            let kept = try #require(older)
            try kept.bytes.write(to: URL(fileURLWithPath: path + "/" + kept.name))
            let document = try openDocument(path)
            #expect(try document.value("salary", of: "Employee/4") == 202)
        }
    }

    /// A snapshot is written durably: its file is synced before it is renamed into place (`FileIO.writeDurably`), and
    /// the directory after.
    @Test func aSnapshotIsSyncedBeforeAndAfterItsRename() throws {
        try withTemporaryDirectory { path in
            let written = try FileIO.syncs(under: path) {
                try FileIO.writeDurably([[1], [2, 3]], to: path + "/file", directory: path)
            }
            #expect(written == [path + "/file.tmp", path])
            #expect(try FileIO.read(path + "/file") == [1, 2, 3])
            let document = try openDocument(path)
            defer { document.close() }
            try document.set(101, "salary", of: "Employee/4")
            var seq: Int64 = 0
            let synced = try FileIO.syncs(under: path) { seq = try document.save() }
            #expect(synced.contains(path + "/" + DataDirectory.snapshotName(seq) + ".tmp"), "\(synced)")
        }
    }

    /// Leftovers of an interrupted durable write (`*.tmp`) are removed at the start.
    @Test func leftoverTemporaryFilesAreRemovedAtTheStart() throws {
        try withTemporaryDirectory { path in
            try openDocument(path).close()
            let leftover = path + "/" + DataDirectory.snapshotName(99) + ".tmp"
            try Data("half a snapshot".utf8).write(to: URL(fileURLWithPath: leftover))
            let document = try openDocument(path)
            defer { document.close() }
            #expect(access(leftover, F_OK) != 0)
        }
    }

    /// A model tightened since the data was written (a `maxLength` the stored names break) does not stop a start
    /// after a crash: the journal's records are applied as committed, as a snapshot's objects are (the journal's
    /// replay checked them against the new model and refused to start), and the constraint holds for new changes.
    @Test func journalReplayUnderATightenedModelKeepsEveryAcknowledgedChange() throws {
        try withTemporaryDirectory { path in
            let fixture = path + "-fixture"
            try FileManager.default.copyItem(atPath: employeesFixture, toPath: fixture)
            defer { try? FileManager.default.removeItem(atPath: fixture) }
            let document = try openDocument(path, fsync: .always)
            try document.set(99_000, "salary", of: "Employee/3")
            let objects = document.store.read { $0.exportGraph() }["objects"]!.arrayValue!.map { object in
                guard object["$id"] == "Employee/4" else { return object }
                return PropertyListValue.dictionary(object.dictionaryValue!.merging(["salary": 1]) { $1 })
            }
            let graph: PropertyListValue = ["objects": .array(objects)]
            try document.transaction { try $0.replaceGraph(with: graph, unlessIdentical: true) }
            let crashed = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: crashed) }
            let model = fixture + "/model.json"
            let text = try String(contentsOfFile: model, encoding: .utf8)
            let tightened = text.replacingOccurrences(
                of: #""firstName": {"type": "string", "required": true}"#,
                with: #""firstName": {"type": "string", "required": true, "maxLength": 3}"#)
            #expect(tightened != text)
            try tightened.write(toFile: model, atomically: true, encoding: .utf8)
            let recovered = try Document(fixtureDirectory: fixture, dataDirectory: crashed)
            defer { recovered.close() }
            #expect(try recovered.value("salary", of: "Employee/3") == 99_000)
            #expect(try recovered.value("salary", of: "Employee/4") == 1)
            let refused = #expect(throws: ObjectGraphError.self) {
                try recovered.set("Stephen", "firstName", of: "Employee/3")
            }
            #expect(refused?.status == 422)
        }
    }

    @Test func seqOnlyCommitsAreJournaledButEditNothing() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            try document.set(5, "salary", of: "Employee/3")
            #expect(document.undoManager.undoSeq == 2)
            #expect(try document.store.advanceSeq() == 3)
            #expect(try document.store.advanceSeq() == 4)
            // Not an undo group, no version, no edit of the document.
            #expect(document.undoManager.undoSeq == 2)
            #expect(document.store.read { $0.contentSeq } == 2)
            #expect(try document.store.read { try $0.version(of: ObjectID(reference: "Employee/3")!) } == 2)
            try document.save()
            #expect(!document.hasChangesSinceSave)
            #expect(try document.store.advanceSeq() == 5)
            #expect(!document.hasChangesSinceSave)
            // After a crash the seq does not go back: the next change gets a new number.
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let reopened = try openDocument(copy)
            #expect(reopened.store.seq == 5 + Document.seqsSkippedAfterACrash)
            #expect(reopened.graphWithVersions == document.graphWithVersions.afterCrash)
        }
    }

    @Test func changesSinceTheSaveSurviveARestartAsAnEditedDocument() throws {
        try withTemporaryDirectory { path in
            do {
                let document = try openDocument(path)
                try document.save()
                try document.set(5, "salary", of: "Employee/3")
                #expect(document.hasChangesSinceSave)
                document.close()
            }
            do {
                let document = try openDocument(path)
                // Nothing to undo after a restart, and the change is still unsaved.
                #expect(document.hasChangesSinceSave)
                try document.save()
                #expect(!document.hasChangesSinceSave)
                document.close()
            }
            #expect(try !openDocument(path).hasChangesSinceSave)
        }
    }

    /// The store is the saved state after the save and after a `revertToSaved` alike: undoing the revert and then
    /// the change before it comes back to the save's state, unedited (it read edited: the revert had moved the saved
    /// mark to itself, and the count from there was -2), and a restart then opens unedited too.
    @Test func undoingARevertAndTheChangeBeforeItIsUnedited() throws {
        try withTemporaryDirectory { path in
            do {
                let document = try openDocument(path)
                try document.save()
                try document.set(5, "salary", of: "Employee/3")
                try document.revertToSaved()
                #expect(!document.hasChangesSinceSave)
                _ = try document.undo()
                #expect(document.hasChangesSinceSave)
                _ = try document.undo()
                #expect(!document.hasChangesSinceSave)
                _ = try document.redo()
                #expect(document.hasChangesSinceSave)
                _ = try document.redo()
                #expect(!document.hasChangesSinceSave)
                _ = try document.undo()
                _ = try document.undo()
                document.close()
            }
            #expect(try !openDocument(path).hasChangesSinceSave)
        }
    }

    /// Commits that only take a seq after a save (an observer's `initial`, an observed selection, the skip after a
    /// crash) leave the document unedited across restarts; a change to objects leaves it edited.
    @Test func onlySeqsTakenSinceTheSaveLeaveTheDocumentUneditedAfterARestart() throws {
        try withTemporaryDirectory { path in
            do {
                let document = try openDocument(path, fsync: .always)
                try document.set(5, "salary", of: "Employee/3")
                try document.save()
                try document.store.advanceSeq()
                _ = try document.store.advanceSeq { $0.seq }
                #expect(!document.hasChangesSinceSave)
                document.close()
            }
            do {
                let document = try openDocument(path, fsync: .always)
                #expect(!document.hasChangesSinceSave)
                try document.store.advanceSeq()
                let crashed = try crashCopy(of: path)
                defer { try? FileManager.default.removeItem(atPath: crashed) }
                do {
                    let recovered = try openDocument(crashed)
                    #expect(recovered.store.seq == 5 + Document.seqsSkippedAfterACrash)
                    #expect(!recovered.hasChangesSinceSave)
                    recovered.close()
                }
                #expect(try !openDocument(crashed).hasChangesSinceSave)
                try document.set(6, "salary", of: "Employee/3")
                #expect(document.hasChangesSinceSave)
                document.close()
            }
            #expect(try openDocument(path).hasChangesSinceSave)
        }
    }

    /// `revertToSaved` makes the document unedited, and a restart (clean or after a crash) keeps it so; so does
    /// undoing back to the saved state followed by a clean restart.
    @Test func aDocumentRevertedOrUndoneToTheSavedStateStaysUneditedAfterARestart() throws {
        try withTemporaryDirectory { path in
            do {
                let document = try openDocument(path, fsync: .always)
                try document.save()
                try document.set(5, "salary", of: "Employee/3")
                try document.revertToSaved()
                #expect(!document.hasChangesSinceSave)
                let crashed = try crashCopy(of: path)
                defer { try? FileManager.default.removeItem(atPath: crashed) }
                #expect(try !openDocument(crashed).hasChangesSinceSave)
                document.close()
            }
            do {
                let document = try openDocument(path)
                #expect(!document.hasChangesSinceSave)
                try document.set(6, "salary", of: "Employee/3")
                try document.undo()
                #expect(!document.hasChangesSinceSave)
                document.close()
            }
            do {
                let document = try openDocument(path)
                #expect(!document.hasChangesSinceSave)
                try document.set(7, "salary", of: "Employee/3")
                document.close()
            }
            #expect(try openDocument(path).hasChangesSinceSave)
        }
    }

    /// The first start after a crash moves the seq on by `seqsSkippedAfterACrash` (commits lost in the crash may have
    /// been seen with their seqs): the record that does so replays after a second crash, and a clean close skips
    /// nothing.
    @Test func aStartAfterACrashSkipsSeqsAndItsRecordReplays() throws {
        try withTemporaryDirectory { path in
            let skip = Document.seqsSkippedAfterACrash
            let crashed: String
            do {
                let document = try openDocument(path, fsync: .always)
                try document.set(1, "salary", of: "Employee/1")
                #expect(document.store.seq == 2)
                crashed = try crashCopy(of: path)
            }
            // The document above closed cleanly when it went: reopened, it skips nothing.
            #expect(try openDocument(path).store.seq == 2)
            defer { try? FileManager.default.removeItem(atPath: crashed) }
            let first = try openDocument(crashed)
            #expect(first.store.seq == 2 + skip)
            try first.set(2, "salary", of: "Employee/1")
            #expect(first.store.seq == 3 + skip)
            let crashedAgain = try crashCopy(of: crashed)
            defer { try? FileManager.default.removeItem(atPath: crashedAgain) }
            let second = try openDocument(crashedAgain)
            #expect(second.store.seq == 3 + 2 * skip)
            #expect(try second.value("salary", of: "Employee/1") == 2)
        }
    }

    /// A snapshot an earlier version wrote (`BNDSNAP2`: each object's own version; the versions of what its derived
    /// keys read were added at each read) with journal records after it (that version crashed): the first start
    /// answers the ETags that version did, though today's rule would move others.
    @Test func aSnapshotOfAnEarlierVersionWithJournalRecordsAfterItKeepsTheETagsItAnswered() throws {
        try withTemporaryDirectory { path in
            let crashed: String
            do {
                let document = try openDocument(path, fsync: .always)
                try Self.rewriteSnapshots(in: path, asFormat: "BNDSNAP2")
                // The earlier version moved every employee of Department/1 to seq 2 (departmentName reads it).
                try document.set(5, "budget", of: "Department/1")
                // It moved Employee/4 and, at each read, Department/1 (payroll reads salaries) to seq 3, but no other
                // employee: their departmentName read the department's own version, which a salary does not move.
                try document.set(77_777, "salary", of: "Employee/4")
                crashed = try crashCopy(of: path)
            }
            defer { try? FileManager.default.removeItem(atPath: crashed) }
            let document = try openDocument(crashed)
            let versions = try document.store.read { view throws(ObjectGraphError) in
                try view.objects(of: "Employee").map { employee throws(ObjectGraphError) in
                    (
                        employee.description, try view.value(forKeyPath: "department", of: employee).json,
                        try view.version(of: employee)
                    )
                }
            }
            #expect(versions.contains { $0.1 == ["$ref": "Department/1"] })
            for (id, department, version) in versions {
                let expected: Int64 = id == "Employee/4" ? 3 : department == ["$ref": "Department/1"] ? 2 : 1
                #expect(version == expected, "\(id)")
            }
            let department = try #require(ObjectID(reference: "Department/1"))
            #expect(try document.store.read { view throws(ObjectGraphError) in try view.version(of: department) } == 3)
            // Later changes follow today's rule: a budget is read by no derived key.
            try document.set(6, "budget", of: "Department/1")
            let employee = try #require(ObjectID(reference: "Employee/6"))
            #expect(try document.store.read { view throws(ObjectGraphError) in try view.version(of: employee) } == 2)
            // That first commit has the earlier snapshot replaced (in the background), so no start converts it again.
            var formats: [String] = []
            for _ in 0..<500 {
                formats = try FileManager.default.contentsOfDirectory(atPath: crashed).sorted()
                    .filter { $0.hasPrefix("snapshot-") }
                    .map {
                        String(
                            decoding: try Data(contentsOf: URL(fileURLWithPath: crashed + "/" + $0))[20..<28],
                            as: UTF8.self)
                    }
                if formats.last == "BNDSNAP3" { break }
                usleep(10_000)
            }
            #expect(formats.last == "BNDSNAP3", "\(formats)")
        }
    }

    /// A whole-graph change (`PUT /store`) after a snapshot of an earlier version (that version crashed): one that wrote
    /// `BNDSNAP1` moved every object's version to the change's seq, one that wrote `BNDSNAP2` only those of the objects
    /// it changed (by the time it was replaced; see the README); the first start answers the ETags that version did.
    @Test(arguments: ["BNDSNAP1", "BNDSNAP2"])
    func aWholeGraphChangeAfterASnapshotOfAnEarlierVersionKeepsTheETagsItAnswered(format: String) throws {
        try withTemporaryDirectory { path in
            let crashed: String
            do {
                let document = try openDocument(path, fsync: .always)
                try Self.rewriteSnapshots(in: path, asFormat: format)
                let objects = document.store.read { $0.exportGraph() }["objects"]!.arrayValue!.map { object in
                    guard object["$id"] == "Employee/4" else { return object }
                    return PropertyListValue.dictionary(object.dictionaryValue!.merging(["salary": 1]) { $1 })
                }
                try document.transaction { try $0.replaceGraph(with: ["objects": .array(objects)]) }
                crashed = try crashCopy(of: path)
            }
            defer { try? FileManager.default.removeItem(atPath: crashed) }
            let document = try openDocument(crashed)
            #expect(try document.value("salary", of: "Employee/4") == 1)
            var versions: [String: Int64] = [:]
            try document.store.read { view throws(ObjectGraphError) in
                for entity in ["Department", "Employee"] {
                    for object in try view.objects(of: entity) {
                        versions[object.description] = try view.version(of: object)
                    }
                }
            }
            #expect(versions.count > 10)
            for (id, version) in versions {
                // Department/1's payroll reads Employee/4's salary; the employees' departmentName reads the department's
                // name, which did not change.
                let changed = format == "BNDSNAP1" || id == "Employee/4" || id == "Department/1"
                #expect(version == (changed ? 2 : 1), "\(id)")
            }
        }
    }

    /// A save whose directory sync fails after `saved.bin` was renamed is all or nothing: the saved snapshot before is
    /// put back, so that `revertToSaved` (now, and after a restart) goes back to the last save that was answered.
    @Test func aSaveWhoseDirectorySyncFailsPutsTheSavedSnapshotBack() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            try document.set(111, "salary", of: "Employee/1")
            try document.save()
            let directory = DataDirectory(path: path)
            let saved = path + "/" + DataDirectory.savedName
            let (snapshots, _) = try directory.contents()
            let before = try #require(snapshots.last)
            let later = before + 5
            try Data("a later snapshot".utf8).write(
                to: URL(fileURLWithPath: directory.file(DataDirectory.snapshotName(later))))
            func inode(_ file: String) throws -> UInt64 {
                var status = stat()
                guard stat(file, &status) == 0 else { throw FileIO.error("stat", file) }
                return UInt64(status.st_ino)
            }
            let failing = { (_: String) throws(ObjectGraphError) in
                throw ObjectGraphError(status: 503, code: "storage-error", message: "fsync failed (injected).")
            }
            #expect(throws: ObjectGraphError.self) {
                try DocumentStorage.markSaved(later, in: directory, sync: failing)
            }
            #expect(try inode(saved) == inode(directory.file(DataDirectory.snapshotName(before))))
            #expect(try FileIO.list(path).filter { $0.hasSuffix(".tmp") } == [])
            // The same snapshot again (a save with no change since the last): nothing left behind either.
            #expect(throws: ObjectGraphError.self) {
                try DocumentStorage.markSaved(before, in: directory, sync: failing)
            }
            #expect(try FileIO.list(path).filter { $0.hasSuffix(".tmp") } == [])
            try DocumentStorage.markSaved(later, in: directory)
            #expect(try inode(saved) == inode(directory.file(DataDirectory.snapshotName(later))))
            // With no saved snapshot before, a failed one leaves none.
            unlink(saved)
            #expect(throws: ObjectGraphError.self) {
                try DocumentStorage.markSaved(before, in: directory, sync: failing)
            }
            #expect(access(saved, F_OK) != 0)
        }
    }

    /// Rewrites the snapshot files of a data directory as the payload of another format version (the same bytes after
    /// the payload's magic, without the contentSeq for `BNDSNAP1`), with their lengths and checksums.
    static func rewriteSnapshots(in path: String, asFormat magic: String) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: path) where name.hasPrefix("snapshot-") {
            let url = URL(fileURLWithPath: path + "/" + name)
            var bytes = [UInt8](try Data(contentsOf: url))
            bytes.replaceSubrange(20..<28, with: Array(magic.utf8))
            if magic == "BNDSNAP1" {
                bytes.removeSubrange(36..<44)
                withUnsafeBytes(of: UInt64(bytes.count - 20).littleEndian) { bytes.replaceSubrange(8..<16, with: $0) }
            }
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes[20...] {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            }
            withUnsafeBytes(of: (~crc).littleEndian) { bytes.replaceSubrange(16..<20, with: $0) }
            try Data(bytes).write(to: url)
        }
    }

    /// A `closed-cleanly` marker that cannot be removed refuses the start: a crash of that run would go unnoticed.
    @Test func aCleanCloseMarkerThatCannotGoRefusesTheStart() throws {
        try withTemporaryDirectory { path in
            do { _ = try openDocument(path) }
            let marker = path + "/closed-cleanly"
            #expect(FileManager.default.fileExists(atPath: marker))
            try FileManager.default.removeItem(atPath: marker)
            try FileManager.default.createDirectory(atPath: marker + "/inside", withIntermediateDirectories: true)
            let refused = #expect(throws: ObjectGraphError.self) { try openDocument(path) }
            #expect(refused?.code == "storage-error")
        }
    }

    /// A data directory that cannot be made says why, in the system's words (it said "NSCocoaErrorDomain error 512"),
    /// or names the file in the way (it said "mkdir FILE failed: Not a directory" for the file itself).
    @Test func aDataDirectoryThatCannotBeMadeSaysWhy() throws {
        try withTemporaryDirectory { path in
            let file = path + "/afile"
            #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
            try FileManager.default.createSymbolicLink(atPath: path + "/dangling", withDestinationPath: path + "/none")
            for (data, reason) in [
                (file, "afile is there but is not a directory"),
                (file + "/sub", "afile is there but is not a directory"),
                (path + "/dangling", "No such file or directory"),
            ] {
                let refused = #expect(throws: ObjectGraphError.self) { try openDocument(data) }
                #expect(refused?.code == "storage-error")
                #expect(refused?.message.contains(reason) == true, "\(refused?.message ?? "")")
            }
            _ = try openDocument(path + "/new/deeper")
            #expect(FileManager.default.fileExists(atPath: path + "/new/deeper/lock"))
        }
    }

    /// A journal segment, or the snapshot the segments follow, removed while the server runs (an operator's `rm`)
    /// is noticed at the next write: a snapshot of the store replaces it, so a crash after that keeps every
    /// acknowledged change. With `batch` the change that found it waits for the snapshot; with `always` and `never`
    /// it is refused (nothing applied) and later ones are taken once the snapshot is written.
    @Test(arguments: [FsyncPolicy.batch, .always, .never], ["journal-", "snapshot-"])
    func aRemovedJournalFileIsReplacedByASnapshot(_ policy: FsyncPolicy, removing prefix: String) throws {
        try withTemporaryDirectory { path in
            let reports = Reports()
            let document = try openDocument(path, fsync: policy, reports: reports)
            try document.set(1, "salary", of: "Employee/5")
            for file in try FileManager.default.contentsOfDirectory(atPath: path) where file.hasPrefix(prefix) {
                try FileManager.default.removeItem(atPath: path + "/" + file)
            }
            var refusals = 0
            let deadline = Date().addingTimeInterval(10)
            while true {
                do {
                    try document.set(2, "salary", of: "Employee/6")
                    break
                } catch let error as ObjectGraphError where error.code == "journal-segment-removed" {
                    #expect(error.status == 503)
                    #expect(try document.value("salary", of: "Employee/6") != 2)
                    refusals += 1
                    guard Date() < deadline else { throw error }
                    usleep(10_000)
                }
            }
            #expect(policy == .batch ? refusals == 0 : refusals >= 1)
            #expect(try segments(in: path).count == 1)
            try document.set(3, "salary", of: "Employee/7")
            #expect(document.journalFailure == nil)
            // Said by the recovery the write scheduled, or by the look every second when it found a removed snapshot
            // first (the recovery then has nothing left to do); said once the snapshot is written, which may be just
            // after the write it let through.
            let said = {
                reports.all.contains {
                    $0.contains("a snapshot now holds what it held")
                        || $0.contains("was removed while in use; snapshot-")
                }
            }
            for _ in 0..<500 where !said() { usleep(10_000) }
            #expect(said(), "\(reports.all)")
            let expected = document.graphWithVersions
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let recovered = try openDocument(copy)
            #expect(try recovered.value("salary", of: "Employee/5") == 1)
            #expect(try recovered.value("salary", of: "Employee/6") == 2)
            #expect(recovered.graphWithVersions == expected.afterCrash)
        }
    }

    /// The whole directory removed under a running server and made anew (another server's store, say): nothing of
    /// this run is written there by name, nothing there is removed, and nothing is read from it (no "rollback" to
    /// another store); the journal fails (503 until restart) rather than recover into the new directory.
    @Test(arguments: [FsyncPolicy.batch, .never])
    func aDirectoryReplacedWhileInUseReceivesNothing(_ policy: FsyncPolicy) throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: policy)
            let otherStore = try crashCopy(of: path)  // the seeded store, before this run's change
            try document.set(1, "salary", of: "Employee/5")
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.moveItem(atPath: otherStore, toPath: path)
            func contents() throws -> [String: Data] {
                var files: [String: Data] = [:]
                for name in try FileManager.default.contentsOfDirectory(atPath: path) {
                    files[name] = try Data(contentsOf: URL(fileURLWithPath: path + "/" + name))
                }
                return files
            }
            let before = try contents()
            let refused = #expect(throws: ObjectGraphError.self) { try document.save() }
            #expect(refused?.message.contains("removed or replaced") == true)
            let deadline = Date().addingTimeInterval(10)
            while document.journalFailure == nil, Date() < deadline {
                try? document.set(2, "salary", of: "Employee/6")
                usleep(20_000)
            }
            #expect(document.journalFailure?.status == 503)
            #expect(throws: ObjectGraphError.self) { try document.set(3, "salary", of: "Employee/7") }
            #expect(try document.value("salary", of: "Employee/5") == 1)
            document.close()
            #expect(try contents() == before)
        }
    }

    /// A data directory moved away while in use fails the journal within a second or two (the periodic look), even
    /// though its segment keeps its link: the run would otherwise go on journaling into the moved directory while
    /// every write by name fails. What was acknowledged is in the moved directory.
    @Test func aDirectoryMovedAwayFailsTheJournal() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            try document.set(1, "salary", of: "Employee/5")
            let moved = path + "-moved"
            try FileManager.default.moveItem(atPath: path, toPath: moved)
            defer { try? FileManager.default.removeItem(atPath: moved) }
            let deadline = Date().addingTimeInterval(10)
            while document.journalFailure == nil, Date() < deadline { usleep(50_000) }
            #expect(document.journalFailure?.message.contains("removed or replaced") == true)
            #expect(throws: ObjectGraphError.self) { try document.set(2, "salary", of: "Employee/6") }
            document.close()
            let copy = try crashCopy(of: moved)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            #expect(try openDocument(copy).value("salary", of: "Employee/5") == 1)
        }
    }

    /// A segment removed while no change comes is found within a second by the storage's periodic look and
    /// replaced by a snapshot: a crash after that keeps what it held.
    @Test func aRemovedSegmentIsRecoveredWithoutAWrite() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            try document.set(1, "salary", of: "Employee/5")
            for segment in try segments(in: path) { try FileManager.default.removeItem(atPath: path + "/" + segment) }
            let deadline = Date().addingTimeInterval(10)
            while try segments(in: path).isEmpty, Date() < deadline { usleep(50_000) }
            usleep(100_000)
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            #expect(try openDocument(copy).value("salary", of: "Employee/5") == 1)
        }
    }

    /// A segment removed just before an ordinary snapshot (a `save` before the look every second): the snapshot is
    /// the recovery's, written before a new segment starts (were it written after and then to fail, what the removed
    /// segment held would be nowhere, before a segment that no start can read past), and a crash after it keeps
    /// every change. When it cannot be written, changes are refused and the journal fails once the recovery cannot
    /// write one either: nothing more is acknowledged, and the directory still starts.
    @Test(arguments: [false, true])
    func aSegmentRemovedBeforeASaveIsRecoveredFirst(snapshotsFail: Bool) throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            defer { document.close() }
            for salary in 1...3 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/1") }
            let blocker = path + "/snapshot-" + String(repeating: "0", count: 19) + "\(document.store.seq).bin.tmp"
            #expect(blocker.count == path.count + "/snapshot-.bin.tmp".count + 20)
            if snapshotsFail {
                try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: false)
            }
            #expect(unlink(path + "/" + (try segments(in: path)).last!) == 0)
            if snapshotsFail {
                let refused = #expect(throws: ObjectGraphError.self) { try document.save() }
                #expect(refused?.code == "storage-error")
            } else {
                try document.save()
            }
            // Changes are refused until a snapshot replaces the segment, and for good when none can.
            let deadline = Date().addingTimeInterval(5)
            var accepted = false
            while !accepted, document.journalFailure == nil, Date() < deadline {
                accepted = (try? document.set(7, "salary", of: "Employee/2")) != nil
                if !accepted { usleep(20_000) }
            }
            #expect(accepted != snapshotsFail)
            #expect((document.journalFailure != nil) == snapshotsFail)
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let restarted = try openDocument(copy, fsync: .always)
            if !snapshotsFail {
                #expect(try restarted.value("salary", of: "Employee/1") == 3)
                #expect(try restarted.value("salary", of: "Employee/2") == 7)
            }
        }
    }

    /// A periodic snapshot that fails (a full disk, a write error) is due again once its wait is over, rather than
    /// after another whole interval of records: its rotation no longer counts as the snapshot.
    @Test func aFailedPeriodicSnapshotIsTriedAgain() throws {
        try withTemporaryDirectory { path in
            let reports = Reports()
            let document = try openDocument(path, fsync: .always, snapshotRecords: 5, reports: reports)
            defer { document.close() }
            let first = document.store.seq
            let due = String(first + 5)
            let blocker = path + "/snapshot-" + String(repeating: "0", count: 20 - due.count) + due + ".bin.tmp"
            try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: false)
            for salary in 1...5 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/1") }
            var deadline = Date().addingTimeInterval(5)
            while !reports.all.contains(where: { $0.contains("snapshot failed") }), Date() < deadline { usleep(20_000) }
            #expect(reports.all.contains { $0.contains("snapshot failed") }, "\(reports.all)")
            try FileManager.default.removeItem(atPath: blocker)
            Thread.sleep(forTimeInterval: 1.1)  // the wait after one failure
            try document.set(6, "salary", of: "Employee/1")
            func snapshots() throws -> [String] {
                try FileManager.default.contentsOfDirectory(atPath: path).filter {
                    $0.hasPrefix("snapshot-") && $0.hasSuffix(".bin")
                }
            }
            deadline = Date().addingTimeInterval(5)
            func taken() throws -> Bool { try snapshots().contains { !$0.hasSuffix(String(first) + ".bin") } }
            while try !taken(), Date() < deadline { usleep(20_000) }
            let names = try snapshots()
            #expect(try taken(), "\(names)")
        }
    }

    /// A start refused (a damaged snapshot) leaves the `closed-cleanly` marker: once the directory is mended, the
    /// next start still knows the last run closed cleanly, and does not skip seqs and ids as after a crash.
    @Test func aRefusedStartLeavesTheCleanCloseMarker() throws {
        try withTemporaryDirectory { path in
            var seq: Int64 = 0
            do {
                let document = try openDocument(path)
                try document.set(1, "salary", of: "Employee/1")
                seq = document.store.seq
                document.close()
            }
            let snapshot =
                path + "/" + (try FileManager.default.contentsOfDirectory(atPath: path))
                .filter { $0.hasPrefix("snapshot-") }.sorted().last!
            let intact = try Data(contentsOf: URL(fileURLWithPath: snapshot))
            var damaged = intact
            damaged[damaged.count - 1] ^= 0xFF
            try damaged.write(to: URL(fileURLWithPath: snapshot))
            #expect(throws: ObjectGraphError.self) { try openDocument(path) }
            #expect(FileManager.default.fileExists(atPath: path + "/closed-cleanly"))
            try intact.write(to: URL(fileURLWithPath: snapshot))
            #expect(try openDocument(path).store.seq == seq)
        }
    }

    /// A save with nothing changed since the last one (its snapshot is already `saved.bin`) leaves no temporary file.
    @Test func aSaveWithNoChangeLeavesNoTemporaryFile() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            try document.save()
            try document.save()
            #expect(try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".tmp") }.isEmpty)
            // Nor does one whose snapshot was just removed by hand fail: the snapshot is written again.
            for file in try FileManager.default.contentsOfDirectory(atPath: path) where file.hasPrefix("snapshot-") {
                try FileManager.default.removeItem(atPath: path + "/" + file)
            }
            try document.save()
            #expect(try FileManager.default.contentsOfDirectory(atPath: path).contains { $0.hasPrefix("snapshot-") })
        }
    }

    /// The newest snapshot removed while the server runs (the journal after it needs it) is written again within a
    /// second: a crash after that keeps every change, where it left a journal no start could read.
    @Test func aRemovedSnapshotIsWrittenAgain() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            try document.set(1, "salary", of: "Employee/5")
            func snapshots() throws -> [String] {
                try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasPrefix("snapshot-") }
            }
            for snapshot in try snapshots() { try FileManager.default.removeItem(atPath: path + "/" + snapshot) }
            let deadline = Date().addingTimeInterval(10)
            while try snapshots().isEmpty, Date() < deadline { usleep(50_000) }
            usleep(100_000)
            try document.set(2, "salary", of: "Employee/6")
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let recovered = try openDocument(copy)
            #expect(try recovered.value("salary", of: "Employee/5") == 1)
            #expect(try recovered.value("salary", of: "Employee/6") == 2)
        }
    }

    /// After a crash, a data directory without a journal segment after its newest snapshot lost it (a run always
    /// has one): the start says so rather than start silently at the snapshot, also when an older segment is left.
    @Test(arguments: [false, true])
    func aCrashWithoutAnyJournalSegmentIsReported(olderSegmentLeft: Bool) throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            try document.set(1, "salary", of: "Employee/5")
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let removed = try segments(in: copy)
            for segment in removed { try FileManager.default.removeItem(atPath: copy + "/" + segment) }
            if olderSegmentLeft {
                // One that starts at the snapshot's seq (1, the seed's) or before: what the snapshot holds already.
                let older = removed[0].replacingOccurrences(of: "00002.log", with: "00001.log")
                #expect(older != removed[0])
                try Data(segmentHeader).write(to: URL(fileURLWithPath: copy + "/" + older))
            }
            let reports = Reports()
            let recovered = try openDocument(copy, reports: reports)
            #expect(try recovered.value("salary", of: "Employee/5") != 1)
            #expect(reports.all.contains { $0.contains("no journal segment") })
            // A crash copy with its segment says nothing of the kind.
            let intact = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: intact) }
            let quiet = Reports()
            _ = try openDocument(intact, reports: quiet)
            #expect(!quiet.all.contains { $0.contains("no journal segment") })
        }
    }

    @Test func crashWithoutCloseReplaysTheJournal() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            for salary in 1...20 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/5") }
            try document.transaction {
                try $0.insert(
                    "Employee", values: ["firstName": "A", "lastName": "B", "department": ["$ref": "Department/2"]])
            }
            let expected = document.graphWithVersions
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let recovered = try openDocument(copy)
            #expect(recovered.store.seq == 22 + Document.seqsSkippedAfterACrash)
            #expect(recovered.graphWithVersions == expected.afterCrash)
            try recovered.transaction {
                try $0.insert(
                    "Employee", values: ["firstName": "C", "lastName": "D", "department": ["$ref": "Department/2"]])
            }
            // The id counter skipped as far as the seq: no id of an object the crash may have lost comes back.
            #expect(
                try recovered.store.read { try $0.objects(of: "Employee") }.suffix(2).map(\.id)
                    == ["33", String(34 + Document.seqsSkippedAfterACrash)])
        }
    }

    @Test(arguments: ["half a record", "garbage", "bad checksum"])
    func tornOrCorruptTailIsReportedAndCutOff(damage: String) throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            try document.set(1, "salary", of: "Employee/1")
            let kept = document.graphWithVersions
            try document.set(2, "salary", of: "Employee/1")
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            var (segment, bytes) = try newestSegment(of: copy)
            let whole = bytes.count
            let lastStart = lastFrameStart(bytes)
            switch damage {
            case "half a record":
                bytes.removeLast((whole - lastStart) / 2)
            case "garbage":
                bytes += [0x17, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7]
            default:
                bytes[bytes.count - 3] ^= 0xFF
            }
            try Data(bytes).write(to: URL(fileURLWithPath: segment))
            let reports = Reports()
            do {
                let recovered = try openDocument(copy, reports: reports)
                let expectedSeq: Int64 = damage == "garbage" ? 3 : 2
                #expect(recovered.store.seq == expectedSeq + Document.seqsSkippedAfterACrash)
                if damage != "garbage" { #expect(recovered.graphWithVersions == kept.afterCrash) }
                #expect(reports.problems.count == 1)
                // And one line saying that the last run was not closed cleanly, what was replayed and where seqs go on.
                #expect(reports.all.count == 2)
                #expect(
                    reports.all.contains {
                        $0.contains("was not closed cleanly") && $0.contains("up to seq \(expectedSeq);")
                            && $0.contains("seqs go on from \(expectedSeq + Document.seqsSkippedAfterACrash + 1)")
                    }, "\(reports.all)")
                #expect(recovered.problemsRecoveredAtOpen == 1)
                #expect(reports.problems.first?.contains("cut off") == true)
                // Cut where the damage began; the record that skips seqs after the crash follows.
                let after = [UInt8](try Data(contentsOf: URL(fileURLWithPath: segment)))
                #expect(lastFrameStart(after) == (damage == "garbage" ? whole : lastStart))
                try recovered.set(7, "salary", of: "Employee/1")
            }
            let again = try openDocument(copy, reports: reports)
            #expect(try again.value("salary", of: "Employee/1") == 7)
            #expect(reports.problems.count == 1)
            #expect(again.problemsRecoveredAtOpen == 0)
        }
    }

    /// What another version may have written whole refuses the start and stays, instead of being cut off as a torn
    /// tail: a last frame whose checksum matches but that is not a change record, and a segment header this version
    /// does not read (`BNDJRNL2`, or a damaged one) before intact records.
    @Test(arguments: ["a frame of another kind", "another segment header"])
    func whatAnotherVersionWroteRefusesToStartAndStays(written: String) throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            try document.set(1, "salary", of: "Employee/1")
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            var (segment, bytes) = try newestSegment(of: copy)
            if written == "a frame of another kind" {
                bytes += journalFrame(Array(#"{"foo":1}"#.utf8))
            } else {
                bytes[segmentHeader.count - 1] = UInt8(ascii: "2")
            }
            try Data(bytes).write(to: URL(fileURLWithPath: segment))
            let reports = Reports()
            let refused = #expect(throws: ObjectGraphError.self) { try openDocument(copy, reports: reports) }
            #expect(refused?.code == "journal-corrupt")
            let named = written == "a frame of another kind" ? "not a change record" : "BNDJRNL2"
            #expect(refused?.message.contains(named) == true, "\(refused?.message ?? "")")
            #expect(reports.all.isEmpty)
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: segment))) == bytes)
        }
    }

    /// "cut off" is reported only once the file was cut: a segment that cannot be opened for writing (read-only; for
    /// root, append-only with `chattr +a`) refuses the start with the error alone and keeps its bytes.
    @Test func aTornTailThatCannotBeCutIsNotReportedAsCut() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            try document.set(1, "salary", of: "Employee/1")
            let copy = try crashCopy(of: path)
            defer {
                _ = try? runChattr("-a", copy)
                try? FileManager.default.removeItem(atPath: copy)
            }
            let segment = copy + "/" + (try segments(in: copy)).last!
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: segment))) + [0x17, 0, 0, 0, 1, 2, 3]
            try Data(bytes).write(to: URL(fileURLWithPath: segment))
            chmod(segment, 0o444)
            if geteuid() == 0 { _ = try? runChattr("+a", segment) }
            let writable = open(segment, O_WRONLY)
            guard writable < 0 else {
                close(writable)
                return  // neither protection holds here (root without chattr): nothing to check
            }
            let reports = Reports()
            #expect(throws: ObjectGraphError.self) { try openDocument(copy, reports: reports) }
            #expect(reports.all.isEmpty, "\(reports.all)")
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: segment))) == bytes)
        }
    }

    @Test func damageWithIntactRecordsAfterItRefusesToStartAndKeepsTheFile() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            for salary in 1...10 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/4") }
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            var (segment, bytes) = try newestSegment(of: copy)
            bytes[28] ^= 0x01  // inside the first record's payload; nine intact records follow
            try Data(bytes).write(to: URL(fileURLWithPath: segment))
            #expect {
                try openDocument(copy)
            } throws: { error in
                (error as? ObjectGraphError)?.code == "journal-corrupt"
            }
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: segment))) == bytes)
        }
    }

    /// Every segment begins with a header written before any record: a newest segment found empty (emptied by
    /// something else, after acknowledged changes) is reported, as a torn tail is, and a header cut short is cut
    /// off; an empty segment of an earlier version (no header: nothing was written to it) is no problem, and gets
    /// its header.
    @Test(arguments: ["emptied", "torn header", "earlier version"])
    func anEmptiedSegmentIsReported(damage: String) throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            if damage == "earlier version" {
                // An earlier version's snapshot file (`BNDSNAPF`): the segments after it may have no header.
                for name in try FileManager.default.contentsOfDirectory(atPath: path) where name.hasPrefix("snapshot-")
                {
                    let url = URL(fileURLWithPath: path + "/" + name)
                    var bytes = [UInt8](try Data(contentsOf: url))
                    #expect(bytes.starts(with: Array("BNDSNAPH".utf8)))
                    bytes.replaceSubrange(0..<8, with: Array("BNDSNAPF".utf8))
                    try Data(bytes).write(to: url)
                }
            }
            try document.set(1, "salary", of: "Employee/1")
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let (segment, before) = try newestSegment(of: copy)
            #expect(before.starts(with: segmentHeader))
            try Data(damage == "torn header" ? Array(segmentHeader.prefix(3)) : []).write(
                to: URL(fileURLWithPath: segment))
            let reports = Reports()
            do {
                let recovered = try openDocument(copy, reports: reports)
                #expect(try recovered.value("salary", of: "Employee/1") != 1)
                switch damage {
                case "emptied":
                    #expect(reports.problems.count == 1, "\(reports.problems)")
                    #expect(reports.problems.first?.contains("is empty") == true)
                    #expect(reports.problems.first?.contains("are lost") == true)
                case "torn header":
                    #expect(reports.problems.count == 1, "\(reports.problems)")
                    #expect(reports.problems.first?.contains("a torn segment header") == true)
                default:
                    #expect(reports.problems.isEmpty, "\(reports.problems)")
                }
                #expect(recovered.problemsRecoveredAtOpen == reports.problems.count)
                // The segment goes on, header first: a change after it is there at the next start.
                try recovered.set(7, "salary", of: "Employee/1")
                if damage == "earlier version" {
                    // That first commit has the earlier snapshot replaced (in the background) by one that says the
                    // segments have headers, so an emptied one is noticed from then on.
                    var newest = ""
                    for _ in 0..<500 {
                        let name = try FileManager.default.contentsOfDirectory(atPath: copy).sorted()
                            .last { $0.hasPrefix("snapshot-") }
                        newest =
                            name.map {
                                String(
                                    decoding: (try? Data(contentsOf: URL(fileURLWithPath: copy + "/" + $0)))?.prefix(8)
                                        ?? Data(), as: UTF8.self)
                            } ?? ""
                        if newest == "BNDSNAPH" { break }
                        usleep(10_000)
                    }
                    #expect(newest == "BNDSNAPH")
                } else {
                    let after = [UInt8](try Data(contentsOf: URL(fileURLWithPath: segment)))
                    #expect(after.starts(with: segmentHeader))
                }
            }
            let again = try openDocument(copy, reports: reports)
            #expect(try again.value("salary", of: "Employee/1") == 7)
        }
    }

    /// Two servers appending to one segment (its `lock` deleted under a running one) leave seqs that go back: the
    /// records after the turn are refused as damage, not skipped as already replayed.
    @Test func seqsThatDoNotIncreaseWithinASegmentRefuseToStart() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            try document.set(1, "salary", of: "Employee/4")
            try document.set(2, "salary", of: "Employee/4")
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let (segment, frames) = try newestSegment(of: copy)
            #expect(frames.starts(with: segmentHeader))
            let records = frames.dropFirst(segmentHeader.count)
            try Data(frames + records).write(to: URL(fileURLWithPath: segment))
            let refused = #expect(throws: ObjectGraphError.self) { try openDocument(copy) }
            #expect(refused?.code == "journal-corrupt")
            #expect(refused?.message.contains("record 2 follows record 3") == true, "\(refused?.message ?? "")")
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: segment))) == frames + records)
        }
    }

    /// Damage at the end of a segment that later segments follow is not a torn tail (a crash tears only the newest
    /// one): the start is refused and the segment kept as it is, not cut (its last record was acknowledged).
    @Test func damageAtTheEndOfASegmentOthersFollowRefusesToStartAndKeepsTheFile() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            for salary in 1...3 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/4") }
            let last = document.store.seq
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            var (segment, bytes) = try newestSegment(of: copy)
            bytes[bytes.count - 2] ^= 0x01  // inside the last record's payload
            try Data(bytes).write(to: URL(fileURLWithPath: segment))
            // A later segment, as a rotation begins one after it.
            try Data(segmentHeader).write(to: URL(fileURLWithPath: copy + "/" + DataDirectory.segmentName(last + 1)))
            let refused = #expect(throws: ObjectGraphError.self) { try openDocument(copy) }
            #expect(refused?.code == "journal-corrupt", "\(refused?.message ?? "")")
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: segment))) == bytes)
        }
    }

    @Test func aMissingSnapshotIsRefusedNotStartedOverEmpty() throws {
        try withTemporaryDirectory { path in
            do {
                let document = try openDocument(path)
                try document.set(101, "salary", of: "Employee/4")
                document.close()
            }
            // A clean stop leaves the whole store in the snapshot and an empty journal that starts after it.
            for name in try FileManager.default.contentsOfDirectory(atPath: path) where name.hasPrefix("snapshot-") {
                try FileManager.default.removeItem(atPath: path + "/" + name)
            }
            #expect {
                try openDocument(path)
            } throws: { error in
                (error as? ObjectGraphError)?.code == "journal-gap"
            }
            // Without any journal either, the saved state still shows the directory was in use.
            for name in try segments(in: path) { try FileManager.default.removeItem(atPath: path + "/" + name) }
            #expect {
                try openDocument(path)
            } throws: { error in
                (error as? ObjectGraphError)?.code == "bad-snapshot"
            }
        }
    }

    /// Only a missing `data.json` means "no seed": one that cannot be read refuses the start, naming it, and seeds
    /// nothing that a later start would keep.
    @Test(arguments: ["directory", "dangling link"])
    func anUnreadableDataFileRefusesTheStartInsteadOfSeedingNothing(kind: String) throws {
        try withTemporaryDirectory { fixture in
            try FileManager.default.copyItem(atPath: employeesFixture + "/model.json", toPath: fixture + "/model.json")
            let dataFile = fixture + "/data.json"
            if kind == "directory" {
                try FileManager.default.createDirectory(atPath: dataFile, withIntermediateDirectories: false)
            } else {
                try FileManager.default.createSymbolicLink(atPath: dataFile, withDestinationPath: fixture + "/nowhere")
            }
            let data = fixture + "/data"
            let refused = #expect(throws: ObjectGraphError.self) {
                try Document(fixtureDirectory: fixture, dataDirectory: data, options: .init(fsync: .never))
            }
            #expect(refused?.code == "storage-error")
            #expect(refused?.message.contains(dataFile) == true, "\(refused?.message ?? "")")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: data).filter { $0.hasPrefix("snapshot-") } == [])
            // Without the file at all, the store starts empty.
            try FileManager.default.removeItem(atPath: dataFile)
            let empty = try Document(fixtureDirectory: fixture, dataDirectory: data, options: .init(fsync: .never))
            #expect(empty.store.read { $0.exportGraph() }["objects"] == [])
        }
    }

    /// A start refused after the document opened (a controllers file the service cannot use, a port in use) leaves
    /// a directory it seeded as it found it, so the next start seeds it again from the fixture as it is then (fixed
    /// meanwhile); once a change was committed, the document closes as usual and keeps it.
    @Test func aStartRefusedAfterSeedingLeavesTheDirectoryAsItWas() throws {
        try withTemporaryDirectory { root in
            let fixture = root + "/fixture"
            let data = root + "/data"
            try FileManager.default.copyItem(atPath: employeesFixture, toPath: fixture)
            func open() throws -> Document {
                try Document(fixtureDirectory: fixture, dataDirectory: data, options: .init(fsync: .never))
            }
            // Files of the user's whose names look like the store's stay.
            let own = ["journal-notes.txt", "snapshot-00000000000000000001.bin.bak"]
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            for name in own { try Data("mine".utf8).write(to: URL(fileURLWithPath: data + "/" + name)) }
            do {
                let refused = try open()
                #expect(try refused.value("name", of: "Department/1") == "Engineering")
                #expect(refused.closeUnserved())
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: data).sorted() == (own + ["lock"]).sorted())
            let seed = try String(contentsOfFile: fixture + "/data.json", encoding: .utf8)
            try seed.replacingOccurrences(of: "\"Engineering\"", with: "\"Edited\"")
                .write(toFile: fixture + "/data.json", atomically: true, encoding: .utf8)
            do {
                let served = try open()
                #expect(try served.value("name", of: "Department/1") == "Edited")
                try served.set(7, "salary", of: "Employee/4")
                #expect(served.closeUnserved())
            }
            let reopened = try open()
            #expect(try reopened.value("salary", of: "Employee/4") == 7)
            #expect(try reopened.value("name", of: "Department/1") == "Edited")
        }
    }

    /// Any file a run leaves (a clean close's marker, the saved defaults, the notification seqs) shows the directory
    /// was used: without its snapshot and journal it is refused, not seeded again with seqs starting over.
    @Test(arguments: ["closed-cleanly", "defaults.json", "notification-seqs", "saved-state"])
    func aUsedDirectoryWithoutItsStoreFilesIsNotSeededAgain(left: String) throws {
        try withTemporaryDirectory { path in
            do {
                let document = try openDocument(path)
                try document.set(101, "salary", of: "Employee/4")
            }
            for name in try FileManager.default.contentsOfDirectory(atPath: path) where name != "lock" {
                try FileManager.default.removeItem(atPath: path + "/" + name)
            }
            try Data("1\n".utf8).write(to: URL(fileURLWithPath: path + "/" + left))
            for _ in 1...2 {
                let refused = #expect(throws: ObjectGraphError.self) { try openDocument(path) }
                #expect(refused?.code == "bad-snapshot")
                #expect(refused?.message.contains(left) == true, "\(refused?.message ?? "")")
            }
            try FileManager.default.removeItem(atPath: path + "/" + left)
            #expect(try openDocument(path).store.seq == 1)
        }
    }

    @Test func secondDocumentOnTheSameDirectoryIsRefused() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            #expect {
                _ = try openDocument(path)
            } throws: { error in
                (error as? ObjectGraphError)?.code == "data-directory-locked"
            }
            _ = document
        }
    }

    /// The directory itself is locked too: deleting its `lock` file does not let a second document in.
    @Test func secondDocumentIsRefusedEvenWhenTheLockFileWasDeleted() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            try FileManager.default.removeItem(atPath: path + "/lock")
            let refused = #expect(throws: ObjectGraphError.self) { try openDocument(path) }
            #expect(refused?.code == "data-directory-locked")
            document.close()
        }
    }

    @Test func snapshotsCompactTheJournal() throws {
        try withTemporaryDirectory { path in
            let expected: PropertyListValue
            do {
                let document = try openDocument(path, snapshotRecords: 10)
                for salary in 1...35 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/6") }
                try document.save()
                let names = try FileManager.default.contentsOfDirectory(atPath: path)
                #expect(names.filter { $0.hasPrefix("snapshot-") } == ["snapshot-00000000000000000036.bin"])
                #expect(try segments(in: path) == ["journal-00000000000000000037.log"])
                expected = document.graphWithVersions
                let copy = try crashCopy(of: path)
                defer { try? FileManager.default.removeItem(atPath: copy) }
                #expect(try openDocument(copy).graphWithVersions == expected.afterCrash)
            }
            #expect(try openDocument(path).graphWithVersions == expected)
        }
    }

    @Test func revertToSavedReturnsToTheLastSaveAsOneUndoableChange() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            #expect(document.hasChangesSinceSave == false)
            try document.set(1, "salary", of: "Employee/1")
            let saved = document.graph
            try document.save()
            #expect(document.hasChangesSinceSave == false)
            try document.set(2, "salary", of: "Employee/1")
            try document.transaction { try $0.delete(ObjectID(reference: "Employee/9")!) }
            #expect(document.hasChangesSinceSave)
            let changed = document.graph["objects"]
            try document.revertToSaved()
            #expect(document.graph["objects"] == saved["objects"])
            #expect(document.hasChangesSinceSave == false)
            try document.undo()
            #expect(document.graph["objects"] == changed)
        }
    }

    /// A revert with the graph already as saved (a change and its opposite) commits nothing: no seq, no undo group,
    /// and the redo stack is kept.
    @Test func revertToSavedOfTheSavedGraphCommitsNothingAndKeepsRedo() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            let salary = document.graph["objects"]
            try document.set(1, "salary", of: "Employee/1")
            try document.undo()
            #expect(document.undoManager.canRedo)
            try document.set(7, "salary", of: "Employee/2")
            let changedSeq = document.store.seq
            try document.undo()
            #expect(document.graph["objects"] == salary)
            let seq = document.store.seq
            #expect(try document.revertToSaved() == seq)
            #expect(document.store.seq == seq)
            #expect(document.undoManager.canRedo)
            #expect(document.hasChangesSinceSave == false)
            try document.redo()
            #expect(document.store.seq > changedSeq)
            #expect(document.hasChangesSinceSave)
        }
    }

    @Test func saveTellsTheNotificationHandler() throws {
        let document = try Document(fixtureDirectory: employeesFixture)
        let names = Reports()
        document.setNotificationHandler { names.report("\($0.name) \($0.userInfo["seq"]?.integerValue ?? -1)") }
        try document.set(5, "salary", of: "Employee/2")
        try document.save()
        #expect(names.all == ["StoreDidSave 2"])
    }

    @Test func closedDocumentRefusesChanges() throws {
        let document = try Document(fixtureDirectory: employeesFixture)
        document.close()
        #expect {
            try document.set(5, "salary", of: "Employee/2")
        } throws: { error in
            (error as? ObjectGraphError)?.code == "document-closed"
        }
        #expect(try document.value("salary", of: "Employee/2") != 5)
    }

    @Test(arguments: [FsyncPolicy.batch, .always])
    func concurrentCommitsAreAllDurable(policy: FsyncPolicy) throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: policy)
            DispatchQueue.concurrentPerform(iterations: 8) { worker in
                for n in 0..<25 {
                    try? document.set(.integer(Int64(worker * 1000 + n)), "salary", of: "Employee/\(worker + 1)")
                }
            }
            #expect(document.store.seq == 201)
            let expected = document.graphWithVersions
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            #expect(try openDocument(copy).graphWithVersions == expected.afterCrash)
        }
    }

    /// With group commit the flusher delivers each group to the commit observers, before its requests are answered;
    /// snapshots (which rotate the journal and flush under the store's lock) answer nobody early.
    @Test func batchDeliversOnlyWhatIsDurableAndAnswersEachCommitAfterItsObserversSawIt() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .batch, snapshotRecords: 7)
            let delivered = Mutex<[Int64]>([])
            // Observers hear of a change only once it is durable: a crash can no longer take it back.
            let notDurable = Mutex(0)
            document.addCommitObserver { record in
                delivered.withLock { $0.append(record.seq) }
                if document.acknowledgedSeq(.max) < record.seq { notDurable.withLock { $0 += 1 } }
            }
            let early = Mutex(0)
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                for n in 0..<25 {
                    guard
                        let result = try? document.transactionBeforeDurable({ transaction in
                            try transaction.setValue(
                                .integer(Int64(worker * 1000 + n)), forKeyPath: "salary",
                                of: ObjectID(entity: "Employee", id: "\(worker + 1)"))
                        })
                    else { continue }
                    let answered = DispatchSemaphore(value: 0)
                    document.whenDurable(result.seq) { _ in
                        if !delivered.withLock({ $0.contains(result.seq) }) { early.withLock { $0 += 1 } }
                        answered.signal()
                    }
                    answered.wait()
                }
            }
            #expect(early.withLock { $0 } == 0)
            #expect(notDurable.withLock { $0 } == 0)
            // The fixture's seed (seq 1) was delivered to nobody; every change after it, once and in order.
            #expect(delivered.withLock { $0 } == Array(2...101))
        }
    }
}

/// The offset of the last frame of a journal segment.
/// The newest journal segment of the data directory at `path`, and its bytes.
func newestSegment(of path: String) throws -> (path: String, bytes: [UInt8]) {
    let segment = path + "/" + (try segments(in: path)).last!
    return (segment, [UInt8](try Data(contentsOf: URL(fileURLWithPath: segment))))
}

/// What a journal segment begins with (on disk: the format's, written here as a reader would).
let segmentHeader = Array("BNDJRNL1".utf8)

/// Where the last frame of a segment's bytes starts (after the segment header, when it has one).
func lastFrameStart(_ bytes: [UInt8]) -> Int {
    var offset = bytes.starts(with: segmentHeader) ? segmentHeader.count : 0
    var last = offset
    while offset + 8 <= bytes.count {
        last = offset
        offset += 8 + frameLength(bytes, at: offset)
    }
    return last
}

func frameLength(_ bytes: [UInt8], at offset: Int) -> Int {
    Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
}

/// Runs `chattr FLAG` on `path` (or on every file in it, for a directory); throws when it fails.
func runChattr(_ flag: String, _ path: String) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
    process.arguments = ["-R", flag, path]
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteNoPermission) }
}
