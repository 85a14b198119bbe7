import Controllers
import Foundation
import GraphTestSupport
import ObjectGraph
import PropertyList
import Synchronization
import Testing

struct ControllerDefaultsTests {
    /// An object re-sorted on its own goes among its equals by content order, where `rearrangeObjects` (a stable
    /// sort of the content) puts it, so a later full re-arrangement moves nothing.
    @Test func automaticRearrangement_equalKeys_contentOrderAsAFullSort() throws {
        let h = try Harness()
        try h.employees(options: ["automaticallyRearrangesObjects": true])
        try h.set("lastName", of: "Employee/ann", to: "Baker")
        let incremental = try h.value("arrangedObjects.firstName")
        #expect(incremental == ["Ann", "Bob", "Cy", "Dee", "Eve"])
        try h.registry.perform("rearrangeObjects", controller: "e")
        #expect(try h.value("arrangedObjects.firstName") == incremental)
    }

    /// An automatic re-arrangement that filters the selected object out selects its neighbour (the object now at its
    /// index), as a full `rearrangeObjects` does, not the first object.
    @Test func automaticRearrangement_selectedObjectFilteredOut_selectsItsNeighbour() throws {
        let h = try Harness()
        try h.employees(filter: "salary > 150", options: ["automaticallyRearrangesObjects": true])
        #expect(try h.names() == ["Archer", "Baker", "Evans"])
        try h.select([1])
        try h.set("salary", of: "Employee/bob", to: 10)
        #expect(try h.names() == ["Archer", "Evans"])
        #expect(try h.selection() == [1])
        #expect(try h.selectedNames() == ["Evans"])
    }

    /// Without `preservesSelection` an automatic re-arrangement keeps the selected indexes, as `rearrangeObjects` does,
    /// whether the key that moved an object is its own or one it reads through a relationship.
    @Test(arguments: ["lastName", "department.name"])
    func automaticRearrangement_withoutPreservesSelection_keepsIndexes(sortKey: String) throws {
        let h = try Harness()
        try h.employees(
            sort: "\(sortKey),lastName",
            options: ["automaticallyRearrangesObjects": true, "preservesSelection": false])
        try h.select([0])
        // Archer (sorted by last name) or Dunn (Research before Sales) goes last.
        if sortKey == "lastName" {
            try h.set("lastName", of: "Employee/ann", to: "Zed")
        } else {
            try h.set("name", of: "Department/2", to: "ZZZ")
        }
        #expect(try h.selection() == [0])
        #expect(try h.selectedNames() == [sortKey == "lastName" ? "Baker" : "Archer"])
        try h.registry.perform("rearrangeObjects", controller: "e")
        #expect(try h.selection() == [0])
    }

    /// An object `add` created past a kept filter is hidden, and shows once a change makes it pass, sorted or not
    /// (NSArrayController's `automaticallyRearrangesObjects` calls `rearrangeObjects`).
    @Test(arguments: ["", "lastName"])
    func addPastKeptFilter_automaticRearrangement_showsItOncePassing(sort: String) throws {
        let h = try Harness()
        try h.employees(
            sort: sort, filter: "salary > 150",
            options: ["automaticallyRearrangesObjects": true, "clearsFilterPredicateOnInsertion": false])
        try h.registry.perform(
            "add", controller: "e",
            body: ["object": ["firstName": "Lo", "lastName": "Low", "salary": 10, "department": ref("Department/1")]])
        #expect(try h.names().sorted() == ["Archer", "Baker", "Evans"])
        let low = try #require(
            try h.store.read { view in
                try view.objects(of: "Employee").first { try view.value(forKey: "lastName", of: $0) == .value("Low") }
            })
        try h.set("salary", of: low.description, to: 500)
        #expect(try h.names().sorted() == ["Archer", "Baker", "Evans", "Low"])
        if !sort.isEmpty { #expect(try h.names() == ["Archer", "Baker", "Evans", "Low"]) }
    }

    /// Key paths through the arranged objects (`arrangedObjects.department.name`) read objects outside the content:
    /// a change to one is reported while something is arranged, with nothing selected too (it was reported only
    /// through the selection's report, so an observer of a controller without a selection missed it).
    @Test func aChangeOutsideTheContent_reportsArrangedObjects_withNothingSelected() throws {
        let h = try Harness()
        try h.employees(options: ["avoidsEmptySelection": false])
        try h.select([])
        h.clearReports()
        try h.set("name", of: "Department/1", to: "Renamed")
        #expect(h.reported(.arrangedObjects))
        #expect(!h.reported(.selection))
        try h.employees("none", filter: "salary > 1000000")
        h.clearReports()
        try h.set("name", of: "Department/1", to: "Again")
        #expect(!h.reported(.arrangedObjects, of: "none"), "nothing arranged: nothing to read through")
    }

    /// A controller created with an `idleTimeout` goes once no request has named it for that long: details before
    /// their masters, never a master that a controller still here follows, nor one without the option.
    @Test func idleControllers_removedAfterTheirTimeout_detailsBeforeMasters() throws {
        let time = Mutex(1_000.0)
        let h = try Harness(clock: { time.withLock { $0 } })
        try h.make(["name": "m", "content": "Department", "idleTimeout": 10])
        try h.make(["name": "d", "content": "@m.selection.employees", "idleTimeout": 20.5])
        try h.make(["name": "keep", "content": "Employee"])
        #expect(try h.registry.state(of: "d").value["idleTimeout"] == 20.5)
        #expect(try h.registry.state(of: "keep").value["idleTimeout"] == nil)
        time.withLock { $0 += 15 }  // m idle for 15 s, but d follows it
        h.registry.removeIdleControllers()
        #expect(h.registry.names == ["m", "d", "keep"])
        _ = try h.value("selectionIndexes", of: "d")  // named: idle from now on
        time.withLock { $0 += 15 }
        h.registry.removeIdleControllers()
        #expect(h.registry.names == ["m", "d", "keep"])
        time.withLock { $0 += 10 }
        h.registry.removeIdleControllers()
        #expect(h.registry.names == ["keep"])
        #expect(h.reported(.controller, of: "d") && h.reported(.controller, of: "m"))
    }

    /// A controller in use by a request that commits between two sessions (an action, a selection change committing
    /// edits, setting through the selection) is not dropped as idle meanwhile: the request finds it again to answer,
    /// rather than answering 404 for a change it made.
    @Test func idleControllers_inUseByACommittingRequest_kept() throws {
        let time = Mutex(1_000.0)
        let h = try Harness(clock: { time.withLock { $0 } }) { registry in
            time.withLock { $0 += 10 }
            registry.removeIdleControllers()
        }
        try h.make(["name": "d", "content": "Department", "idleTimeout": 5])
        let state = try h.registry.perform("add", controller: "d", body: ["object": ["name": "Ops"]])
        #expect(state["count"] == 4)
        try h.registry.setSelectionValue("Operations", forKeyPath: "name", controller: "d")
        #expect(h.registry.names == ["d"])
        #expect(try h.value("selection.name", of: "d") == "Operations")
        time.withLock { $0 += 5 }
        h.registry.removeIdleControllers()
        #expect(h.registry.names.isEmpty)
    }

    @Test(arguments: [0, -1, "10", true, .integer(365 * 86_400 + 1)] as [PropertyListValue])
    func idleTimeout_notAPositiveNumberOfSeconds_refused(value: PropertyListValue) throws {
        let h = try Harness()
        let error = expectError("bad-controller", status: 400) {
            try h.make(["name": "e", "content": "Employee", "idleTimeout": value])
        }
        #expect(error?.fields["field"] == "idleTimeout")
        expectError("bad-controller") {
            try h.registry.create(
                json: ["name": "f", "kind": "array", "content": "Employee", "idleTimeout": 5], declared: true)
        }
        #expect(h.registry.names.isEmpty)
    }

    /// Replacing the graph (`PUT /store`, `revertToSaved`) with the same objects holding other values is a content
    /// change made elsewhere: the controllers re-arrange, whatever `automaticallyRearrangesObjects` says.
    @Test(arguments: [true, false])
    func replaceGraph_sameObjectsOtherValues_rearranges(automatically: Bool) throws {
        let h = try Harness()
        try h.employees(options: ["automaticallyRearrangesObjects": automatically])
        try h.employees("f", filter: "salary > 250", options: ["automaticallyRearrangesObjects": automatically])
        try h.make(["name": "o", "kind": "object", "content": "Employee/eve"])
        h.clearReports()
        let objects = try #require(standardObjects.arrayValue).map { object -> PropertyListValue in
            guard var fields = object.dictionaryValue else { return object }
            if fields["$id"] == "Employee/eve" { fields["lastName"] = "Aaron" }
            if fields["$id"] == "Employee/dee" { fields["salary"] = 999 }
            return .dictionary(fields)
        }
        try h.store.transaction { try $0.replaceGraph(with: ["objects": .array(objects)]) }
        #expect(try h.names() == ["Aaron", "Archer", "Baker", "Cole", "Dunn"])
        #expect(try h.names("f") == ["Archer", "Dunn"])
        #expect(try h.value("selection.lastName", of: "o") == "Aaron")
        #expect(h.reported(.arrangedObjects) && h.reported(.arrangedObjects, of: "f"))
    }

    /// A sort key no object can be read by (an operator without its right key path) is refused at creation; the
    /// arrangement made before that check must not trap on keys it could not read (it did: SIGILL).
    @Test(arguments: [["employees.@avg"], ["name", "employees.@min"], ["employees.@unionOfObjects"]])
    func create_unreadableSortKey_refused(keys: [String]) throws {
        let h = try Harness()
        expectError("bad-key-path", status: 400) {
            try h.make([
                "name": "d", "kind": "array", "content": "Department",
                "sortDescriptors": .array(keys.map { ["key": .string($0)] }),
            ])
        }
        #expect(!h.registry.contains("d"))
    }

    /// Content through an operator that collects nothing is refused, as a sort key or filter through one is.
    @Test(arguments: ["Department/1.employees.@avg", "@departments.selection.employees.@unionOfObjects"])
    func create_contentEndingInAnOperator_refused(content: String) throws {
        let h = try Harness()
        try h.make(["name": "departments", "kind": "array", "content": "Department"])
        expectError("bad-key-path", status: 400) {
            try h.make(["name": "e", "kind": "array", "content": .string(content)])
        }
        #expect(!h.registry.contains("e"))
    }

    @Test func create_omittedOptions_useCocoaDefaults() throws {
        let h = try Harness()
        let state = try h.employees()
        #expect(state["avoidsEmptySelection"] == true)
        #expect(state["preservesSelection"] == true)
        #expect(state["selectsInsertedObjects"] == true)
        #expect(state["clearsFilterPredicateOnInsertion"] == true)
        #expect(state["alwaysUsesMultipleValuesMarker"] == false)
        #expect(state["automaticallyRearrangesObjects"] == false)
        #expect(state["editable"] == true)
        #expect(state["isEditing"] == false)
        #expect(state["canAdd"] == true)
        #expect(state["canRemove"] == true)
    }

    @Test func create_avoidsEmptySelection_selectsFirstObject() throws {
        let h = try Harness()
        try h.employees()
        #expect(try h.selection() == [0])
        #expect(try h.names() == ["Archer", "Baker", "Cole", "Dunn", "Evans"])
    }

    @Test func create_avoidsEmptySelectionOff_startsEmpty() throws {
        let h = try Harness()
        try h.employees(options: ["avoidsEmptySelection": false])
        #expect(try h.selection() == [])
        #expect(try h.value("selection.lastName") == marker("NoSelection"))
    }

    /// An array or tree controller arranges objects: content the model tells gives none (values, or one collection
    /// per object) is refused rather than left silently empty; objects gathered by a collection operator are taken,
    /// with their entity.
    @Test func create_arrayContentThatGivesNoObjects_refused() throws {
        let h = try Harness()
        try h.employees()
        for content in [
            "Department/1.employees.lastName", "Department/1.employees.@count", "Employee/ann.departmentName",
            "@e.selection.lastName", "Department/1.employees.directReports",
        ] {
            for kind: PropertyListValue in ["array", "tree"] {
                let error = expectError("bad-binding", status: 400) {
                    try h.make([
                        "name": "a", "kind": kind, "content": .string(content), "childrenKeyPath": "directReports",
                    ])
                }
                #expect(error?.fields["content"] == .string(content))
            }
        }
        let gathered = try h.make([
            "name": "g", "kind": "array", "content": "Department/1.employees.@distinctUnionOfArrays.directReports",
        ])
        #expect(gathered["entity"] == "Employee")
    }

    @Test func create_badDeclarations_areRefused() throws {
        let h = try Harness()
        expectError("no-such-entity", status: 404) { try h.employees(content: "Nope") }
        expectError("bad-binding", status: 400) { try h.employees(content: "Department/1..employees") }
        expectError("no-such-controller", status: 404) { try h.employees(content: "@nobody.selection.employees") }
        expectError("bad-predicate", status: 400) { try h.employees(filter: "salary >") }
        expectError("undefined-key", status: 404) { try h.employees(sort: "nope") }
        // Unknown keys are refused whatever the content holds: behind a false AND, and on empty content.
        expectError("undefined-key", status: 404) { try h.employees(filter: "salary < 0 AND nope == 1") }
        try h.employees("none", filter: "salary < 0")
        try h.employees("empty", content: "@none.selection.directReports")
        expectError("undefined-key", status: 404) {
            _ = try h.registry.setFilterPredicate(try ObjectGraph.Predicate(format: "nope == 1"), controller: "empty")
        }
        expectError("undefined-key", status: 404) {
            _ = try h.registry.setSortDescriptors(try SortDescriptor.descriptors(query: "nope"), controller: "empty")
        }
        expectError("bad-controller", status: 400) { try h.make(["name": "x", "kind": "nope", "content": "Employee"]) }
        expectError("bad-controller", status: 400) {
            try h.make(["name": "x", "content": "Employee", "editable": "yes"])
        }
        try h.employees()
        expectError("conflict", status: 409) { try h.employees() }
        expectError("no-such-controller", status: 404) { _ = try h.value("selection", of: "nobody") }
    }

    @Test func create_beyondTheRuntimeLimit_isRefusedUntilOneIsRemoved() throws {
        let h = try Harness()
        let limit = h.registry.runtimeControllerLimit
        #expect(limit == 1_000)
        for index in 0..<limit {
            try h.make(["name": .string("c\(index)"), "content": "Employee"])
        }
        #expect {
            try h.make(["name": "one-too-many", "content": "Employee"])
        } throws: { error in
            let error = error as? ObjectGraphError
            return error?.status == 503 && error?.code == "too-many-controllers" && error?.fields["limit"] == 1_000
        }
        // Declared controllers do not count against it.
        try h.registry.create(json: ["name": "declared", "kind": "array", "content": "Department"], declared: true)
        try h.registry.remove(named: "c0")
        try h.make(["name": "one-too-many", "content": "Employee"])
        #expect(h.registry.names.count == limit + 1)
    }

    /// The objects the run-time controllers hold together are bounded too, by at least twice the store's objects:
    /// a controller that would take them past it is refused as one past the count limit is; declared ones do not
    /// count, and removing one makes room.
    @Test func create_pastTheObjectsTheRuntimeControllersMayHold_isRefused() throws {
        let h = try Harness(contentLimit: 0)
        let (objects, employees) = try h.store.read { view in (view.objectCount, try view.count(of: "Employee")) }
        let fitting = 2 * objects / employees
        for index in 0..<fitting { try h.make(["name": .string("c\(index)"), "content": "Employee"]) }
        #expect {
            try h.make(["name": "one-too-many", "content": "Employee"])
        } throws: { error in
            let error = error as? ObjectGraphError
            return error?.status == 503 && error?.code == "too-many-controllers"
                && error?.fields["objectLimit"] == .integer(Int64(2 * objects))
        }
        try h.registry.create(json: ["name": "declared", "kind": "array", "content": "Employee"], declared: true)
        try h.registry.remove(named: "c0")
        try h.make(["name": "one-too-many", "content": "Employee"])
    }

    /// Removing a controller waits for a request under way on it (between the sessions around its commit): that
    /// request answers for the change it made, rather than 404, then the controller goes.
    @Test func remove_whileARequestCommitsOnIt_waitsForTheRequest() throws {
        let armed = Mutex(false)
        let removed = Mutex<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        let h = try Harness(beforeTransaction: { registry in
            guard armed.withLock({ $0 }) else { return }
            armed.withLock { $0 = false }
            Thread.detachNewThread {
                let succeeded = (try? registry.remove(named: "d")) != nil
                removed.withLock { $0 = succeeded }
                done.signal()
            }
            usleep(100_000)  // the removal has long tried by now
            #expect(removed.withLock { $0 } == nil)
        })
        try h.make(["name": "d", "content": "Department"])
        armed.withLock { $0 = true }
        let state = try h.registry.perform("add", controller: "d", body: ["object": ["name": "Ops"]])
        #expect(state["count"] == 4)
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(removed.withLock { $0 } == true)
        #expect(h.registry.names.isEmpty)
    }

    /// While a removal waits for a request under way, new requests on the controller are 404, as after it: a stream
    /// of them kept a removal waiting for up to 27 s.
    @Test func remove_waitingForARequest_refusesNewOnes() throws {
        let armed = Mutex(false)
        let release = DispatchSemaphore(value: 0)
        let removed = DispatchSemaphore(value: 0)
        let h = try Harness(beforeTransaction: { registry in
            guard armed.withLock({ $0 }) else { return }
            armed.withLock { $0 = false }
            Thread.detachNewThread {
                try? registry.remove(named: "d")
                removed.signal()
            }
            release.wait()
        })
        try h.make(["name": "d", "content": "Department"])
        armed.withLock { $0 = true }
        let first = Mutex<PropertyListValue?>(nil)
        let answered = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            first.withLock { $0 = try? h.registry.perform("add", controller: "d", body: ["object": ["name": "Ops"]]) }
            answered.signal()
        }
        // The removal has tried (and found the first request under way) long before this.
        usleep(200_000)
        let late = Mutex<(any Error)?>(nil)
        let lateAnswered = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do {
                _ = try h.registry.perform("add", controller: "d", body: ["object": ["name": "Late"]])
            } catch {
                late.withLock { $0 = error }
            }
            lateAnswered.signal()
        }
        // (Admitted, it would wait for the first request, which waits for this test.)
        let answeredAtOnce = lateAnswered.wait(timeout: .now() + 5) == .success
        release.signal()
        if !answeredAtOnce { lateAnswered.wait() }
        #expect(answeredAtOnce)
        #expect((late.withLock { $0 } as? ObjectGraphError)?.code == "no-such-controller")
        #expect(answered.wait(timeout: .now() + 10) == .success)
        #expect(first.withLock { $0 }?["count"] == 4)
        #expect(removed.wait(timeout: .now() + 10) == .success)
        #expect(h.registry.names.isEmpty)
    }

    @Test func remove_runtimeController_succeeds_declaredOrFollowed_refused() throws {
        let h = try Harness()
        try h.registry.loadDeclarations(json: [
            "controllers": [["name": "declared", "kind": "array", "content": "Department"]]
        ])
        try h.employees("master", content: "Department", sort: "name")
        try h.employees("detail", content: "@master.selection.employees")
        expectError("conflict", status: 409) { try h.registry.remove(named: "declared") }
        expectError("conflict", status: 409) { try h.registry.remove(named: "master") }
        try h.registry.remove(named: "detail")
        try h.registry.remove(named: "master")
        #expect(h.registry.names == ["declared"])
    }
}

struct SortingTests {
    func harness() throws -> Harness {
        try Harness(objects: [
            ["$id": "Department/1", "name": "D"],
            ["$id": "Employee/1", "firstName": "a", "lastName": "beta", "department": ref("Department/1")],
            ["$id": "Employee/2", "firstName": "b", "lastName": "Item 10", "department": ref("Department/1")],
            ["$id": "Employee/3", "firstName": "c", "lastName": "Alpha", "department": ref("Department/1")],
            ["$id": "Employee/4", "firstName": "d", "lastName": "item 9", "department": ref("Department/1")],
            ["$id": "Employee/5", "firstName": "e", "lastName": "Alpha", "department": ref("Department/1")],
        ])
    }

    @Test func sort_compareSelector_ordersByUnicodeScalars() throws {
        let h = try harness()
        try h.employees(sort: "lastName")
        #expect(try h.names() == ["Alpha", "Alpha", "Item 10", "beta", "item 9"])
    }

    @Test func sort_caseInsensitiveCompare_foldsCase() throws {
        let h = try harness()
        try h.employees(sort: "lastName:caseInsensitiveCompare:")
        #expect(try h.names() == ["Alpha", "Alpha", "beta", "Item 10", "item 9"])
    }

    @Test func sort_localizedStandardCompare_ordersNumbersByValue() throws {
        let h = try harness()
        try h.employees(sort: "lastName:localizedStandardCompare:")
        #expect(try h.names() == ["Alpha", "Alpha", "beta", "item 9", "Item 10"])
    }

    @Test func sort_twoKeysDescending_secondKeyBreaksTies() throws {
        let h = try harness()
        try h.employees(sort: "lastName,-firstName")
        #expect(try h.value("arrangedObjects.firstName").arrayValue?.prefix(2) == ["e", "c"])
    }

    @Test func setSortDescriptors_rearranges_preservesSelection() throws {
        let h = try harness()
        try h.employees(sort: "lastName")
        try h.select([2])
        try h.registry.setSortDescriptors(
            [SortDescriptor(key: "lastName", ascending: false, selector: .localizedStandardCompare)], controller: "e")
        #expect(try h.names() == ["Item 10", "item 9", "beta", "Alpha", "Alpha"])
        #expect(try h.selectedNames() == ["Item 10"])
        #expect(h.reported(.sortDescriptors))
        expectError("undefined-key") {
            try h.registry.setSortDescriptors([SortDescriptor(key: "nope")], controller: "e")
        }
        #expect(try h.value("sortDescriptors").arrayValue?.first?["key"] == "lastName")
    }
}

struct SelectionProxyTests {
    @Test func selection_noSelection_answersNoSelectionMarker() throws {
        let h = try Harness()
        try h.employees()
        try h.select([])
        #expect(try h.value("selection.lastName") == marker("NoSelection"))
        #expect(try h.value("selection")["lastName"] == marker("NoSelection"))
    }

    @Test func selection_oneSelected_answersItsValue() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1])
        #expect(try h.value("selection.lastName") == "Baker")
        #expect(try h.value("selection.department.name") == "Sales")
        #expect(try h.value("selection.manager") == ref("Employee/ann"))
        #expect(try h.value("selection")["salary"] == 200)
    }

    @Test func selection_manySelected_equalValues_answersTheValue() throws {
        let h = try Harness()
        try h.employees()
        try h.select([0, 1, 2])
        #expect(try h.value("selection.department.name") == "Sales")
    }

    @Test func selection_manySelected_differentValues_answersMultipleValues() throws {
        let h = try Harness()
        try h.employees()
        try h.select([0, 1])
        #expect(try h.value("selection.lastName") == marker("MultipleValues"))
    }

    /// Values differ as `isEqual:` compares them: é as one character and as e and an accent are two values.
    @Test func selection_textsDifferingInCodePoints_answersMultipleValues() throws {
        let h = try Harness()
        try h.employees()
        try h.set("lastName", of: "Employee/ann", to: "Caf\u{e9}")
        try h.set("lastName", of: "Employee/bob", to: "Cafe\u{301}")
        try h.select([0, 1])
        #expect(try h.value("selection.lastName") == marker("MultipleValues"))
        try h.set("lastName", of: "Employee/bob", to: "Caf\u{e9}")
        #expect(try h.value("selection.lastName") == "Caf\u{e9}")
    }

    @Test func selection_alwaysUsesMultipleValuesMarker_equalValues_answersMultipleValues() throws {
        let h = try Harness()
        try h.employees(options: ["alwaysUsesMultipleValuesMarker": true])
        try h.select([0, 1])
        #expect(try h.value("selection.department.name") == marker("MultipleValues"))
        try h.select([1])
        #expect(try h.value("selection.department.name") == "Sales")
    }

    /// Key-value coding goes on into a controller's own values as into an object's: a number has no keys (404, as
    /// `salary.x` on an object), an array counts, a dictionary answers its keys.
    @Test func controllerKeys_keyPathsGoOnIntoTheirValues() throws {
        let h = try Harness()
        try h.employees()
        for keyPath in ["count.x", "canAdd.x", "avoidsEmptySelection.x"] {
            expectError("undefined-key", status: 404) { _ = try h.value(keyPath) }
        }
        #expect(try h.value("sortDescriptors.@count") == 1)
        #expect(try h.value("selectionIndexes.@count") == 1)
        #expect(try h.value("edits.lastName") == .null)
        try h.registry.setPendingEdit("Zed", forKeyPath: "lastName", controller: "e")
        #expect(try h.value("edits.lastName") == "Zed")
        // An edit's key is a whole key path; a new value of an edit is reported (observers re-read it).
        try h.registry.setPendingEdit("Ann", forKeyPath: "manager.lastName", controller: "e")
        #expect(try h.value("edits.manager.lastName") == "Ann")
        h.clearReports()
        try h.registry.setPendingEdit("Zoe", forKeyPath: "lastName", controller: "e")
        #expect(h.reported(.isEditing))
    }

    @Test func selection_undefinedKey_answersNotApplicable() throws {
        let h = try Harness()
        try h.employees()
        #expect(try h.value("selection.nope") == marker("NotApplicable"))
    }
}

struct SetThroughSelectionTests {
    @Test func setSelectionValue_manySelected_setsEveryObjectInOneTransaction() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1, 2])
        let seq = h.store.seq
        let answer = try h.registry.setSelectionValue(555, forKeyPath: "salary", controller: "e")
        #expect(answer.value == 555)
        #expect(h.store.seq == seq + 1 && answer.seq == seq + 1)
        #expect(try h.json("salary", of: "Employee/bob") == 555)
        #expect(try h.json("salary", of: "Employee/cy") == 555)
        #expect(try h.json("salary", of: "Employee/ann") == 300)
    }

    /// Four clients setting one selected object's salary at once, each waiting a little after its commit (as for a
    /// journal flush): each is answered the value it set, as its own transaction left it, not what another wrote
    /// after it.
    @Test func setSelectionValue_concurrentWriters_eachAnsweredItsOwnValue() throws {
        let h = try Harness(afterTransaction: { usleep(200) })
        try h.employees()
        try h.select([1])
        let mismatches = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { writer in
            for step in 0..<50 {
                let salary = Int64(1_000 * (writer + 1) + step)
                do {
                    let answer = try h.registry.setSelectionValue(
                        .integer(salary), forKeyPath: "salary", controller: "e")
                    if answer.value != .integer(salary) {
                        mismatches.withLock { $0.append("set \(salary), answered \(answer.value)") }
                    }
                } catch {
                    mismatches.withLock { $0.append("set \(salary): \(error)") }
                }
            }
        }
        #expect(mismatches.withLock { $0 } == [])
    }

    @Test func setSelectionValue_invalidValue_changesNothing() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1, 2])
        let seq = h.store.seq
        expectError("validation-failed", status: 422) {
            try h.registry.setSelectionValue(-1, forKeyPath: "salary", controller: "e")
        }
        #expect(h.store.seq == seq)
        #expect(try h.json("salary", of: "Employee/bob") == 200)
    }

    @Test func setSelectionValue_notEditable_refused() throws {
        let h = try Harness()
        try h.employees(options: ["editable": false])
        expectError("not-editable", status: 409) {
            try h.registry.setSelectionValue(1, forKeyPath: "salary", controller: "e")
        }
        #expect(try h.value("canRemove") == false)
    }
}

struct SelectionIndexesTests {
    @Test func setSelectionIndexes_outOfRange_clipped() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1, 4, 9])
        #expect(try h.selection() == [1, 4])
    }

    @Test func setSelectionIndexes_empty_honouredAcrossRearranging() throws {
        let h = try Harness()
        try h.employees()
        try h.select([])
        try h.registry.perform("rearrangeObjects", controller: "e")
        #expect(try h.selection() == [])
        try h.set("lastName", of: "Employee/dee", to: "Aaron")
        #expect(try h.selection() == [])
    }

    @Test func setSelectedObjects_selectsThoseArranged() throws {
        let h = try Harness()
        try h.employees()
        try h.registry.setSelectedObjects([id("Employee/eve"), id("Employee/cy")], controller: "e")
        #expect(try h.selection() == [2, 4])
        // An object that does not exist is refused, and the selection stays.
        #expect(throws: ObjectGraphError.self) {
            try h.registry.setSelectedObjects([id("Employee/eve"), id("Employee/zed")], controller: "e")
        }
        #expect(try h.selection() == [2, 4])
    }

    @Test func selectNext_selectPrevious_moveAndStopAtTheEnds() throws {
        let h = try Harness()
        try h.employees()
        #expect(try h.value("canSelectPrevious") == false)
        try h.registry.perform("selectNext", controller: "e")
        #expect(try h.selection() == [1])
        // From several selected, both move from the first (NSArrayController's `selectionIndex`).
        try h.select([2, 4])
        #expect(try h.value("canSelectNext") == true)
        try h.registry.perform("selectNext", controller: "e")
        #expect(try h.selection() == [3])
        try h.select([2, 4])
        try h.registry.perform("selectPrevious", controller: "e")
        #expect(try h.selection() == [1])
        let count = Int(try #require(h.value("count").integerValue))
        try h.select([count - 1])
        #expect(try h.value("canSelectNext") == false)
        expectError("action-disabled", status: 409) { try h.registry.perform("selectNext", controller: "e") }
        try h.select([0, count - 1])
        #expect(try h.value("canSelectNext") == true)
        #expect(try h.value("canSelectPrevious") == false)
        expectError("not-found", status: 404) { try h.registry.perform("fly", controller: "e") }
    }
}

/// `add` into a relationship's content when the new object's values name the relationship's inverse.
struct AddIntoRelationshipTests {
    /// A to-many inverse (people and clubs, many to many) keeps the other members the values name; only a to-one
    /// inverse is left to the insert to set.
    @Test func add_toManyInverseNamed_keepsItsOtherMembers() throws {
        let model = try ObjectModel(
            jsonBytes: Array(
                """
                {"entities": {"Person": {"attributes": {"name": {"type": "string"}}, "relationships": {
                  "clubs": {"destination": "Club", "toMany": true, "inverse": "members"}}},
                 "Club": {"relationships": {"members": {"destination": "Person", "toMany": true, "inverse": "clubs"}}}}}
                """.utf8))
        let follower = Mutex<ControllerRegistry?>(nil)
        let store = ObjectStore(
            model: model,
            hooks: ObjectStoreHooks(capture: { record, _ in follower.withLock { $0 }?.storeDidCommit(record) }))
        try store.transaction { try $0.insertObjects([["$id": "Club/chess"], ["$id": "Club/go"]]) }
        let registry = ControllerRegistry(store: store) { body in try store.transaction(body).record }
        follower.withLock { $0 = registry }
        try registry.create(json: ["name": "chess", "kind": "array", "content": "Club/chess.members"])
        try registry.perform(
            "add", controller: "chess", body: ["object": ["name": "Ann", "clubs": [ref("Club/go")]]])
        let created = try #require(
            try registry.value(forKeyPath: "selectedObjects", controller: "chess").arrayValue?.first)
        let person = try #require(created["$ref"]?.stringValue.flatMap(ObjectID.init(reference:)))
        let clubs = try store.read { try $0.value(forKeyPath: "clubs", of: person).json }
        #expect(clubs == [ref("Club/go"), ref("Club/chess")])
    }
}

/// Content through the keys of a model with an `any` attribute and a derived to-one.
struct KeyPathContentTests {
    func registry() throws -> ControllerRegistry {
        let model = try ObjectModel(
            jsonBytes: Array(
                """
                {"entities": {"Person": {"attributes": {"name": {"type": "string"}, "tags": {"type": "any"}},
                  "relationships": {
                    "manager": {"destination": "Person", "inverse": "reports"},
                    "reports": {"destination": "Person", "toMany": true, "inverse": "manager"}},
                  "derived": {"boss": "manager"}}}}
                """.utf8))
        let store = ObjectStore(model: model)
        try store.transaction {
            try $0.insertObjects([
                ["$id": "Person/a", "name": "A", "tags": ["x", "y"]], ["$id": "Person/b", "manager": ref("Person/a")],
            ])
        }
        return ControllerRegistry(store: store) { body in try store.transaction(body).record }
    }

    /// An `any` attribute never holds a reference: content through it gives values, refused as other values are.
    @Test func arrayContentThroughAnAnyAttribute_refused() throws {
        let registry = try registry()
        for content in ["Person/a.tags", "Person/a.reports.tags"] {
            expectError("bad-binding", status: 400) {
                try registry.create(json: ["name": "t", "kind": "array", "content": .string(content)])
            }
        }
    }

    /// Through a derived to-one the content is read, but nothing can be set there: `remove` is disabled (it would
    /// set the key path to null), as `add` is.
    @Test func objectContentThroughADerivedToOne_cannotAddOrRemove() throws {
        let registry = try registry()
        let state = try registry.create(json: ["name": "o", "kind": "object", "content": "Person/b.boss"])
        #expect(state["contentObject"] == ref("Person/a"))
        #expect(state["canRemove"] == false)
        #expect(state["canAdd"] == false)
    }
}

/// Objects that come into or leave a sorted content are placed one by one (a binary search each) rather than by
/// sorting the whole content again: the arrangement must be the one a full re-arrangement makes.
struct ContentChangeArrangementTests {
    /// 200 random commits (inserts, deletes, both, with a sort key of a staying object changed now and then), on
    /// keys with many equals; after each, the arrangement equals that of a controller made afresh (a full sort of
    /// the content), and with `preservesSelection` the selected objects that are still arranged stay selected. In
    /// a to-many content, objects come in at any index: among equal keys their content order places them.
    @Test(
        arguments: [
            ("Employee", "salary", nil, UInt64(1)), ("Employee", "salary,-lastName", "salary > 150", 2),
            ("Employee", "department.name,salary", nil, 3), ("Employee", "lastName", "salary < 350", 4),
            ("Department/1.employees", "salary", nil, 5), ("Department/1.employees", "lastName", "salary > 150", 6),
        ] as [(String, String, String?, UInt64)])
    func placedOneByOne_asAFullRearrangement(content: String, sort: String, filter: String?, seed: UInt64) throws {
        let h = try Harness()
        let toMany = content != "Employee"
        try h.employees(content: content, sort: sort, filter: filter)
        var random = SeededGenerator(state: seed)
        let salaries: [PropertyListValue] = [100, 200, 300, 400]
        let names: [PropertyListValue] = ["Archer", "Baker", "Cole"]
        var made = 0
        for step in 0..<200 {
            let employees = try h.store.read { view throws(ObjectGraphError) in try view.objects(of: "Employee") }
            // 5: only a sort or filter key changes, which (automaticallyRearrangesObjects off) leaves the arrangement
            // as it was until the next content change re-arranges it whole.
            let kind = Int.random(in: 0..<6, using: &random)
            var inserts = kind == 2 || kind == 5 ? 0 : Int.random(in: 1...3, using: &random)
            let deletes = kind < 2 || kind == 5 ? 0 : min(Int.random(in: 1...2, using: &random), employees.count - 2)
            if kind == 4 { inserts = 0 }
            let doomed = Array(employees.shuffled(using: &random).prefix(deletes))
            let changed =
                kind == 3 || kind == 5 ? employees.filter { !doomed.contains($0) }.randomElement(using: &random) : nil
            var values: [[String: PropertyListValue]] = []
            for _ in 0..<inserts {
                made += 1
                values.append([
                    "firstName": .string("N\(made)"), "lastName": names.randomElement(using: &random)!,
                    "salary": salaries.randomElement(using: &random)!,
                    "department": ref("Department/\(toMany ? 2 : Int.random(in: 1...3, using: &random))"),
                ])
            }
            let members = try h.store.read { view throws(ObjectGraphError) in
                try view.value(forKeyPath: "employees", of: id("Department/1")).json.arrayValue ?? []
            }
            let staying = members.filter { member in !doomed.contains { ref($0.description) == member } }.count
            let indexes = values.indices.map { Int.random(in: 0...(staying + $0), using: &random) }
            let salary = salaries.randomElement(using: &random)!
            if Bool.random(using: &random) {
                let count = try h.value("arrangedObjects.@count").integerValue ?? 0
                try h.select(count == 0 ? [] : [Int.random(in: 0..<Int(count), using: &random)])
            }
            let selectedBefore = try h.value("selectedObjects")
            try h.store.transaction { transaction in
                for object in doomed { try transaction.delete(object) }
                for (object, index) in zip(values, indexes) {
                    let inserted = try transaction.insert("Employee", values: object)
                    // Into the to-many content at a random place (it leaves Department/2 on the way).
                    if toMany {
                        try transaction.insert(inserted, at: index, intoKeyPath: "employees", of: id("Department/1"))
                    }
                }
                if let changed { try transaction.setValue(salary, forKeyPath: "salary", of: changed) }
                // Now and then the to-many's order changes too: the content is then arranged whole.
                if toMany, kind == 4, staying > 1 {
                    let moved = try transaction.remove(at: 0, fromKeyPath: "employees", of: id("Department/1"))
                    try transaction.insert(moved, at: staying - 1, intoKeyPath: "employees", of: id("Department/1"))
                }
            }
            let arranged = try h.value("arrangedObjects")
            // After a key change alone, the arrangement waits for the next content change (or rearrangeObjects).
            if kind == 5 { continue }
            try h.employees("fresh", content: content, sort: sort, filter: filter)
            #expect(arranged == (try h.value("arrangedObjects", of: "fresh")), "seed \(seed), step \(step)")
            try h.registry.remove(named: "fresh")
            let selected = try h.value("selectedObjects").arrayValue ?? []
            for object in selectedBefore.arrayValue ?? [] where (arranged.arrayValue ?? []).contains(object) {
                #expect(selected.contains(object), "seed \(seed), step \(step)")
            }
        }
    }
}

/// Reports after a commit that changes the content too: the selected object may have changed in place in it.
struct ContentChangeReportTests {
    /// One commit brings an object into an unsorted controller's content and changes the selected object in place
    /// (its `directReports`, by the inverse of the new object's `manager`): the selection stays at its index, and is
    /// reported.
    @Test func contentChangeAndSelectedObjectChangedInPlace_reportsSelection() throws {
        let h = try Harness()
        try h.employees(sort: "")
        try h.select([1])  // Bob
        #expect(try h.value("selection.directReports.@count") == 1)
        h.clearReports()
        try h.store.transaction { transaction in
            _ = try transaction.insertObjects([
                [
                    "$id": "Employee/zed", "firstName": "Zed", "lastName": "Zane", "manager": ref("Employee/bob"),
                    "department": ref("Department/3"),
                ]
            ])
        }
        #expect(try h.value("selection.directReports.@count") == 2)
        #expect(try h.selection() == [1])
        #expect(h.reported(.arrangedObjects))
        #expect(h.reported(.selection))
    }

    /// The same sorted: a sort key of the selected object changes in place (Baker to Bell, still second) in the
    /// commit that adds an object at the end, which re-arranges the whole content.
    @Test func sortedContentChangeAndSelectedSortKeyChangedInPlace_reportsSelection() throws {
        let h = try Harness()
        try h.employees(options: ["automaticallyRearrangesObjects": true])
        try h.select([1])  // Baker
        h.clearReports()
        try h.store.transaction { transaction in
            try transaction.setValue("Bell", forKeyPath: "lastName", of: ObjectID(reference: "Employee/bob")!)
            _ = try transaction.insertObjects([
                ["$id": "Employee/zed", "firstName": "Zed", "lastName": "Zane", "department": ref("Department/3")]
            ])
        }
        #expect(try h.value("selection.lastName") == "Bell")
        #expect(try h.selection() == [1])
        #expect(h.reported(.selection))
    }
}
