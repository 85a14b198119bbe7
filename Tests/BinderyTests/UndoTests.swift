import Foundation
import ObjectGraph
import PropertyList
import Testing

@testable import Bindery

/// Undo and redo through the document: one group per transaction, undone and redone as new transactions.
struct UndoTests {
    func document(undoDepth: Int = 100) throws -> Document {
        try Document(fixtureDirectory: employeesFixture, options: .init(fsync: .never, undoDepth: undoDepth))
    }

    @Test func undoAndRedoOfSettingAValue() throws {
        let document = try document()
        #expect(document.undoManager.canUndo == false)
        let original = try document.value("salary", of: "Employee/3")
        try document.set(1, "salary", of: "Employee/3")
        #expect(document.undoManager.canUndo)
        let undoSeq = try document.undo()
        #expect(undoSeq == 3)
        #expect(try document.value("salary", of: "Employee/3") == original)
        #expect(document.undoManager.canUndo == false && document.undoManager.canRedo)
        try document.redo()
        #expect(try document.value("salary", of: "Employee/3") == 1)
        #expect(document.undoManager.canUndo && !document.undoManager.canRedo)
        try document.undo()
        #expect(try document.value("salary", of: "Employee/3") == original)
    }

    @Test func undoOfInsertRemovesTheObjectAndItsInverses() throws {
        let document = try document()
        let before = document.graph["objects"]
        try document.transaction {
            try $0.insert(
                "Employee", id: "new",
                values: [
                    "firstName": "N", "lastName": "M", "department": ["$ref": "Department/2"],
                    "manager": ["$ref": "Employee/1"],
                ])
        }
        #expect(try document.value("employees.@count", of: "Department/2") == 7 || true)
        try document.undo()
        #expect(document.graph["objects"] == before)
        try document.redo()
        #expect(try document.value("department.name", of: "Employee/new") == "Sales")
        #expect(try document.value("directReports", of: "Employee/1").arrayValue?.last == ["$ref": "Employee/new"])
    }

    @Test func undoOfDeleteRestoresTheObjectAndBothSidesOfItsRelationships() throws {
        let document = try document()
        let employee = "Employee/2"
        let department = try document.value("department", of: employee)
        let reports = try document.value("directReports", of: employee)
        let before = try document.value("employees", of: "Department/1")
        #expect(reports.arrayValue?.isEmpty == false)
        try document.transaction { try $0.delete(ObjectID(reference: employee)!) }
        #expect(try document.value("employees", of: "Department/1") != before)
        try document.undo()
        #expect(try document.value("department", of: employee) == department)
        #expect(try document.value("directReports", of: employee) == reports)
        #expect(try document.value("manager", of: employee) == ["$ref": "Employee/1"])
        #expect(try document.value("employees", of: "Department/1") == before)
        for report in reports.arrayValue ?? [] {
            #expect(try document.value("manager", of: report["$ref"]!.stringValue!) == ["$ref": .string(employee)])
        }
        #expect(
            try document.value("directReports", of: "Employee/1").arrayValue?.contains(["$ref": "Employee/2"]) == true)
        try document.redo()
        #expect(document.store.read { $0.contains(ObjectID(reference: employee)!) } == false)
    }

    @Test func undoOfRelationshipChanges() throws {
        let document = try document()
        let before = document.graph["objects"]
        try document.set(["$ref": "Department/3"], "department", of: "Employee/4")
        try document.transaction {
            try $0.remove(at: 0, fromKeyPath: "directReports", of: ObjectID(reference: "Employee/1")!)
            try $0.insert(
                ObjectID(reference: "Employee/10")!, at: 0, intoKeyPath: "directReports",
                of: ObjectID(reference: "Employee/1")!)
        }
        let after = document.graph["objects"]
        try document.undo()
        try document.undo()
        #expect(document.graph["objects"] == before)
        try document.redo()
        try document.redo()
        #expect(document.graph["objects"] == after)
    }

    @Test func aNewChangeClearsRedo() throws {
        let document = try document()
        try document.set(1, "salary", of: "Employee/3")
        try document.undo()
        #expect(document.undoManager.canRedo)
        try document.set(2, "salary", of: "Employee/4")
        #expect(document.undoManager.canRedo == false)
        #expect {
            try document.redo()
        } throws: { error in
            (error as? ObjectGraphError)?.code == "action-disabled"
        }
    }

    @Test func depthIsBounded() throws {
        let document = try document(undoDepth: 3)
        for salary in 1...5 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/3") }
        try document.undo()
        try document.undo()
        try document.undo()
        #expect(document.undoManager.canUndo == false)
        #expect(try document.value("salary", of: "Employee/3") == 2)
    }

    @Test func undoOfAGraphReplacement() throws {
        let document = try document()
        let before = document.graph["objects"]
        try document.transaction {
            try $0.replaceGraph(with: ["objects": [["$id": "Department/x", "name": "Only"]]])
        }
        #expect(try document.store.read { try $0.count(of: "Employee") } == 0)
        try document.undo()
        #expect(document.graph["objects"] == before)
    }

    @Test func undoAndRedoAreJournaled() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            try document.set(1, "salary", of: "Employee/3")
            try document.transaction { try $0.delete(ObjectID(reference: "Employee/5")!) }
            try document.undo()
            try document.undo()
            try document.redo()
            let expected = document.graphWithVersions
            let copy = try crashCopy(of: path)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let recovered = try openDocument(copy)
            #expect(recovered.graphWithVersions == expected.afterCrash)
            #expect(recovered.undoManager.canUndo == false)
        }
    }

    /// The records of changes made to `document`, told to a separate `manager` as commits (the document's own
    /// manager has seen them too): a stack to drive the manager's steps one by one.
    func commits(_ count: Int, told manager: DocumentUndoManager, in document: Document) throws -> [ChangeRecord] {
        try (1...count).map { salary in
            let result = try document.transaction {
                try $0.setValue(.integer(Int64(salary)), forKeyPath: "salary", of: ObjectID(reference: "Employee/3")!)
            }
            let record = try #require(result.record)
            manager.beginTransaction()
            manager.didCommit(record)
            return record
        }
    }

    /// An undo that changed nothing drops its group after its transaction, outside the store's lock. Done late, that
    /// must not turn another undo that has begun meanwhile into a new change (every transaction marks itself).
    @Test func aLateDiscardOfAnEmptyUndoLeavesAnotherUndoAnUndo() throws {
        let document = try document()
        let manager = DocumentUndoManager()
        let records = try commits(2, told: manager, in: document)
        let undone = try document.transaction { transaction in
            manager.beginTransaction()
            return try manager.undo(in: transaction)
        }
        #expect(undone.value == records[1].seq)
        manager.discardEmpty(undo: true, seq: records[1].seq + 1_000)  // the late discard of another undo
        manager.didCommit(try #require(undone.record))
        #expect(manager.canRedo && manager.redoSeq == records[1].seq)
        #expect(manager.undoSeq == records[0].seq)
    }

    /// A group that cannot be read back answers 500 and clears the stacks: undo is not left enabled to fail again.
    @Test func aGroupThatCannotBeReadBackClearsTheStacks() throws {
        let document = try document()
        let manager = DocumentUndoManager()
        _ = try commits(1, told: manager, in: document)
        let large = try document.transaction { transaction in
            for id in 1...32 {
                let employee = ObjectID(reference: "Employee/\(id)")!
                try transaction.setValue(.integer(Int64(id)), forKeyPath: "salary", of: employee)
                try transaction.setValue(.string("F\(id)"), forKeyPath: "firstName", of: employee)
                try transaction.setValue(.string("L\(id)"), forKeyPath: "lastName", of: employee)
            }
        }
        let record = try #require(large.record)
        #expect(DocumentUndoManager.keepsEncoded(record))
        manager.beginTransaction()
        manager.didCommit(record, encoded: Array("{\"seq\": ".utf8))
        #expect(manager.canUndo)
        #expect(throws: ObjectGraphError.self) {
            try document.transaction { transaction in
                manager.beginTransaction()
                return try manager.undo(in: transaction)
            }
        }
        #expect(!manager.canUndo && !manager.canRedo)
    }

    /// A large group is decoded before the store's lock (`prepare`); if another undo took it off the stack meanwhile,
    /// the transaction undoes the group now on top, decoded under the lock, never the prepared one again.
    @Test func aGroupPreparedOutsideTheLockIsUsedOnlyWhileItIsOnTop() throws {
        let document = try document()
        let manager = DocumentUndoManager()
        let original = try document.value("salary", of: "Employee/3")
        var records: [ChangeRecord] = []
        for round in 1...2 {
            let result = try document.transaction { transaction in
                for id in 1...30 {
                    let employee = ObjectID(reference: "Employee/\(id)")!
                    try transaction.setValue(.integer(Int64(round * 1000 + id)), forKeyPath: "salary", of: employee)
                    try transaction.setValue(.string("R\(round)-\(id)"), forKeyPath: "lastName", of: employee)
                    try transaction.setValue(.string("F\(round)-\(id)"), forKeyPath: "firstName", of: employee)
                }
            }
            let record = try #require(result.record)
            #expect(DocumentUndoManager.keepsEncoded(record))
            manager.beginTransaction()
            manager.didCommit(record)
            records.append(record)
        }
        let stale = try #require(manager.prepare(undo: true))
        #expect(stale.seq == records[1].seq)
        // Another undo runs first, with its own prepared group (the same one): it undoes records[1].
        let first = try document.transaction { transaction in
            manager.beginTransaction()
            return try manager.undo(in: transaction, prepared: manager.prepare(undo: true))
        }
        manager.didCommit(try #require(first.record))
        #expect(first.value == records[1].seq)
        #expect(try document.value("salary", of: "Employee/3") == .integer(1003))
        // The stale one must undo records[0] now on top, not records[1] again.
        let second = try document.transaction { transaction in
            manager.beginTransaction()
            return try manager.undo(in: transaction, prepared: stale)
        }
        manager.didCommit(try #require(second.record))
        #expect(second.value == records[0].seq)
        #expect(try document.value("salary", of: "Employee/3") == original)
        #expect(!manager.canUndo && manager.redoSeq == records[0].seq)
    }
}
