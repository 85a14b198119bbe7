import Controllers
import Foundation
import GraphTestSupport
import ObjectGraph
import PropertyList
import Synchronization
import Testing

struct EditingTests {
    @Test func commitEditing_validEdits_appliedAtomically_editsCleared_notificationPosted() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1, 2])
        try h.registry.setPendingEdit(400, forKeyPath: "salary", controller: "e")
        try h.registry.setPendingEdit("Sam", forKeyPath: "firstName", controller: "e")
        #expect(try h.value("isEditing") == true)
        #expect(try h.registry.edits(controller: "e") == ["salary": 400, "firstName": "Sam"])
        #expect(try h.json("salary", of: "Employee/bob") == 200)
        let seq = h.store.seq
        try h.registry.perform("commitEditing", controller: "e")
        #expect(h.store.seq == seq + 1)
        #expect(try h.json("salary", of: "Employee/cy") == 400)
        #expect(try h.json("firstName", of: "Employee/bob") == "Sam")
        #expect(try h.value("isEditing") == false)
        #expect(h.reported(.isEditing))
        #expect(h.notifications == ["ControllerDidCommitEditing"])
    }

    /// Two clients committing at once: the second waits for the first and finds nothing left to commit (both
    /// planned the same edits and applied them twice: two notifications, two undo steps).
    @Test func commitEditing_twoAtOnce_editsCommittedOnce() throws {
        let started = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
        let h = try Harness(beforeTransaction: { registry in
            guard !started.exchange(true, ordering: .sequentiallyConsistent) else { return }
            Thread {
                _ = try? registry.perform("commitEditing", controller: "e")
                finished.store(true, ordering: .sequentiallyConsistent)
            }.start()
            usleep(50_000)  // the other client plans its commit meanwhile
        })
        try h.employees()
        try h.select([0])
        try h.registry.setPendingEdit(123, forKeyPath: "salary", controller: "e")
        let seq = h.store.seq
        try h.registry.perform("commitEditing", controller: "e")
        while !finished.load(ordering: .sequentiallyConsistent) { usleep(1_000) }
        #expect(h.store.seq == seq + 1)
        #expect(h.notifications.filter { $0 == "ControllerDidCommitEditing" }.count == 1)
    }

    /// An edit recorded by another client while a selection change commits the edits before it is committed too,
    /// to the objects it was made for, not dropped with the old selection.
    @Test func selectionChange_editArrivingDuringItsCommit_committedNotLost() throws {
        let once = Atomic<Bool>(false)
        let h = try Harness(beforeTransaction: { registry in
            guard !once.exchange(true, ordering: .sequentiallyConsistent) else { return }
            _ = try? registry.setPendingEdit("Zed", forKeyPath: "firstName", controller: "e")
        })
        try h.employees()
        try h.select([0])
        try h.registry.setPendingEdit(111, forKeyPath: "salary", controller: "e")
        try h.select([1])
        #expect(try h.json("firstName", of: "Employee/ann") == "Zed")
        #expect(try h.json("salary", of: "Employee/ann") == 111)
        #expect(try h.value("edits", of: "e") == [:])
        #expect(try h.selectedNames() == ["Baker"])
    }

    @Test func commitEditing_invalidEdits_422WithEveryError_editsKept_nothingChanged() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1])
        try h.registry.setPendingEdit("lots", forKeyPath: "salary", controller: "e")
        try h.registry.setPendingEdit(7, forKeyPath: "hireDate", controller: "e")
        try h.registry.setPendingEdit("Sam", forKeyPath: "firstName", controller: "e")
        let seq = h.store.seq
        let error = expectError("validation-failed", status: 422) {
            try h.registry.perform("commitEditing", controller: "e")
        }
        #expect(error?.fields["errors"]?.arrayValue?.count == 2)
        #expect(h.store.seq == seq)
        #expect(try h.json("firstName", of: "Employee/bob") == "Bob")
        #expect(try h.value("isEditing") == true)
        #expect(try h.registry.edits(controller: "e")["firstName"] == "Sam")
    }

    @Test func commitEditing_constraintViolation_422_editsKept() throws {
        let h = try Harness()
        try h.employees()
        try h.registry.setPendingEdit(-5, forKeyPath: "salary", controller: "e")
        expectError("validation-failed", status: 422) { try h.registry.perform("commitEditing", controller: "e") }
        #expect(try h.value("isEditing") == true)
    }

    /// Edits are for the objects selected when they were made: when a change elsewhere deletes one and the
    /// selection moves to a neighbour (at the same index), they are dropped rather than committed to the neighbour.
    @Test func selectedObjectDeletedElsewhere_editsDropped_neighbourUntouched() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1])
        let edited = try #require(h.selectedNames().first)
        try h.registry.setPendingEdit(1, forKeyPath: "salary", controller: "e")
        let doomed = try #require(try h.value("selectedObjects", of: "e").arrayValue?.first?["$ref"]?.stringValue)
        try h.store.transaction { try $0.delete(id(doomed)) }
        h.registry.synchronize()
        #expect(try h.selection() == [1])
        #expect(try h.selectedNames() != [edited])
        #expect(try h.value("isEditing") == false)
        #expect(try h.registry.edits(controller: "e") == [:])
        #expect(h.reported(.isEditing))
        let neighbour = try #require(try h.value("selectedObjects", of: "e").arrayValue?.first?["$ref"]?.stringValue)
        let salary = try h.json("salary", of: neighbour)
        try h.registry.perform("commitEditing", controller: "e")
        #expect(try h.json("salary", of: neighbour) == salary)
    }

    /// A re-sort that only changes the order of the selected objects keeps the edits: they are for the same objects.
    @Test func selectedObjectsReordered_editsKept() throws {
        let h = try Harness()
        try h.employees(options: ["automaticallyRearrangesObjects": true])
        try h.select([0, 1])
        let names = try h.selectedNames()
        try h.registry.setPendingEdit(7, forKeyPath: "salary", controller: "e")
        let first = try #require(try h.value("selectedObjects", of: "e").arrayValue?.first?["$ref"]?.stringValue)
        try h.set("lastName", of: first, to: "Zzz")
        h.registry.synchronize()
        #expect(try Set(h.selectedNames()) == Set(names.dropFirst() + ["Zzz"]))
        #expect(try h.value("isEditing") == true)
        #expect(try h.registry.edits(controller: "e") == ["salary": 7])
    }

    @Test func discardEditing_dropsEdits_modelUnchanged() throws {
        let h = try Harness()
        try h.employees()
        try h.registry.setPendingEdit(1, forKeyPath: "salary", controller: "e")
        try h.registry.perform("discardEditing", controller: "e")
        #expect(try h.value("isEditing") == false)
        #expect(try h.registry.edits(controller: "e") == [:])
        #expect(try h.json("salary", of: "Employee/ann") == 300)
    }

    @Test func selectionChange_withValidPendingEdits_commitsFirst() throws {
        let h = try Harness()
        try h.employees()
        try h.registry.setPendingEdit(1, forKeyPath: "salary", controller: "e")
        try h.select([3])
        #expect(try h.json("salary", of: "Employee/ann") == 1)
        #expect(try h.json("salary", of: "Employee/dee") == 100)
        #expect(try h.selectedNames() == ["Dunn"])
        #expect(try h.value("isEditing") == false)
    }

    @Test func selectionChange_withInvalidPendingEdits_422_keepsOldSelectionAndEdits() throws {
        let h = try Harness()
        try h.employees()
        try h.registry.setPendingEdit(-1, forKeyPath: "salary", controller: "e")
        expectError("validation-failed", status: 422) { try h.select([3]) }
        #expect(try h.selection() == [0])
        #expect(try h.value("isEditing") == true)
        expectError("validation-failed", status: 422) { try h.registry.perform("selectNext", controller: "e") }
        #expect(try h.selection() == [0])
    }

    /// `selectNext` and `selectPrevious` go to the neighbour of the selected object as it was arranged when they
    /// were sent: the commit that comes first may move the edited object (a sort key), not what "next" means.
    @Test func selectNextAndPrevious_editOfTheSortKey_committedFirst_selectTheNeighbourAsArranged() throws {
        let h = try Harness()
        try h.employees(options: ["automaticallyRearrangesObjects": true])
        let before = try h.names()
        try h.registry.setPendingEdit("Zz", forKeyPath: "lastName", controller: "e")
        try h.registry.perform("selectNext", controller: "e")
        #expect(try h.names() == Array(before.dropFirst()) + ["Zz"])
        #expect(try h.selectedNames() == [before[1]])
        try h.select([1])
        try h.registry.setPendingEdit("Aa", forKeyPath: "lastName", controller: "e")
        try h.registry.perform("selectPrevious", controller: "e")
        #expect(try h.names().first == "Aa")
        #expect(try h.selectedNames() == [before[1]])
        // With several selected, the next row may be selected itself, and the edits move it too: the row (index)
        // is kept then, as NSArrayController's selectionIndex + 1, rather than the object wherever it went.
        try h.select([1, 2])
        try h.registry.setPendingEdit("Zz", forKeyPath: "lastName", controller: "e")
        try h.registry.perform("selectNext", controller: "e")
        #expect(try h.selection() == [2])
        #expect(try h.names().suffix(2) == ["Zz", "Zz"])
    }

    /// Two controllers with edits of one object's key: the value committed is the later one's, and so is the
    /// controller a refusal names.
    @Test func failedCommit_twoControllersEditingOneKey_namesTheOneWhoseValueWasChecked() throws {
        let h = try Harness()
        try h.employees()
        try h.make(["name": "o", "kind": "object", "content": "@e.selection"])
        try h.registry.setPendingEdit(7, forKeyPath: "salary", controller: "e")
        try h.registry.setPendingEdit(-2, forKeyPath: "salary", controller: "o")
        let error = expectError("validation-failed", status: 422) { try h.select([3]) }
        #expect(error?.fields["errors"]?.arrayValue?.map { $0["controller"] } == ["o"])
    }

    /// `add` selects the new object (`selectsInsertedObjects`): the edits are committed first, to the objects they
    /// were made for, as for a selection change.
    @Test func add_withValidPendingEdits_commitsThemToTheOldSelection_selectsTheNewObject() throws {
        let h = try Harness()
        try h.employees()
        try h.registry.setPendingEdit(1, forKeyPath: "salary", controller: "e")
        try h.registry.perform(
            "add", controller: "e",
            body: ["object": ["firstName": "Al", "lastName": "Aaron", "department": ref("Department/2")]])
        #expect(try h.json("salary", of: "Employee/ann") == 1)
        #expect(try h.selectedNames() == ["Aaron"])
        #expect(try h.value("selection.salary") == .null)
        #expect(try h.value("isEditing") == false)
        #expect(h.notifications == ["ControllerDidCommitEditing"])
    }

    @Test func add_withInvalidPendingEdits_422_nothingCreated_editsAndSelectionKept() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1])
        try h.registry.setPendingEdit(-1, forKeyPath: "salary", controller: "e")
        let seq = h.store.seq
        expectError("validation-failed", status: 422) {
            try h.registry.perform(
                "add", controller: "e",
                body: ["object": ["firstName": "Al", "lastName": "Aaron", "department": ref("Department/2")]])
        }
        #expect(h.store.seq == seq)
        #expect(try h.names() == ["Archer", "Baker", "Cole", "Dunn", "Evans"])
        #expect(try h.selection() == [1])
        #expect(try h.registry.edits(controller: "e") == ["salary": -1])
    }

    /// The edits and the action are one transaction: an action refused for its own reasons (an invalid new object)
    /// commits no edit either.
    @Test func add_refusedForItsObject_commitsNoEdit() throws {
        let h = try Harness()
        try h.employees()
        try h.registry.setPendingEdit(1, forKeyPath: "salary", controller: "e")
        let seq = h.store.seq
        expectError("validation-failed", status: 422) {
            try h.registry.perform("add", controller: "e", body: ["object": ["firstName": "OnlyFirst"]])
        }
        #expect(h.store.seq == seq)
        #expect(try h.json("salary", of: "Employee/ann") == 300)
        #expect(try h.registry.edits(controller: "e") == ["salary": 1])
        #expect(try h.selectedNames() == ["Archer"])
        #expect(h.notifications.isEmpty)
    }

    /// `insert` selects the new object too: an invalid edit refuses it, a valid one is committed first.
    @Test func insert_withPendingEdits_commitsFirst_invalidEdits422() throws {
        let h = try Harness()
        try h.employees()
        try h.select([2])
        let body: PropertyListValue = [
            "object": ["firstName": "Zed", "lastName": "Zulu", "department": ref("Department/2")]
        ]
        try h.registry.setPendingEdit(-1, forKeyPath: "salary", controller: "e")
        expectError("validation-failed", status: 422) { try h.registry.perform("insert", controller: "e", body: body) }
        #expect(try h.names().count == 5)
        #expect(try h.selectedNames() == ["Cole"])
        try h.registry.setPendingEdit(9, forKeyPath: "salary", controller: "e")
        try h.registry.perform("insert", controller: "e", body: body)
        #expect(try h.json("salary", of: "Employee/cy") == 9)
        #expect(try h.selectedNames() == ["Zulu"])
        #expect(try h.value("isEditing") == false)
    }

    /// The pending edits of an object that `remove` takes away are discarded with it (as Cocoa discards the editors
    /// bound to removed objects), so even invalid ones do not keep it from being removed.
    @Test func remove_withPendingEditsOfTheRemovedObject_discardsThem() throws {
        let h = try Harness()
        try h.employees()
        try h.select([2])
        try h.registry.setPendingEdit(-1, forKeyPath: "salary", controller: "e")
        try h.registry.perform("remove", controller: "e")
        #expect(h.store.read { $0.contains(id("Employee/cy")) } == false)
        #expect(try h.value("isEditing") == false)
        #expect(try h.selectedNames() == ["Dunn"])
        #expect(try h.json("salary", of: "Employee/dee") == 100)
    }

    /// The controllers following the one that removes get other content; their edits are for objects that survive
    /// the removal, and are committed first (a failure refuses the removal).
    @Test func remove_withPendingEditsOfAFollower_commitsThemFirst_invalidEdits422() throws {
        let h = try Harness()
        try h.employees()
        try h.employees("reports", content: "@e.selection.directReports")
        #expect(try h.selectedNames("reports") == ["Baker"])
        try h.registry.setPendingEdit(-1, forKeyPath: "salary", controller: "reports")
        let error = expectError("validation-failed", status: 422) { try h.registry.perform("remove", controller: "e") }
        // The error says whose edit failed: the follower's, not the controller the client sent `remove` to.
        #expect(error?.fields["errors"]?.arrayValue?.map { $0["controller"] } == ["reports"])
        #expect(h.store.read { $0.contains(id("Employee/ann")) } == true)
        #expect(try h.registry.edits(controller: "reports") == ["salary": -1])
        try h.registry.setPendingEdit(7, forKeyPath: "salary", controller: "reports")
        try h.registry.perform("remove", controller: "e")
        #expect(h.store.read { $0.contains(id("Employee/ann")) } == false)
        #expect(try h.json("salary", of: "Employee/bob") == 7)
        #expect(try h.value("isEditing", of: "reports") == false)
    }

    @Test func selectionRequestOfTheWrongKind_refusedBeforeEditsAreCommitted() throws {
        let h = try Harness()
        try h.employees()
        try h.make(["name": "org", "kind": "tree", "content": "Employee", "childrenKeyPath": "directReports"])
        try h.make(["name": "one", "kind": "object", "content": "Employee/bob"])
        try h.registry.setPendingEdit(1, forKeyPath: "salary", controller: "e")
        try h.registry.setPendingEdit(2, forKeyPath: "salary", controller: "one")
        expectError("undefined-key", status: 404) { try h.registry.setSelectionIndexPaths([[3]], controller: "e") }
        expectError("undefined-key", status: 404) { try h.registry.setSelectionIndexes([1], controller: "org") }
        expectError("undefined-key", status: 404) { try h.registry.setSelectionIndexPaths([[0]], controller: "one") }
        expectError("validation-failed", status: 422) { try h.registry.setSelectionIndexes([], controller: "one") }
        #expect(try h.selection() == [0])
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0]])
        #expect(try h.json("salary", of: "Employee/ann") == 300)
        #expect(try h.json("salary", of: "Employee/bob") == 200)
        #expect(try h.value("isEditing") == true)
        #expect(try h.value("isEditing", of: "one") == true)
    }

    /// A filter or sort change may select other objects: the edits are committed first, as for a selection change.
    @Test func filterChangeHidingTheEditedObject_commitsEditsFirst_invalidEdits422AndFilterKept() throws {
        let h = try Harness()
        try h.employees()
        try h.registry.setPendingEdit(-1, forKeyPath: "salary", controller: "e")
        expectError("validation-failed", status: 422) {
            try h.registry.setFilterPredicate(try Predicate(format: "salary > 1000"), controller: "e")
        }
        #expect(try h.names().count == 5)
        #expect(try h.value("isEditing") == true)
        try h.registry.setPendingEdit(7, forKeyPath: "salary", controller: "e")
        try h.registry.setFilterPredicate(try Predicate(format: "salary > 150"), controller: "e")
        #expect(try h.json("salary", of: "Employee/ann") == 7)
        #expect(try h.names() == ["Baker", "Evans"])
        #expect(try h.value("isEditing") == false)
    }

    @Test func objectController_commitEditing_appliesToContent() throws {
        let h = try Harness()
        try h.make(["name": "o", "kind": "object", "content": "Employee/cy"])
        try h.registry.setPendingEdit("Cyrus", forKeyPath: "firstName", controller: "o")
        try h.registry.perform("commitEditing", controller: "o")
        #expect(try h.json("firstName", of: "Employee/cy") == "Cyrus")
        #expect(try h.value("selection.firstName", of: "o") == "Cyrus")
    }
}

struct ObservingControllerKeysTests {
    @Test func selectionChange_reportsSelectionIndexesAndSelection() throws {
        let h = try Harness()
        try h.employees()
        h.clearReports()
        try h.select([2])
        #expect(h.reported(.selectionIndexes))
        #expect(h.reported(.selection))
        #expect(!h.reported(.arrangedObjects))
    }

    @Test func modelChangeOfContentObject_reportsArrangedObjectsWithSeq() throws {
        let h = try Harness()
        try h.employees()
        h.clearReports()
        try h.set("salary", of: "Employee/cy", to: 5)
        let seq = h.store.seq
        #expect(h.changes.contains { $0.key == .arrangedObjects && $0.seq == seq })
    }

    @Test func controllerKeys_readThroughValueForKeyPath() throws {
        let h = try Harness()
        try h.employees()
        #expect(try h.value("arrangedObjects.@count") == 5)
        #expect(try h.value("arrangedObjects.@max.salary") == 300)
        #expect(try h.value("selectedObjects") == [ref("Employee/ann")])
        #expect(try h.value("count") == 5)
        #expect(try h.value("canSelectNext") == true)
        #expect(try h.value("avoidsEmptySelection") == true)
        expectError("undefined-key", status: 404) { _ = try h.value("nope") }
    }
}
