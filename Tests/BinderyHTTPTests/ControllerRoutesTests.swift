import Bindery
import Foundation
import HTTPTestSupport
import ObjectGraph
import PropertyList
import Synchronization
import Testing

/// `/controllers` through a real server with the fixture's controllers.json: `departments` (sorted by name),
/// `employees` (`@departments.selection.employees`, by last name), `employee` (`@employees.selection`), `org` (tree).
struct ControllerRoutesTests {
    func lastNames(_ client: TestHTTPClient, _ controller: String = "employees") throws -> [String] {
        try client.request("GET", "/controllers/\(controller)/arrangedObjects/lastName").json?.arrayValue?
            .compactMap(\.stringValue) ?? []
    }

    /// Two clients setting a controller's keys at once: each `PUT` answers what it set, as its own change left it
    /// (a read after it could show the other client's), with that change's store seq.
    @Test func concurrentControllerPuts_eachAnswerWhatTheySet() throws {
        try withService { client in
            let created = try client.request(
                "POST", "/controllers", json: #"{"name": "race", "kind": "array", "content": "Employee"}"#)
            #expect(created.status == 201)
            let bodies: [(path: String, values: [String])] = [
                ("selectionIndexes", ["[0]", "[1]"]),
                ("sortDescriptors", [#"[{"key": "lastName"}]"#, #"[{"key": "salary", "ascending": false}]"#]),
                ("filterPredicate", [#""salary > 1""#, #""salary > 2""#]),
            ]
            let mismatches = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { writer in
                for step in 0..<60 {
                    let (path, values) = bodies[step % bodies.count]
                    let sent = values[writer]
                    do {
                        let answer = try client.request("PUT", "/controllers/race/\(path)", json: sent)
                        let expected = try PropertyListValue(jsonBytes: Array(sent.utf8))
                        let matches =
                            path == "sortDescriptors"
                            ? answer.json?.arrayValue?.first?["key"] == expected.arrayValue?.first?["key"]
                            : answer.json == expected
                        if !matches { mismatches.withLock { $0.append("\(path) \(sent) -> \(answer.text)") } }
                    } catch {
                        mismatches.withLock { $0.append("\(path) \(sent): \(error)") }
                    }
                }
            }
            #expect(mismatches.withLock { $0 } == [])
        }
    }

    /// A controller action answers its state with the store seq that state reflects: while another client inserts
    /// employees, the `count` of each `add` answer is the number of employees at its `X-Store-Seq` (each new
    /// employee's `ETag` is the seq that created it).
    @Test func controllerActionsAnswerTheSeqTheirStateReflects() throws {
        try withService { client in
            let created = try client.request(
                "POST", "/controllers", json: #"{"name": "race", "kind": "array", "content": "Employee"}"#)
            #expect(created.status == 201)
            let initial = try #require(client.request("GET", "/objects/Employee?limit=0").json?["count"]?.integerValue)
            let answers = Mutex<[(count: Int64, seq: Int64)]>([])
            let failures = Mutex<[String]>([])
            let employee = #"{"firstName": "W", "lastName": "W", "department": {"$ref": "Department/1"}}"#
            DispatchQueue.concurrentPerform(iterations: 2) { writer in
                for _ in 0..<50 {
                    do {
                        if writer == 0 {
                            let answer = try client.request(
                                "POST", "/controllers/race/add", json: #"{"object": \#(employee)}"#)
                            guard let count = answer.json?["count"]?.integerValue,
                                let seq = answer.header("X-Store-Seq").flatMap({ Int64($0) })
                            else { throw TestHTTPError(description: answer.text) }
                            answers.withLock { $0.append((count, seq)) }
                        } else {
                            let answer = try client.request("POST", "/objects/Employee", json: employee)
                            guard answer.status == 201 else { throw TestHTTPError(description: answer.text) }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            #expect(failures.withLock { $0 } == [])
            let added = try #require(
                client.request("GET", "/objects/Employee?filter=firstName%20==%20'W'&keys=firstName").json?["objects"]?
                    .arrayValue)
            let seqs = try added.map { object in
                let id = try #require(object["$id"]?.stringValue)
                let etag = try client.request("GET", "/objects/\(id)").header("ETag") ?? ""
                return try #require(Int64(etag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))))
            }
            #expect(seqs.count == 100)
            let mismatches = answers.withLock { $0 }.filter { answer in
                answer.count != initial + Int64(seqs.filter { $0 <= answer.seq }.count)
            }
            #expect(mismatches.isEmpty, "\(mismatches)")
        }
    }

    @Test func masterSelectionChange_commitsDetailEditsFirst_orRefuses() throws {
        try withService { client in
            // The first employee by last name in Engineering is selected in `employees`.
            let selected = try client.request("GET", "/controllers/employees/selection/lastName").json
            _ = try client.request("PUT", "/controllers/employees/edits/salary", json: "-5")
            let refused = try client.request("PUT", "/controllers/departments/selectionIndexes", json: "[1]")
            #expect(refused.status == 422)
            #expect(try client.request("GET", "/controllers/departments").json?["selectionIndexes"] == [0])
            #expect(try client.request("GET", "/controllers/employees/edits").json == ["salary": -5])
            #expect(try client.request("GET", "/controllers/employees/edits/salary").json == -5)
            let none = try client.request("GET", "/controllers/employees/edits/lastName")
            #expect(none.status == 404)
            #expect(none.json?["error"]?["keyPath"] == "lastName")
            _ = try client.request("PUT", "/controllers/employees/edits/salary", json: "99")
            let moved = try client.request("PUT", "/controllers/departments/selectionIndexes", json: "[1]")
            #expect(moved.status == 200)
            #expect(try client.request("GET", "/controllers/employees/isEditing").json == false)
            let byName = try client.request(
                "GET", "/objects/Employee?filter=salary%20%3D%3D%2099&keys=lastName")
            #expect(byName.json?["objects"]?.arrayValue?.map { $0["lastName"] } == [selected])
        }
    }

    @Test func declaredControllers_listedWithState() throws {
        try withService { client in
            let list = try client.request("GET", "/controllers")
            #expect(list.status == 200)
            let names = list.json?["controllers"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
            #expect(names == ["departments", "employees", "employee", "org"])
            let state = try client.request("GET", "/controllers/employees")
            #expect(state.json?["kind"] == "array")
            #expect(state.json?["content"] == "@departments.selection.employees")
            #expect(state.json?["selectionIndexes"] == [0])
            #expect(state.json?["count"] == 11)
            #expect(state.json?["canRemove"] == true)
            #expect(state.json?["canSelectNext"] == true)
            #expect(state.json?["canSelectPrevious"] == false)
            #expect(state.json?["isEditing"] == false)
            #expect(state.json?["sortDescriptors"]?.arrayValue?.count == 2)
            #expect(state.header("X-Store-Seq") != nil)
            #expect(try client.request("GET", "/controllers/org").json?["selectionIndexPaths"] == [[0]])
            let missing = try client.request("GET", "/controllers/nope")
            #expect(missing.status == 404)
            #expect(missing.errorCode == "no-such-controller")
        }
    }

    @Test func create_contentAtAMissingObject_404NoSuchObject_declaredOnesStayEmpty() throws {
        try withService { client in
            for (kind, content) in [("object", "Employee/999"), ("array", "Department/999.employees")] {
                let refused = try client.request(
                    "POST", "/controllers", json: #"{"name": "ghost", "kind": "\#(kind)", "content": "\#(content)"}"#)
                #expect(refused.status == 404, "\(content)")
                #expect(refused.errorCode == "no-such-object")
                #expect(refused.json?["error"]?["object"] == .string(String(content.prefix(while: { $0 != "." }))))
            }
            #expect(try client.request("GET", "/controllers/ghost").status == 404)
            // A controller whose object goes later stays, empty, and follows the id when it comes back.
            let created = try client.request(
                "POST", "/controllers", json: #"{"name": "eleven", "kind": "object", "content": "Employee/11"}"#)
            #expect(created.status == 201)
            #expect(try client.request("DELETE", "/objects/Employee/11").status == 204)
            #expect(try client.request("GET", "/controllers/eleven").json?["count"] == 0)
        }
    }

    @Test func masterDetail_followsSelectionThroughHTTP() throws {
        try withService { client in
            #expect(try lastNames(client, "departments") == [])
            #expect(
                try client.request("GET", "/controllers/departments/arrangedObjects/name").json
                    == ["Engineering", "Finance", "Marketing", "Research", "Sales"])
            #expect(try lastNames(client).first == "Allen")
            let put = try client.request("PUT", "/controllers/departments/selectionIndexes", json: "[4]")
            #expect(put.status == 200)
            #expect(put.json == [4])
            #expect(
                try lastNames(client) == [
                    "Atkinson", "Hertzfeld", "Hoffman", "Jobs", "Kare", "Markkula", "Raskin", "Tribble",
                ])
            #expect(try client.request("GET", "/controllers/employee/selection/firstName").json == "Bill")
            let objects = try client.request("GET", "/controllers/employees/selectedObjects")
            #expect(objects.json?.arrayValue?.first?["$id"] == "Employee/18")
            // A reference to no object is 404 and leaves the selection; one that is not arranged is left out.
            let missing = try client.request(
                "PUT", "/controllers/employees/selectedObjects", json: #"[{"$ref": "Employee/99999"}]"#)
            #expect(missing.errorCode == "no-such-object")
            #expect(try client.request("GET", "/controllers/employees/selectedObjects").json == objects.json)
            let extra = try client.request(
                "PUT", "/controllers/employees/selectedObjects", json: #"[{"$ref": "Employee/1", "x": 1}]"#)
            #expect(extra.errorCode == "type-mismatch")
            #expect(try client.request("GET", "/controllers/employees/selectedObjects").json == objects.json)
            let other = try client.request(
                "PUT", "/controllers/employees/selectedObjects",
                json: #"[{"$ref": "Employee/1"}, {"$ref": "Employee/18"}]"#)
            #expect(other.json?.arrayValue?.map { $0["$id"] } == ["Employee/18"])
            let arranged = try client.request("GET", "/controllers/employees/arrangedObjects?offset=1&limit=2")
            #expect(arranged.json?.arrayValue?.count == 2)
            #expect(arranged.json?.arrayValue?.first?["lastName"] == "Hertzfeld")
            #expect(arranged.header("X-Total-Count") == "8")
            #expect(try client.request("GET", "/controllers/employees/arrangedObjects/@count").json == 8)
            // A tree pages its roots, each with its subtree and its own index path.
            let roots = try #require(try client.request("GET", "/controllers/org/arrangedObjects").json?.arrayValue)
            #expect(roots.count > 2)
            let page = try client.request("GET", "/controllers/org/arrangedObjects?offset=1&limit=1")
            #expect(page.json == [roots[1]])
            #expect(page.header("X-Total-Count") == String(roots.count))
            #expect(try client.request("GET", "/controllers/org/arrangedObjects?offset=99").json == [])
        }
    }

    @Test func selectionProxy_markersAndValues() throws {
        try withService { client in
            _ = try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[0, 1]")
            let multiple = try client.request("GET", "/controllers/employees/selection/lastName")
            #expect(multiple.json == ["$marker": "MultipleValues"])
            #expect(try client.request("GET", "/controllers/employees/selection/department/name").json == "Engineering")
            #expect(
                try client.request("GET", "/controllers/employees/selection/nope").json == ["$marker": "NotApplicable"])
            let whole = try client.request("GET", "/controllers/employees/selection")
            #expect(whole.json?["departmentName"] == "Engineering")
            _ = try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[]")
            #expect(
                try client.request("GET", "/controllers/employees/selection/lastName").json
                    == ["$marker": "NoSelection"])
            // Only out-of-range indexes asked for: not an empty selection; avoidsEmptySelection takes the last object.
            let count = try client.request("GET", "/controllers/employees").json?["count"]?.integerValue ?? -1
            #expect(
                try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[99]").json == [
                    .integer(count - 1)
                ])
            let bad = try client.request("PUT", "/controllers/employees/selectionIndexes", json: "{\"a\": 1}")
            #expect(bad.status == 422)
        }
    }

    /// NSArrayController's `selectionIndex`: the first selected index (null for none, Cocoa's NSNotFound), read and
    /// set as one index; a tree has index paths instead.
    @Test func selectionIndex_firstSelectedIndex_readAndSet() throws {
        try withService { client in
            _ = try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[2, 3]")
            #expect(try client.request("GET", "/controllers/employees/selectionIndex").json == 2)
            let set = try client.request("PUT", "/controllers/employees/selectionIndex", json: "1")
            #expect(set.status == 200)
            #expect(set.json == 1)
            #expect(try client.request("GET", "/controllers/employees/selectionIndexes").json == [1])
            #expect(try client.request("PUT", "/controllers/employees/selectionIndex", json: "null").json == .null)
            #expect(try client.request("GET", "/controllers/employees/selectionIndexes").json == [])
            #expect(try client.request("GET", "/controllers/employees/selectionIndex").json == .null)
            for bad in ["-1", "\"1\"", "[1]", "1.5"] {
                let refused = try client.request("PUT", "/controllers/employees/selectionIndex", json: bad)
                #expect(refused.status == 422, "\(bad)")
                #expect(refused.errorCode == "type-mismatch", "\(bad)")
            }
            #expect(try client.request("GET", "/controllers/employees/selectionIndexes").json == [])
            #expect(try client.request("GET", "/controllers/org/selectionIndex").status == 404)
            // Its refusals name the key the client wrote.
            let tree = try client.request("PUT", "/controllers/org/selectionIndex", json: "0")
            #expect(tree.status == 404)
            #expect(tree.json?["error"]?["keyPath"] == "selectionIndex")
            _ = try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[0, 1]")
            let object = try client.request("PUT", "/controllers/employee/selectionIndex", json: "1")
            #expect(object.status == 422)
            #expect(object.json?["error"]?["keyPath"] == "selectionIndex")
        }
    }

    /// An object controller's state shows `sortDescriptors` `[]` and `filterPredicate` null: a client writing back
    /// what it read changes nothing (200, as read); another value is 422, not a key that does not exist.
    @Test func objectController_sortAndFilter_writtenBackUnchanged_otherValuesRefused() throws {
        try withService { client in
            for (key, same, other) in [
                ("sortDescriptors", "[]", #"[{"key": "lastName"}]"#), ("filterPredicate", "null", #""salary > 0""#),
            ] {
                let read = try client.request("GET", "/controllers/employee/\(key)")
                #expect(read.status == 200)
                let written = try client.request("PUT", "/controllers/employee/\(key)", json: same)
                #expect(written.status == 200, "\(key): \(written.text)")
                #expect(written.json == read.json)
                let refused = try client.request("PUT", "/controllers/employee/\(key)", json: other)
                #expect(refused.status == 422, "\(key): \(refused.text)")
                #expect(refused.errorCode == "validation-failed")
                #expect(refused.json?["error"]?["keyPath"] == .string(key))
                #expect(try client.request("GET", "/controllers/employee/\(key)").json == read.json)
            }
        }
    }

    @Test func setThroughSelection_everySelectedObject_oneChange() throws {
        try withService { client in
            _ = try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[0, 1]")
            let before = Int(try client.request("GET", "/healthz").header("X-Store-Seq") ?? "") ?? -1
            let put = try client.request("PUT", "/controllers/employees/selection/salary", json: "120000")
            #expect(put.status == 200)
            #expect(put.json == 120000)
            #expect(Int(put.header("X-Store-Seq") ?? "") == before + 1)
            #expect(try client.request("GET", "/objects/Employee/9/salary").json == 120000)
            #expect(try client.request("GET", "/objects/Employee/10/salary").json == 120000)
            let invalid = try client.request("PUT", "/controllers/employees/selection/salary", json: "-5")
            #expect(invalid.status == 422)
            #expect(try client.request("GET", "/objects/Employee/9/salary").json == 120000)
        }
    }

    @Test func contentKeyPathsMustNameKeysTheObjectsHave() throws {
        try withService { client in
            for (content, status) in [
                ("Department/1.nope", 404), ("@departments.selection.nope", 404),
                ("@departments.selection.employees.nope", 404), ("Department/1.employees", 201),
                ("@departments.selection.employees", 201),
            ] {
                let name = "c\(status)\(content.count)"
                let answer = try client.request(
                    "POST", "/controllers", json: #"{"name": "\#(name)", "kind": "array", "content": "\#(content)"}"#)
                #expect(answer.status == status, "\(content)")
                if status == 404 { #expect(answer.json?["error"]?["code"] == "undefined-key") }
            }
        }
    }

    @Test func runtimeControllers_createAndDelete_declaredRefused() throws {
        try withService { client in
            let created = try client.request(
                "POST", "/controllers",
                json: #"{"name": "rich", "kind": "array", "content": "Employee", "filterPredicate": "salary > 180000","#
                    + #" "sortDescriptors": [{"key": "salary", "ascending": false}]}"#)
            #expect(created.status == 201)
            #expect(created.header("Location") == "/controllers/rich")
            #expect(created.json?["count"] == 2)
            #expect(created.json?["avoidsEmptySelection"] == true)
            #expect(try client.request("GET", "/controllers/rich/arrangedObjects/salary").json == [212000, 189000])
            let duplicate = try client.request(
                "POST", "/controllers", json: #"{"name": "rich", "kind": "array", "content": "Employee"}"#)
            #expect(duplicate.status == 409)
            let badOption = try client.request(
                "POST", "/controllers", json: #"{"name": "x", "kind": "array", "content": "Employee", "editable": 1}"#)
            #expect(badOption.status == 400)
            #expect(badOption.errorCode == "bad-controller")
            let badPredicate = try client.request(
                "POST", "/controllers",
                json: #"{"name": "x", "kind": "array", "content": "Employee", "filterPredicate": "a >"}"#)
            #expect(badPredicate.errorCode == "bad-predicate")
            #expect(try client.request("DELETE", "/controllers/rich").status == 204)
            #expect(try client.request("GET", "/controllers/rich").status == 404)
            let declared = try client.request("DELETE", "/controllers/org")
            #expect(declared.status == 409)
            #expect(declared.errorCode == "conflict")
        }
    }

    /// A controller a client left behind (a closed page) goes after its `idleTimeout`, and leaves the responder chain:
    /// listing the controllers does not count as naming one.
    @Test func runtimeController_idleTimeout_removedWhenNobodyNamesIt() throws {
        try withService { client in
            let created = try client.request(
                "POST", "/controllers",
                json: #"{"name": "brief", "kind": "array", "content": "Employee", "idleTimeout": 0.3}"#)
            #expect(created.status == 201)
            #expect(created.json?["idleTimeout"] == 0.3)
            #expect(try client.request("GET", "/actions", headers: ["X-First-Responder": "brief"]).status == 200)
            let deadline = Date().addingTimeInterval(5)
            var listed = true
            while listed && Date() < deadline {
                usleep(100_000)
                let names = try client.request("GET", "/controllers").json?["controllers"]?.arrayValue ?? []
                listed = names.contains { $0["name"] == "brief" }
            }
            #expect(!listed)
            #expect(try client.request("GET", "/controllers/brief").errorCode == "no-such-controller")
            let action = try client.request("POST", "/actions/add", headers: ["X-First-Responder": "brief"], json: "{}")
            #expect(action.errorCode == "no-such-controller")
            let listing = try client.request("GET", "/actions", headers: ["X-First-Responder": "brief"])
            #expect(listing.errorCode == "no-such-controller")
        }
    }

    @Test func sortAndFilter_putAndRead() throws {
        try withService { client in
            let sort = try client.request(
                "PUT", "/controllers/employees/sortDescriptors",
                json: #"[{"key": "salary", "ascending": false, "selector": "compare:"}]"#)
            #expect(sort.status == 200)
            #expect(try lastNames(client).first == "Hopper")
            let filter = try client.request("PUT", "/controllers/employees/filterPredicate", json: #""active == NO""#)
            #expect(filter.json == "active == FALSE")
            #expect(try lastNames(client) == ["Dijkstra"])
            let bad = try client.request("PUT", "/controllers/employees/filterPredicate", json: #""salary >""#)
            #expect(bad.status == 400)
            #expect(bad.errorCode == "bad-predicate")
            let badSelector = try client.request(
                "PUT", "/controllers/employees/sortDescriptors", json: #"[{"key": "salary", "selector": "nope:"}]"#)
            #expect(badSelector.status == 422)
            #expect(badSelector.errorCode == "type-mismatch")
            // A malformed key path in a descriptor is unparsable input.
            let badKey = try client.request(
                "PUT", "/controllers/employees/sortDescriptors", json: #"[{"key": "salary..x"}]"#)
            #expect(badKey.status == 400)
            #expect(badKey.errorCode == "bad-key-path")
            #expect(try client.request("PUT", "/controllers/employees/filterPredicate", json: "null").json == .null)
            #expect(try lastNames(client).count == 11)
        }
    }

    /// `?index=` places an insertion made without a body (an entity whose attributes all have defaults).
    @Test func insert_withoutBody_takesTheQueryIndex() throws {
        let model = #"{"entities": {"Note": {"attributes": {"text": {"type": "string", "default": "new"}}}}}"#
        let data = #"{"objects": [{"$id": "Note/a", "text": "a"}, {"$id": "Note/b", "text": "b"}]}"#
        try withFixture(model: model, data: data) { fixture in
            let document = try Document(fixtureDirectory: fixture)
            try withService(document: document) { client in
                let create =
                    #"{"name": "notes", "kind": "array", "content": "Note", "sortDescriptors": [{"key": "text"}]}"#
                let created = try client.request("POST", "/controllers", json: create)
                #expect(created.status == 201)
                #expect(try client.request("POST", "/controllers/notes/insert?index=1").status == 200)
                #expect(try client.request("GET", "/controllers/notes/arrangedObjects/text").json == ["a", "new", "b"])
            }
        }
    }

    @Test func actions_addInsertRemove_andRefusals() throws {
        try withService { client in
            let removeRefused = try client.request("POST", "/controllers/employees/remove")
            #expect(removeRefused.status == 422)
            #expect(removeRefused.errorCode == "cardinality")
            let insert = try client.request(
                "POST", "/controllers/employees/insert",
                json: #"{"object": {"firstName": "Zed", "lastName": "Zulu"}}"#)
            #expect(insert.status == 200)
            #expect(try lastNames(client).first == "Zulu")
            #expect(
                try client.request("GET", "/controllers/employees/selection/department").json == [
                    "$ref": "Department/1"
                ])
            _ = try client.request("POST", "/controllers/employees/rearrangeObjects")
            #expect(try lastNames(client).last == "Zulu")
            // The index may come in the query, as for the object routes.
            let second = #"{"object": {"firstName": "Yan", "lastName": "Young"}}"#
            #expect(try client.request("POST", "/controllers/employees/insert?index=1", json: second).status == 200)
            #expect(try lastNames(client)[1] == "Young")
            for query in ["index=-1", "index=x"] {
                #expect(
                    try client.request("POST", "/controllers/employees/insert?\(query)", json: second).status == 400)
            }
            let twice = #"{"index": 2, "object": {"firstName": "Yan", "lastName": "Young"}}"#
            #expect(try client.request("POST", "/controllers/employees/insert?index=1", json: twice).status == 400)
            let add = try client.request(
                "POST", "/controllers/departments/add", json: #"{"object": {"name": "Ops"}}"#)
            #expect(add.json?["selectionIndexes"] == [3])
            #expect(try lastNames(client).isEmpty)
            let remove = try client.request("POST", "/controllers/departments/remove")
            #expect(remove.status == 200)
            #expect(try client.request("GET", "/controllers/departments/arrangedObjects/@count").json == 5)
            #expect(try client.request("GET", "/controllers/departments/selection/name").json == "Research")
            // No such action, and no such key either: an action it does not have (404, listing those it has).
            let fly = try client.request("POST", "/controllers/employees/fly")
            #expect(fly.status == 404 && fly.errorCode == "not-found")
            #expect(fly.json?["error"]?["allowed"]?.arrayValue?.contains("add") == true)
            // Nor any other write to a word that is not a key: there is nothing there, as a GET says.
            for method in ["PUT", "DELETE"] {
                #expect(try client.request(method, "/controllers/employees/fly").errorCode == "undefined-key")
            }
            // No such action, but a key of the controller, which only GET reads.
            for key in ["arrangedObjects", "selectedObjects", "canAdd"] {
                let post = try client.request("POST", "/controllers/employees/\(key)")
                #expect(post.status == 405, "\(key)")
                #expect(post.header("Allow")?.hasPrefix("GET, ") == true, "\(key)")
                #expect(post.header("Allow")?.contains("POST") == false, "\(key)")
            }
            #expect(try client.request("POST", "/controllers/nobody/add").errorCode == "no-such-controller")
            for method in ["PUT", "POST", "PATCH"] {  // the controller's own path, which takes neither
                #expect(try client.request(method, "/controllers/nobody").errorCode == "no-such-controller")
            }
            #expect(try client.request("PUT", "/controllers/employees").status == 405)
            // An action it has, with another method: the path is the action's, which only POST sends.
            for method in ["PUT", "DELETE", "PATCH", "GET"] {
                let wrong = try client.request(method, "/controllers/employees/add")
                #expect(wrong.status == 405 && wrong.header("Allow") == "POST, OPTIONS", "\(method)")
            }
            #expect(try client.request("PUT", "/controllers/employee/insert").errorCode == "undefined-key")
            // Another kind's action is neither a key nor an action of this one: GET and HEAD say so too (not 405).
            #expect(try client.request("GET", "/controllers/employees/addChild").errorCode == "undefined-key")
            #expect(try client.request("HEAD", "/controllers/employees/addChild").status == 404)
            // An action of another kind of controller: 404, listing what this one has.
            let otherKind = try client.request("POST", "/controllers/employee/insert")
            #expect(otherKind.status == 404)
            let allowed = otherKind.json?["error"]?["allowed"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(allowed.contains("add") && !allowed.contains("insert") && !allowed.contains("selectNext"))
            _ = try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[]")
            #expect(try client.request("POST", "/controllers/employees/selectNext").errorCode == "action-disabled")
        }
    }

    /// Values naming the content relationship's inverse (the department of a department's employees) are the
    /// insert's to set: the department named again, or another, gives an object in the content's relationship.
    @Test func addWithTheContentsInverseNamed_insertsIntoTheContent() throws {
        try withService { client in
            for named in ["Department/1", "Department/2"] {
                let add = try client.request(
                    "POST", "/controllers/employees/add",
                    json: #"{"object": {"firstName": "Ada", "lastName": "Byron", "department": {"$ref": "\#(named)"}}}"#
                )
                #expect(add.status == 200, "\(named): \(add.text)")
                #expect(
                    try client.request("GET", "/controllers/employees/selection/department").json == [
                        "$ref": "Department/1"
                    ])
            }
            #expect(try lastNames(client).filter { $0 == "Byron" }.count == 2)
        }
    }

    @Test func aDeeplyNestedPredicateIsRefusedAndTheServerLivesOn() throws {
        try withService { client in
            let deep = String(repeating: "(", count: 50_000) + "salary > 1" + String(repeating: ")", count: 50_000)
            let body = PropertyListValue.string(deep).jsonBytes()
            let answer = try client.request("PUT", "/controllers/employees/filterPredicate", body: body)
            #expect(answer.status == 400)
            #expect(answer.json?["error"]?["code"] == "bad-predicate")
            #expect(try client.request("GET", "/healthz").status == 200)
            #expect(try client.request("GET", "/controllers/employees/filterPredicate").json == .null)
        }
    }

    /// Controllers learn of a commit under the store's lock, with it: a request between the commit and its delivery
    /// to commit observers (which happens later, outside the lock) never finds a controller holding a deleted object.
    @Test func controllersKnowOfACommitBeforeItsObserversAreTold() throws {
        let document = try Document(fixtureDirectory: packageRoot + "/Fixtures/employees")
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let leaf = ObjectID(entity: "Employee", id: "7")
        document.addCommitObserver { record in
            if record.deleted.contains(leaf) {
                held.signal()
                _ = release.wait(timeout: .now() + 10)
            }
        }
        try withService(document: document) { client in
            let before = try client.request("GET", "/controllers/org/arrangedObjects")
            #expect(before.text.contains("Employee/7"))
            let deleted = DispatchSemaphore(value: 0)
            // Not over HTTP: the deleting thread is held in delivery, and must not be one of the server's two.
            Thread.detachNewThread {
                _ = try? document.transaction { try $0.delete(leaf) }
                deleted.signal()
            }
            #expect(held.wait(timeout: .now() + 10) == .success)
            let during = try client.request("GET", "/controllers/org/arrangedObjects")
            #expect(during.status == 200, "\(during.text)")
            #expect(!during.text.contains("Employee/7"))
            release.signal()
            #expect(deleted.wait(timeout: .now() + 10) == .success)
        }
    }

    /// Removing a tree node whose children then become roots shifts every index path: the neighbour selected is
    /// found by object (the sibling after, else before, else the parent), not by the old index path.
    @Test func aTreeRemovalThatMovesNodesSelectsTheRemovedNodesSibling() throws {
        try withService { client in
            // Liskov (reports to Kay, with Thompson) has two reports, who become roots when she is deleted.
            let selected = try client.request("PUT", "/controllers/org/selectionIndexPaths", json: "[[1, 1, 0]]")
            #expect(selected.status == 200)
            #expect(try client.request("GET", "/controllers/org/selection/lastName").json == "Liskov")
            #expect(try client.request("POST", "/controllers/org/remove").status == 200)
            #expect(try client.request("GET", "/controllers/org/selection/lastName").json == "Thompson")
            #expect(try client.request("GET", "/controllers/org/selection/manager.lastName").json == "Kay")
        }
    }

    /// A tree's `countKeyPath` and `leafKeyPath` must be key paths of its entity; with a `leafKeyPath`, its value says
    /// whether a node is a leaf (NSTreeNode's `isLeaf`), also for a node that has no children.
    @Test func treeCountAndLeafKeyPathsAreCheckedAndLeafnessFollowsTheLeafKeyPath() throws {
        try withService { client in
            let tree =
                #""kind": "tree", "content": "Employee", "filterPredicate": "manager == nil", "childrenKeyPath": "directReports""#
            for field in ["countKeyPath", "leafKeyPath"] {
                let bad = try client.request(
                    "POST", "/controllers", json: #"{"name": "bad", \#(tree), "\#(field)": "nope"}"#)
                #expect(bad.errorCode == "bad-controller", "\(field)")
                #expect(bad.json?["error"]?["field"] == .string(field))
            }
            let created = try client.request(
                "POST", "/controllers", json: #"{"name": "leafy", \#(tree), "leafKeyPath": "active"}"#)
            #expect(created.status == 201)
            // Jobs (Employee/12, a root) made inactive: not a leaf, so his reports show; active roots are leaves.
            #expect(try client.request("PUT", "/objects/Employee/12/active", json: "false").status == 200)
            let roots = try client.request("GET", "/controllers/leafy/arrangedObjects").json?.arrayValue ?? []
            let jobs = roots.first { $0["object"]?["$id"] == "Employee/12" }
            let hopper = roots.first { $0["object"]?["$id"] == "Employee/1" }
            #expect(jobs?["isLeaf"] == false)
            #expect(jobs?["children"]?.arrayValue?.isEmpty == false)
            #expect(hopper?["isLeaf"] == true)
            #expect(hopper?["children"] == [])
            // Down to Employee/7, who has no reports: inactive, it is not a leaf though it has no children.
            for id in [1, 2, 4, 7] {
                #expect(try client.request("PUT", "/objects/Employee/\(id)/active", json: "false").status == 200)
            }
            func find(_ id: String, in nodes: [PropertyListValue]) -> PropertyListValue? {
                for node in nodes {
                    if node["object"]?["$id"] == .string(id) { return node }
                    if let found = find(id, in: node["children"]?.arrayValue ?? []) { return found }
                }
                return nil
            }
            let nodes = try client.request("GET", "/controllers/leafy/arrangedObjects").json?.arrayValue ?? []
            let seven = find("Employee/7", in: nodes)
            #expect(seven?["isLeaf"] == false)
            #expect(seven?["children"] == [])
        }
    }

    /// `insert` places each object at the asked index, unsorted: a second insert does not re-sort the first one.
    @Test func aSecondInsertLeavesTheFirstWhereItWasPlaced() throws {
        try withService { client in
            let before = try lastNames(client)
            #expect(try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[0]").status == 200)
            let first = #"{"object": {"firstName": "Z", "lastName": "Zz1"}}"#
            #expect(try client.request("POST", "/controllers/employees/insert", json: first).status == 200)
            #expect(try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[2]").status == 200)
            let second = #"{"object": {"firstName": "Z", "lastName": "Zz2"}}"#
            #expect(try client.request("POST", "/controllers/employees/insert", json: second).status == 200)
            #expect(try lastNames(client) == ["Zz1", before[0], "Zz2"] + before.dropFirst())
            // The next re-arrangement sorts them in.
            #expect(try client.request("POST", "/controllers/employees/rearrangeObjects").status == 200)
            #expect(try lastNames(client) == (before + ["Zz1", "Zz2"]).sorted())
        }
    }

    /// Content through a to-one that is nil (`selection.manager.directReports` of someone without a manager) has
    /// nowhere to add to: `canAdd` is false and `add` is disabled, rather than enabled and then refused.
    @Test func contentThroughANilToOneCannotBeAddedTo() throws {
        try withService { client in
            let newcomer = #"{"object": {"firstName": "N", "lastName": "New", "department": {"$ref": "Department/1"}}}"#
            for (id, canAdd) in [("1", false), ("2", true)] {
                let master = #"{"name": "e\#(id)", "kind": "object", "content": "Employee/\#(id)"}"#
                #expect(try client.request("POST", "/controllers", json: master).status == 201)
                let detail =
                    #"{"name": "s\#(id)", "kind": "array", "content": "@e\#(id).selection.manager.directReports"}"#
                #expect(try client.request("POST", "/controllers", json: detail).status == 201)
                #expect(try client.request("GET", "/controllers/s\(id)/canAdd").json == .boolean(canAdd), "\(id)")
                let add = try client.request("POST", "/controllers/s\(id)/add", json: newcomer)
                #expect(add.status == (canAdd ? 200 : 409), "\(id): \(add.text)")
            }
            // Employee/2's manager is Employee/1: the new object joined Employee/1's direct reports.
            let reports = try client.request("GET", "/objects/Employee/1/directReports/lastName")
            #expect(reports.json?.arrayValue?.contains("New") == true, "\(reports.text)")
        }
    }

    /// A selection change commits the pending edits of the controller and of those that follow it in one
    /// transaction: when a detail's edit is invalid, the change is refused and the master's edit is not applied
    /// either (all or nothing), and both keep their edits.
    @Test func aRefusedSelectionChangeCommitsNoEditOfTheChain() throws {
        try withService { client in
            let before = try client.request("GET", "/store").json?["objects"]
            #expect(try client.request("PUT", "/controllers/departments/edits/budget", json: "5").status == 200)
            #expect(try client.request("PUT", "/controllers/employees/edits/salary", json: "-5").status == 200)
            let refused = try client.request("PUT", "/controllers/departments/selectionIndexes", json: "[1]")
            #expect(refused.status == 422)
            #expect(try client.request("GET", "/store").json?["objects"] == before)
            #expect(try client.request("GET", "/controllers/departments/isEditing").json == true)
            #expect(try client.request("GET", "/controllers/employees/isEditing").json == true)
            #expect(try client.request("GET", "/controllers/departments/selectionIndexes").json == [0])
            // With the detail's edit fixed, both are committed together, as one undo group.
            #expect(try client.request("PUT", "/controllers/employees/edits/salary", json: "5").status == 200)
            #expect(try client.request("PUT", "/controllers/departments/selectionIndexes", json: "[1]").status == 200)
            #expect(try client.request("GET", "/controllers/departments/isEditing").json == false)
            #expect(try client.request("POST", "/actions/undo").status == 200)
            #expect(try client.request("GET", "/store").json?["objects"] == before)
        }
    }

    @Test func editsNeedASelectionAndAKeyItHas_andEditsLeftWithoutOneDoNotBlockTheMaster() throws {
        try withService { client in
            // Research (index 3 by name) has no employees: nothing is selected in the detail.
            #expect(try client.request("PUT", "/controllers/departments/selectionIndexes", json: "[3]").status == 200)
            let none = try client.request("PUT", "/controllers/employees/edits/salary", json: "5")
            #expect(none.status == 409)
            #expect(none.json?["error"]?["code"] == "action-disabled")
            // One employee moves in and is selected; an edit is recorded; it moves out again.
            let move = #"{"$ref": "Department/5"}"#
            #expect(try client.request("PUT", "/objects/Employee/9/department", json: move).status == 200)
            #expect(try client.request("GET", "/controllers/employees/selectionIndexes").json == [0])
            let unknown = try client.request("PUT", "/controllers/employees/edits/nope", json: "1")
            #expect(unknown.status == 404)
            #expect(unknown.json?["error"]?["code"] == "undefined-key")
            // Key paths that read but that no commit could set are refused up front, not left to block selections,
            // with the error a PUT through them gets.
            for (keyPath, code) in [
                ("department.employees.@count", "bad-key-path"), ("department.payroll", "read-only-key"),
                ("salary.x", "bad-key-path"), ("department.@count", "bad-key-path"),
            ] {
                let refused = try client.request("PUT", "/controllers/employees/edits/\(keyPath)", json: "1")
                #expect(refused.json?["error"]?["code"]?.stringValue == code, "\(keyPath)")
            }
            #expect(try client.request("GET", "/controllers/employees/isEditing").json == false)
            #expect(
                try client.request("PUT", "/controllers/employees/edits/department.name", json: #""X""#).status == 200)
            #expect(try client.request("POST", "/controllers/employees/discardEditing").status == 200)
            #expect(try client.request("PUT", "/controllers/employees/edits/salary", json: "5").status == 200)
            let back = #"{"$ref": "Department/1"}"#
            #expect(try client.request("PUT", "/objects/Employee/9/department", json: back).status == 200)
            #expect(try client.request("GET", "/controllers/employees/selectionIndexes").json == [])
            // The edit has nothing to go to: the master's selection still changes, and the edit is gone.
            #expect(try client.request("PUT", "/controllers/departments/selectionIndexes", json: "[0]").status == 200)
            #expect(try client.request("GET", "/controllers/employees/isEditing").json == false)
            #expect(try client.request("GET", "/objects/Employee/9/salary").json == 119000)
        }
    }

    @Test func settingThroughTheSelectionAndCommittingListEveryError() throws {
        try withService { client in
            for selection in ["[0]", "[0, 1]"] {
                _ = try client.request("PUT", "/controllers/employees/selectionIndexes", json: selection)
                // An undefined key is the request's error (404), however many objects are selected.
                let unknown = try client.request("PUT", "/controllers/employees/selection/nope", json: "1")
                #expect(unknown.status == 404)
                #expect(unknown.json?["error"]?["code"] == "undefined-key")
                // A value of the wrong type and one that breaks a constraint are both listed.
                _ = try client.request("PUT", "/controllers/employees/edits/hireDate", json: "3")
                _ = try client.request("PUT", "/controllers/employees/edits/salary", json: "-1")
                let failed = try client.request("POST", "/controllers/employees/commitEditing")
                #expect(failed.status == 422)
                let listed = Set(
                    (failed.json?["error"]?["errors"]?.arrayValue ?? []).compactMap { $0["keyPath"]?.stringValue })
                #expect(listed == ["hireDate", "salary"])
                _ = try client.request("POST", "/controllers/employees/discardEditing")
            }
        }
    }

    @Test func editing_commitAndDiscard() throws {
        try withService { client in
            let state = try client.request("GET", "/controllers/employee").json
            #expect(state?["kind"] == "object")
            #expect(state?["sortDescriptors"] == [] && state?["filterPredicate"] == .null)
            let edit = try client.request("PUT", "/controllers/employee/edits/firstName", json: #""Fran""#)
            #expect(edit.json == ["firstName": "Fran"])
            #expect(try client.request("GET", "/controllers/employee/isEditing").json == true)
            #expect(try client.request("GET", "/objects/Employee/9/firstName").json == "Frances")
            let commit = try client.request("POST", "/controllers/employee/commitEditing")
            #expect(commit.json?["isEditing"] == false)
            #expect(try client.request("GET", "/objects/Employee/9/firstName").json == "Fran")
            _ = try client.request("PUT", "/controllers/employee/edits/salary", json: #""lots""#)
            _ = try client.request("PUT", "/controllers/employee/edits/hireDate", json: "3")
            let failed = try client.request("POST", "/controllers/employee/commitEditing")
            #expect(failed.status == 422)
            #expect(failed.json?["error"]?["errors"]?.arrayValue?.count == 2)
            #expect(try client.request("GET", "/controllers/employee/edits").json?["salary"] == "lots")
            _ = try client.request("POST", "/controllers/employee/discardEditing")
            #expect(try client.request("GET", "/controllers/employee/edits").json == [:])
            // One invalid edit: still a list of errors, the edit kept.
            _ = try client.request("PUT", "/controllers/employee/edits/salary", json: "-5")
            let one = try client.request("POST", "/controllers/employee/commitEditing")
            #expect(one.status == 422)
            #expect(one.json?["error"]?["code"] == "validation-failed")
            #expect(one.json?["error"]?["errors"]?.arrayValue?.map { $0["keyPath"] } == ["salary"])
            #expect(try client.request("GET", "/controllers/employee/edits").json == ["salary": -5])
        }
    }

    /// API.md §1 reserves `$` keys: an edit holding one (a marker sent back, or a reference for an attribute, which
    /// only a relationship takes) could never be committed.
    @Test func editHoldingAReservedKey_refusedAtOnce() throws {
        try withService { client in
            let bodies = [
                #"{"$x": 1}"#, #"{"$marker": "NoSelection"}"#, #"[{"a": {"$thing": 1}}]"#, #"{"$ref": "Employee/1"}"#,
            ]
            for body in bodies {
                let answer = try client.request("PUT", "/controllers/employee/edits/lastName", json: body)
                #expect(answer.status == 422, "\(body)")
                #expect(answer.json?["error"]?["code"] == "type-mismatch", "\(body)")
            }
            let malformed = try client.request("PUT", "/controllers/employee/edits/manager", json: #"{"$ref": "x"}"#)
            #expect(malformed.status == 422)
            #expect(try client.request("GET", "/controllers/employee/edits").json == [:])
            // A relationship's edit is a reference.
            let manager = try client.request(
                "PUT", "/controllers/employee/edits/manager", json: #"{"$ref": "Employee/1"}"#)
            #expect(manager.status == 200)
            #expect(try client.request("POST", "/controllers/employee/discardEditing").status == 200)
            #expect(try client.request("GET", "/controllers/employee/isEditing").json == false)
        }
    }

    /// The controller route's body has `object` (add and insert) and `index` (insert): a misspelt key would otherwise
    /// make an object without the values meant for it.
    @Test func actionBodyWithAnUnknownKey_refused_nothingCreated() throws {
        try withService { client in
            let before = try client.request("GET", "/objects/Department").json?.arrayValue?.count
            let cases: [(String, String, String)] = [
                ("add", #"{"objekt": {"name": "X"}}"#, "undefined-key"),
                ("insert", #"{"object": {"name": "X"}, "indx": 0}"#, "undefined-key"),
                ("add", #"{"object": {"name": "X"}, "index": 0}"#, "undefined-key"),
                ("add", #"[{"name": "X"}]"#, "type-mismatch"),
                ("selectNext", #"{"object": {}}"#, "undefined-key"),
            ]
            for (action, body, code) in cases {
                let answer = try client.request("POST", "/controllers/departments/\(action)", json: body)
                #expect(answer.status == 422, "\(action) \(body)")
                #expect(answer.json?["error"]?["code"] == .string(code), "\(action) \(body)")
            }
            #expect(try client.request("GET", "/objects/Department").json?.arrayValue?.count == before)
            let added = try client.request("POST", "/controllers/departments/add", json: #"{"object": {"name": "X"}}"#)
            #expect(added.status == 200)
            // The body is optional: JSON `null`, as a client that serialises "no body" sends, is none, here and on
            // the responder chain's route.
            let rearranged = try client.request("POST", "/controllers/departments/rearrangeObjects", json: "null")
            #expect(rearranged.status == 200 && rearranged.json?["name"] == "departments")
            let sent = try client.request(
                "POST", "/actions/selectPrevious", headers: ["X-First-Responder": "departments"], json: "null")
            #expect(sent.status == 200)
        }
    }

    @Test func hugeSelectionIndex_isOutOfRange_notMalformed() throws {
        try withService { client in
            let count = try client.request("GET", "/controllers/departments").json?["count"]?.integerValue ?? 0
            let answer = try client.request(
                "PUT", "/controllers/departments/selectionIndexes", json: "[9223372036854775807]")
            #expect(answer.status == 200)
            #expect(answer.json == [.integer(count - 1)])
        }
    }

    /// Well-formed JSON that is no list of sort descriptors is an invalid value (422), as for the other keys.
    @Test(arguments: [#"{"key": "budget"}"#, #"[{"ascending": true}]"#, "[5]", #"[{"key": "name", "x": 1}]"#])
    func sortDescriptorsThatAreNoArray_refused(body: String) throws {
        try withService { client in
            let answer = try client.request("PUT", "/controllers/departments/sortDescriptors", json: body)
            #expect(answer.status == 422)
            #expect(answer.json?["error"]?["code"] == "type-mismatch")
            #expect(answer.json?["error"]?["keyPath"] == "sortDescriptors")
            #expect(
                try client.request("GET", "/controllers/departments/sortDescriptors").json?.arrayValue?.first?["key"]
                    == "name")
        }
    }

    @Test func tree_nestedArrangedObjects_andIndexPaths() throws {
        try withService { client in
            let tree = try client.request("GET", "/controllers/org/arrangedObjects")
            let roots = try #require(tree.json?.arrayValue)
            #expect(
                roots.compactMap { $0["object"]?["lastName"]?.stringValue } == [
                    "Backus", "Hopper", "Jobs", "Kenneth Keller",
                ])
            #expect(roots[1]["indexPath"] == [1])
            #expect(roots[1]["count"] == 2)
            let child = roots[1]["children"]?.arrayValue?.first
            #expect(child?["indexPath"] == [1, 0])
            #expect(child?["object"]?["lastName"] == "Goldberg")
            let put = try client.request("PUT", "/controllers/org/selectionIndexPaths", json: "[[1, 1], [1, 0]]")
            #expect(put.json == [[1, 0], [1, 1]])
            let flat = try client.request("PUT", "/controllers/org/selectionIndexPaths", json: "[0]")
            #expect(flat.errorCode == "type-mismatch")
            #expect(flat.json?["error"]?["message"]?.stringValue?.contains("[[0], [0, 1]]") == true)
            #expect(try client.request("GET", "/controllers/org/selection/manager").json == ["$ref": "Employee/1"])
        }
    }

    @Test func responderChain_controllerAsFirstResponder() throws {
        try withService { client in
            let listing = try client.request("GET", "/actions", headers: ["X-First-Responder": "employees"])
            let entries = listing.json?["actions"]?.arrayValue ?? []
            let selectNext = entries.first { $0["action"] == "selectNext" }
            #expect(selectNext == ["action": "selectNext", "responder": "employees", "enabled": true])
            #expect(entries.first { $0["action"] == "selectPrevious" }?["enabled"] == false)
            let sent = try client.request("POST", "/actions/selectNext", headers: ["X-First-Responder": "employees"])
            #expect(sent.status == 200)
            #expect(try client.request("GET", "/controllers/employees/selectionIndexes").json == [1])
            let disabled = try client.request(
                "POST", "/actions/selectPrevious", json: #"{"target": "controllers/departments", "sender": null}"#)
            #expect(disabled.errorCode == "action-disabled")
            _ = try client.request(
                "POST", "/controllers", json: #"{"name": "late", "kind": "array", "content": "Department"}"#)
            let late = try client.request(
                "POST", "/actions/selectNext", json: #"{"target": "controllers/late", "sender": null}"#)
            #expect(late.status == 200)
            _ = try client.request("DELETE", "/controllers/late")
            let gone = try client.request(
                "POST", "/actions/selectNext", json: #"{"target": "controllers/late", "sender": null}"#)
            #expect(gone.errorCode == "no-such-controller")
        }
    }
}
