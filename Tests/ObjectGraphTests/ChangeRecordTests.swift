import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

struct ChangeRecordTests {
    @Test func movingAnEmployeeRecordsBothSides() throws {
        let store = try employeesStore()
        let record = try #require(
            try store.transaction { tx in
                try tx.setValue(ref("Department/2"), forKeyPath: "department", of: id("Employee/bob"))
            }.record)
        #expect(record.seq == 2)
        #expect(
            record.changes == [
                Change(
                    kind: .removal, target: id("Department/1"), key: "employees", old: [ref("Employee/bob")],
                    indexes: [1]),
                Change(
                    kind: .insertion, target: id("Department/2"), key: "employees", new: [ref("Employee/bob")],
                    indexes: [1]),
                Change(
                    kind: .setting, target: id("Employee/bob"), key: "department", old: ref("Department/1"),
                    new: ref("Department/2")),
            ])
        #expect(Set(record.updated) == [id("Department/1"), id("Department/2"), id("Employee/bob")])
        #expect(record.inserted.isEmpty && record.deleted.isEmpty)
    }

    @Test func insertAndDeleteRecords() throws {
        let store = try employeesStore()
        let inserted = try #require(
            try store.transaction { tx in
                try tx.insert(
                    "Employee", id: "eve",
                    values: ["firstName": "Eve", "lastName": "Ems", "department": ref("Department/3")])
            }.record)
        #expect(inserted.inserted == [id("Employee/eve")])
        #expect(inserted.updated == [id("Department/3")])
        #expect(
            inserted.changes.first
                == Change(
                    kind: .creation, target: id("Employee/eve"),
                    new: ["active": true, "firstName": "Eve", "lastName": "Ems"]))
        let deleted = try #require(try store.transaction { tx in try tx.delete(id("Employee/ann")) }.record)
        #expect(deleted.deleted == [id("Employee/ann")])
        let deletion = try #require(deleted.changes.last)
        #expect(deletion.kind == .deletion)
        #expect(deletion.old?["directReports"] == [ref("Employee/bob"), ref("Employee/cy")])
        #expect(deletion.old?["salary"] == 300)
        #expect(
            deleted.changes.contains(
                Change(kind: .setting, target: id("Employee/bob"), key: "manager", old: ref("Employee/ann"), new: .null)
            ))
    }

    @Test func jsonRoundTrip() throws {
        let store = try employeesStore()
        let record = try #require(
            try store.transaction { tx in
                try tx.setValue("2021-01-01", forKeyPath: "hireDate", of: id("Employee/dee"))
                try tx.insert(id("Employee/dee"), at: 0, intoKeyPath: "employees", of: id("Department/1"))
                try tx.delete(id("Employee/cy"))
            }.record)
        let text = record.json.jsonString()
        let decoded = try ChangeRecord(json: try PropertyListValue(jsonString: text))
        #expect(decoded == record)
        // The journal's direct encoder writes exactly the property list's JSON.
        #expect(record.jsonBytes() == record.json.jsonBytes())
        let odd = ChangeRecord(
            seq: 9,
            changes: [
                Change(kind: .reset, target: nil),
                Change(
                    kind: .setting, target: id("Employee/dee"), key: "note",
                    old: .null, new: "tab\t \"quoted\" \\ \u{1} é"),
            ],
            lastAssignedID: 4)
        #expect(odd.jsonBytes() == odd.json.jsonBytes())
        expectError("bad-change-record", status: 400) { _ = try ChangeRecord(json: ["seq": 1]) }
    }

    @Test func replayRecreatesTheExactState() throws {
        let original = try employeesStore()
        var records: [ChangeRecord] = []
        func run(_ body: (Transaction) throws -> Void) throws {
            if let record = try original.transaction(body).record {
                // Through JSON, as the journal will store them.
                records.append(try ChangeRecord(json: try PropertyListValue(jsonString: record.json.jsonString())))
            }
        }
        try run { tx in try tx.insert("Department", values: ["name": "Ops"]) }
        try run { tx in try tx.setValue(ref("Department/1"), forKeyPath: "department", of: id("Employee/dee")) }
        try run { tx in
            try tx.replace(at: 0, with: id("Employee/dee"), inKeyPath: "directReports", of: id("Employee/ann"))
        }
        try run { tx in try tx.remove(at: 1, fromKeyPath: "directReports", of: id("Employee/ann")) }
        try run { tx in try tx.delete(id("Employee/cy")) }
        try run { tx in
            try tx.insert("Employee", values: ["firstName": "F", "lastName": "G", "department": ref("Department/3")])
        }

        let replica = try employeesStore()
        for record in records { try replica.apply(record) }
        #expect(replica.export() == original.export())
        #expect(replica.seq == original.seq)
        let versions = { (store: ObjectStore) in
            try store.read { view throws(ObjectGraphError) in
                try view.objects(of: "Employee").map { object throws(ObjectGraphError) in try view.version(of: object) }
            }
        }
        #expect(try versions(replica) == versions(original))
        // The id counter came along: the next server id is the same on both.
        let a = try original.transaction { tx in try tx.insert("Department", values: ["name": "N"]) }.value
        let b = try replica.transaction { tx in try tx.insert("Department", values: ["name": "N"]) }.value
        #expect(a == b)
        expectError("conflict", status: 409) { try replica.apply(records[0]) }
    }

    @Test func aBadRecordChangesNothing() throws {
        let store = try employeesStore()
        let before = store.export()
        let record = ChangeRecord(
            seq: 2,
            changes: [
                Change(kind: .setting, target: id("Employee/ann"), key: "salary", old: 300, new: 1),
                Change(kind: .setting, target: id("Employee/zed"), key: "salary", old: 300, new: 1),
            ])
        expectError("no-such-object") { try store.apply(record) }
        #expect(store.export() == before)
        #expect(store.seq == 1)
    }
}

struct SnapshotTests {
    @Test func snapshotAndRestoreKeepVersionsSeqAndIDCounter() throws {
        let store = try employeesStore()
        try store.transaction { tx in try tx.insert("Department", values: ["name": "Ops"]) }
        try store.transaction { tx in try tx.setValue(7, forKeyPath: "salary", of: id("Employee/bob")) }
        let snapshot = store.read { $0.snapshot() }
        let text = snapshot.jsonString()
        let copy = ObjectStore(model: try employeesModel())
        try copy.restore(snapshot: try PropertyListValue(jsonString: text))
        #expect(copy.seq == 3)
        #expect(copy.export() == store.export())
        #expect(try copy.read { view in try view.version(of: id("Employee/bob")) } == 3)
        #expect(try copy.read { view in try view.version(of: id("Employee/ann")) } == 1)
        let a = try store.transaction { tx in try tx.insert("Department", values: ["name": "N"]) }
        let b = try copy.transaction { tx in try tx.insert("Department", values: ["name": "N"]) }
        #expect(a.value == b.value && a.seq == b.seq)
        expectError("bad-change-record") { try copy.restore(snapshot: ["objects": []]) }
        #expect(copy.seq == 4)
    }

    /// A binary snapshot holds the content seq (commits that only took a seq after it do not move it); one in the
    /// earlier format without it reads back with its seq as the content seq.
    @Test func binarySnapshotKeepsTheContentSeqAndReadsTheEarlierFormat() throws {
        let store = try employeesStore()
        try store.transaction { tx in try tx.setValue(7, forKeyPath: "salary", of: id("Employee/bob")) }
        try store.advanceSeq()
        try store.advanceSeq(by: 10)
        #expect(store.seq == 13)
        let bytes = store.read { $0.binarySnapshot() }
        #expect(ObjectStore.binarySnapshotSeqs(Array(bytes.prefix(24))).map { [$0.seq, $0.contentSeq] } == [13, 2])
        let copy = ObjectStore(model: try employeesModel())
        try copy.restore(binarySnapshot: bytes)
        #expect(copy.seq == 13)
        #expect(copy.read { $0.contentSeq } == 2)
        #expect(copy.export() == store.export())
        var earlier = bytes
        earlier.replaceSubrange(0..<8, with: Array("BNDSNAP1".utf8))
        earlier.removeSubrange(16..<24)
        #expect(ObjectStore.binarySnapshotSeqs(earlier).map { [$0.seq, $0.contentSeq] } == [13, 13])
        let old = ObjectStore(model: try employeesModel())
        try old.restore(binarySnapshot: earlier)
        #expect(old.seq == 13)
        #expect(old.read { $0.contentSeq } == 13)
        #expect(old.export() == store.export())
        #expect(ObjectStore.binarySnapshotSeqs(Array("BNDSNAPX".utf8) + bytes[8...]) == nil)
        #expect(ObjectStore.binarySnapshotSeqs(Array("BNDSNAP2".utf8) + bytes[8...]).map(\.contentSeq) == 2)
        #expect(ObjectStore.binarySnapshotSeqs(Array(bytes.prefix(20))) == nil)
    }

    /// Snapshots of earlier versions hold each object's own version (the versions of what its derived keys read were
    /// added at each read); they load with the versions those versions answered, so that no ETag goes back.
    @Test func binarySnapshotsOfEarlierVersionsKeepTheETagsTheyAnswered() throws {
        let store = try employeesStore()
        try store.transaction { tx in
            try tx.setValue(ref("Department/2"), forKeyPath: "department", of: id("Employee/bob"))
        }
        let objects = ["Employee/ann", "Employee/bob", "Employee/dee", "Department/1", "Department/3"].map(id)
        func versions(_ store: ObjectStore) throws -> [Int64] {
            try store.read { view throws(ObjectGraphError) in try objects.map(view.version(of:)) }
        }
        // Ann's departmentName does not read the departments' employees.
        #expect(try versions(store) == [1, 2, 1, 2, 1])
        let bytes = store.read { $0.binarySnapshot() }
        let copy = ObjectStore(model: try employeesModel())
        try copy.restore(binarySnapshot: bytes)
        #expect(try versions(copy) == [1, 2, 1, 2, 1])
        // Read as an earlier version wrote them: Ann's was her department's (2), Dee's hers and Research's (2).
        for magic in ["BNDSNAP2", "BNDSNAP1"] {
            var earlier = bytes
            earlier.replaceSubrange(0..<8, with: Array(magic.utf8))
            if magic == "BNDSNAP1" { earlier.removeSubrange(16..<24) }
            let old = ObjectStore(model: try employeesModel())
            try old.restore(binarySnapshot: earlier)
            #expect(try versions(old) == [2, 2, 2, 2, 1], "\(magic)")
            #expect(old.export() == store.export())
        }
    }
}
