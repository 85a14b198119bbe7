import Bindery
import Foundation
import HTTPTestSupport
import PropertyList
import Synchronization
import Testing

/// `/actions` (the responder chain, undo and redo) and `/store` (export and import) through a real server
/// (API.md §9).
struct DocumentRoutesTests {
    /// A service on a document of its own with `--fsync batch`, on a temporary data directory.
    func withBatchService(_ body: (Document, TestHTTPClient) throws -> Void) throws {
        try withTemporaryDataDirectory { data in
            let document = try Document(
                fixtureDirectory: packageRoot + "/Fixtures/employees", dataDirectory: data,
                options: .init(fsync: .batch))
            defer { document.close() }
            try withService(document: document) { client in try body(document, client) }
        }
    }

    /// Exports still waiting for their turn when the server stops are answered `503 shutting-down` with
    /// `Retry-After` at once, not made one after another: a few dozen of them held a stop far past a supervisor's
    /// patience (Docker's 10 s).
    /// A write that comes while the server stops (the document closed, the server not yet stopped) is refused,
    /// not applied, and told to retry: the server is normally back soon (a supervisor restarts it).
    @Test func aWriteAfterTheDocumentClosedIs503WithRetryAfter() throws {
        let document = try Document(fixtureDirectory: packageRoot + "/Fixtures/employees")
        try withService(document: document) { client in
            document.close()
            let refused = try client.request("PUT", "/objects/Employee/4/salary", json: "1")
            #expect(refused.status == 503 && refused.errorCode == "document-closed", "\(refused.text)")
            #expect(refused.header("Retry-After") == "1")
        }
    }

    @Test func exportsWaitingAtStopAreAnsweredAtOnce() throws {
        try withServiceAndServer(maxBody: 64 << 20) { client, server in
            try importOneDepartment(employees: 20_000, client)
            let started = Date()
            _ = try client.request("GET", "/store")
            let oneExport = Date().timeIntervalSince(started)
            let statuses = Mutex<[Int: Int]>([:])
            let group = DispatchGroup()
            for _ in 0..<12 {  // threads of their own: the global queue adds threads for blocked ones slowly
                group.enter()
                Thread {
                    let status = (try? client.request("GET", "/store").status) ?? 0
                    statuses.withLock { $0[status, default: 0] += 1 }
                    group.leave()
                }.start()
            }
            let deadline = Date().addingTimeInterval(5)
            while server.suspendedCount < 8, Date() < deadline { usleep(500) }
            let waiting = server.suspendedCount
            let stopping = Date()
            server.stop()
            let stopped = Date().timeIntervalSince(stopping)
            group.wait()
            #expect(waiting >= 8)
            #expect(statuses.withLock { $0[503] ?? 0 } >= 7, "\(statuses.withLock { $0 }), one export \(oneExport) s")
            #expect(stopped < oneExport * 3, "stop took \(stopped) s, one export \(oneExport) s")
        }
    }

    /// Replaces the store with one department of `employees` employees, whose export takes a while.
    func importOneDepartment(employees: Int, _ client: TestHTTPClient) throws {
        var objects = ["{\"$id\": \"Department/1\", \"name\": \"Big\", \"budget\": 1}"]
        for n in 1...employees {
            objects.append(
                "{\"$id\": \"Employee/\(n)\", \"firstName\": \"F\(n)\", \"lastName\": \"L\(n)\", "
                    + "\"department\": {\"$ref\": \"Department/1\"}}")
        }
        let imported = try client.request(
            "PUT", "/store", json: "{\"objects\": [" + objects.joined(separator: ",") + "]}")
        #expect(imported.status == 200, "\(String(decoding: imported.body.prefix(300), as: UTF8.self))")
    }

    /// An export whose client closed before its turn is not made, and its answer (which nobody reads) is `499
    /// client-gone`: `/metrics` counts it with the 4xx, not as a server error that would set off a 5xx alert.
    /// (Whether such an answer is counted at all depends on whether libmicrohttpd finds the close before or after
    /// it asks the handler again on resuming.)
    @Test func exportsOfClientsGoneAreNotCountedAsServerErrors() throws {
        try withServiceAndServer(maxBody: 64 << 20) { client, server in
            try importOneDepartment(employees: 20_000, client)
            let group = DispatchGroup()
            for _ in 0..<2 {  // ahead of the abandoned ones on the queue of slow answers
                group.enter()
                Thread {
                    _ = try? client.request("GET", "/store")
                    group.leave()
                }.start()
            }
            var deadline = Date().addingTimeInterval(5)
            while server.suspendedCount < 2, Date() < deadline { usleep(200) }
            let sockets = try (0..<5).map { _ in
                let socket = try client.connect()
                try client.send(Array("GET /store HTTP/1.1\r\nHost: test\r\n\r\n".utf8), on: socket)
                return socket
            }
            deadline = Date().addingTimeInterval(5)
            while server.suspendedCount < 7, Date() < deadline { usleep(200) }
            #expect(server.suspendedCount >= 6, "the abandoned exports were not waiting their turn")
            sockets.forEach { close($0) }
            group.wait()
            deadline = Date().addingTimeInterval(10)
            while server.suspendedCount > 0, Date() < deadline { usleep(1000) }
            let metrics = try client.request("GET", "/metrics").text
            #expect(metrics.contains("bindery_http_responses_total{class=\"5xx\"} 0\n"), "\(metrics.prefix(600))")
        }
    }

    func actions(_ response: TestResponse) -> [String: PropertyListValue] {
        var byName: [String: PropertyListValue] = [:]
        for entry in response.json?["actions"]?.arrayValue ?? [] {
            if let name = entry["action"]?.stringValue { byName[name] = entry }
        }
        return byName
    }

    /// With `--fsync batch`, a write that changes nothing is still an acknowledgement of the store as it answers it
    /// (its `X-Store-Seq`, its ETag): others' changes up to that seq must be durable first, or a crash could take back
    /// what it confirmed and a client's seqs would go back at its next read.
    @Test func batchAnswersANoOpWriteOnlyOnceWhatItReflectsIsDurable() throws {
        try withBatchService { document, client in
            let early = Mutex(0)
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                for n in 0..<150 {
                    if worker > 0 {
                        _ = try? client.request("PUT", "/objects/Employee/\(worker)/salary", json: "\(n)")
                        continue
                    }
                    for (method, path, body) in [
                        ("PUT", "/objects/Employee/9/salary", "9000"),
                        ("PATCH", "/objects/Employee/9", #"{"salary": 9000}"#),
                    ] {
                        guard let answer = try? client.request(method, path, json: body),
                            let seq = answer.header("X-Store-Seq").flatMap({ Int64($0) })
                        else { continue }
                        if document.acknowledgedSeq(.max) < seq { early.withLock { $0 += 1 } }
                    }
                }
            }
            #expect(early.withLock { $0 } == 0)
        }
    }

    /// With `--fsync batch`, a read's `X-Store-Seq` is never beyond what is durable (README: "`X-Store-Seq` (the
    /// sequence number of the last change the answer reflects, never beyond what is durable"): a change committed but
    /// not flushed yet is not confirmed by an answer made meanwhile, which a crash could take back.
    @Test func batchReadsNeverShowASeqBeyondWhatIsDurable() throws {
        try withBatchService { document, client in
            let early = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                for n in 0..<200 {
                    if worker > 0 {
                        _ = try? client.request("PUT", "/objects/Employee/\(worker)/salary", json: "\(n)")
                        continue
                    }
                    guard let answer = try? client.request("GET", "/model"),
                        let seq = answer.header("X-Store-Seq").flatMap({ Int64($0) })
                    else { continue }
                    let durable = document.acknowledgedSeq(.max)
                    if durable < seq { early.withLock { $0.append("\(seq) > \(durable)") } }
                }
            }
            #expect(early.withLock { $0 }.isEmpty)
        }
    }

    /// With `--fsync batch`, a read's ETag may be the seq of a change not yet durable (above its `X-Store-Seq`): a
    /// client that follows the feed from it must not be answered a `last` below its `since` (API.md §7).
    @Test func batchPollFromAnETagNeverAnswersALastBelowIt() throws {
        try withBatchService { document, client in
            let behind = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 16) { worker in
                for n in 0..<(worker == 0 ? 400 : 100) {
                    if worker > 0 {
                        _ = try? client.request("PUT", "/objects/Employee/\(worker)/salary", json: "\(n)")
                        _ = try? client.request("PUT", "/objects/Employee/20/salary", json: "\(n * 100 + worker)")
                        continue
                    }
                    guard let read = try? client.request("GET", "/objects/Employee/20"),
                        let tag = read.header("ETag")?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")),
                        let poll = try? client.request("GET", "/changes?since=\(tag)&timeout=0"),
                        let last = poll.json?["last"]?.integerValue, let since = Int64(tag)
                    else { continue }
                    if poll.status != 200 || last < since { behind.withLock { $0.append("\(since) -> \(last)") } }
                }
            }
            #expect(behind.withLock { $0 } == [])
        }
    }

    @Test func actionsListTheDocumentsActionsValidated() throws {
        try withService { client in
            let listed = actions(try client.request("GET", "/actions"))
            #expect(listed["undo"] == ["action": "undo", "responder": "document", "enabled": false])
            #expect(listed["redo"]?["enabled"] == false)
            #expect(listed["save"]?["enabled"] == true)
            #expect(listed["revertToSaved"]?["enabled"] == false)
            let disabled = try client.request("POST", "/actions/undo")
            #expect(disabled.status == 409)
            #expect(disabled.errorCode == "action-disabled")
            #expect(try client.request("PUT", "/objects/Employee/3/salary", json: "1").status == 200)
            let after = actions(try client.request("GET", "/actions"))
            #expect(after["undo"]?["enabled"] == true)
            #expect(after["revertToSaved"]?["enabled"] == true)
        }
    }

    @Test func unknownFirstResponderAndNoResponder() throws {
        try withService { client in
            let unknown = try client.request("POST", "/actions/undo", headers: ["X-First-Responder": "nope"])
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == "no-such-controller")
            let listing = try client.request("GET", "/actions", headers: ["X-First-Responder": "nope"])
            #expect(listing.errorCode == "no-such-controller")
            // A prefix with no name names no controller, in the header as in a target; an empty header is none.
            let noName = try client.request("POST", "/actions/save", headers: ["X-First-Responder": "controllers/"])
            #expect(noName.errorCode == "no-such-controller")
            #expect(try client.request("POST", "/actions/save", headers: ["X-First-Responder": " "]).status == 200)
            for target in ["controllers/nope", "nope", "controllers/"] {
                let targeted = try client.request(
                    "POST", "/actions/add", json: #"{"target": "\#(target)", "sender": null}"#)
                #expect(targeted.status == 404)
                #expect(targeted.errorCode == "no-such-controller", "\(target)")
            }
            let nobody = try client.request("POST", "/actions/frobnicate", json: "{}")
            #expect(nobody.status == 404)
            #expect(nobody.errorCode == "no-responder")
            let badTarget = try client.request("POST", "/actions/save", json: #"{"target": 3}"#)
            #expect(badTarget.status == 422)
            // The body holds target and sender only, and a sender follows API.md §1 (a new object's `$id` aside).
            for body in [#"{"bogus": 1}"#, #"{"sender": {"$bogus": 1}}"#] {
                let refused = try client.request("POST", "/actions/save", json: body)
                #expect(refused.status == 422, "\(body)")
            }
        }
    }

    /// A target may name a controller as `X-First-Responder` does (its bare name), and come in the query as for
    /// `GET /actions`.
    @Test func targetsByBareNameAndQuery() throws {
        try withService { client in
            let bare = try client.request("POST", "/actions/selectNext", json: #"{"target": "employees"}"#)
            #expect(bare.status == 200)
            #expect(bare.json?["selectionIndexes"] == [1])
            let query = try client.request("POST", "/actions/selectNext?target=controllers/employees")
            #expect(query.json?["selectionIndexes"] == [2])
            let conflicting = try client.request(
                "POST", "/actions/selectNext?target=employees", json: #"{"target": "departments"}"#)
            #expect(conflicting.status == 400)
            let added = try client.request(
                "POST", "/actions/add",
                json: #"{"target": "departments", "sender": {"object": {"$id": "D9", "name": "Ops"}}}"#)
            #expect(added.status == 200)
            #expect(try client.request("GET", "/objects/Department/D9/name").json == "Ops")
        }
    }

    @Test func undoAndRedoOverHTTPAreObservedChanges() throws {
        try withService { client in
            let original = try client.request("GET", "/objects/Employee/3/salary").json
            let put = try client.request("PUT", "/objects/Employee/3/salary", json: "1234")
            #expect(put.header("X-Store-Seq") == "2")
            let undo = try client.request("POST", "/actions/undo", json: #"{"target": null, "sender": "menu"}"#)
            #expect(undo.status == 200)
            #expect(undo.json == ["action": "undo", "responder": "document", "seq": 3])
            #expect(try client.request("GET", "/objects/Employee/3/salary").json == original)
            let redo = try client.request("POST", "/actions/redo", json: #"{"target": "document"}"#)
            #expect(redo.json?["seq"] == 4)
            #expect(try client.request("GET", "/objects/Employee/3/salary").json == 1234)
            let feed = try client.request("GET", "/changes?since=2&timeout=5")
            let changes = feed.json?["changes"]?.arrayValue ?? []
            #expect(changes.map { $0["seq"] } == [3, 4])
            #expect(changes.first?["new"] == original)
            #expect(changes.last?["new"] == 1234)
        }
    }

    @Test func undoOfDeleteOverHTTPRestoresRelationships() throws {
        try withService { client in
            let before = try client.request("GET", "/objects/Employee/2").json
            let department = try client.request("GET", "/objects/Department/1/employees").json
            #expect(try client.request("DELETE", "/objects/Employee/2").status == 204)
            #expect(try client.request("GET", "/objects/Employee/2").status == 404)
            #expect(try client.request("POST", "/actions/undo").status == 200)
            #expect(try client.request("GET", "/objects/Employee/2").json == before)
            #expect(try client.request("GET", "/objects/Department/1/employees").json == department)
        }
    }

    /// An undone delete brings its object back at the end of the listing; restoring an export taken before the
    /// delete differs only in that order, so it is no change: no seq, redo kept, the document not edited.
    @Test func importOfTheSameObjectsInAnotherOrderIsNoChange() throws {
        try withService { client in
            let before = try client.request("GET", "/store").body
            #expect(try client.request("DELETE", "/objects/Employee/2").status == 204)
            #expect(try client.request("POST", "/actions/undo").status == 200)
            let put = try client.request("PUT", "/store", body: before)
            #expect(put.json == ["seq": 3, "count": 37])
            let actions = try client.request("GET", "/actions").json?["actions"]?.arrayValue ?? []
            let enabled = Dictionary(
                uniqueKeysWithValues: actions.compactMap { action in
                    action["action"]?.stringValue.map { ($0, action["enabled"]) }
                })
            #expect(enabled["redo"] == true)
            #expect(enabled["revertToSaved"] == false)
            #expect(try client.request("GET", "/changes?since=3&timeout=0").json?["changes"] == [])
        }
    }

    /// Restoring an export moves the ETags of what it changes only (and of what reads them through derived keys).
    @Test func importKeepsTheETagsOfObjectsItLeavesAsTheyWere() throws {
        try withService { client in
            func etag(_ object: String) throws -> String? {
                try client.request("GET", "/objects/\(object)").header("ETag")
            }
            let backup = try client.request("GET", "/store").body
            #expect(try client.request("PUT", "/objects/Employee/7/salary", json: "1").status == 200)
            #expect(try client.request("PUT", "/objects/Department/3/budget", json: "5").status == 200)
            let before = try ["Employee/7", "Employee/8", "Department/3", "Department/2"].map { try etag($0) }
            let put = try client.request("PUT", "/store", body: backup)
            let seq = try #require(put.json?["seq"]?.integerValue)
            #expect(try etag("Employee/7") == "\"\(seq)\"")
            #expect(try etag("Department/3") == "\"\(seq)\"")
            // Employee/8 and Department/2 are as they were: their ETags stay (Department/1 reads Employee/7 for its payroll).
            #expect(try etag("Employee/8") == before[1])
            #expect(try etag("Department/2") == before[3])
        }
    }

    @Test func saveAndRevertToSaved() throws {
        try withService { client in
            #expect(try client.request("PUT", "/objects/Employee/3/salary", json: "1").status == 200)
            let save = try client.request("POST", "/actions/save")
            #expect(save.status == 200)
            #expect(save.json?["seq"] == 2)
            let saved = try client.request("GET", "/store").json?["objects"]
            #expect(try client.request("PUT", "/objects/Employee/3/salary", json: "2").status == 200)
            #expect(try client.request("POST", "/actions/revertToSaved").status == 200)
            #expect(try client.request("GET", "/store").json?["objects"] == saved)
            #expect(actions(try client.request("GET", "/actions"))["revertToSaved"]?["enabled"] == false)
        }
    }

    @Test func undoingBackToTheSavedStateMakesTheDocumentUnedited() throws {
        try withService { client in
            func edited() throws -> Bool {
                actions(try client.request("GET", "/actions"))["revertToSaved"]?["enabled"] == true
            }
            _ = try client.request("PUT", "/objects/Employee/3/salary", json: "1")
            #expect(try client.request("POST", "/actions/save").status == 200)
            #expect(try !edited())
            _ = try client.request("PUT", "/objects/Employee/3/salary", json: "2")
            #expect(try edited())
            _ = try client.request("POST", "/actions/undo")
            #expect(try !edited())
            _ = try client.request("POST", "/actions/redo")
            #expect(try edited())
            _ = try client.request("POST", "/actions/undo")
            // Past the save point, then a new change: the saved state cannot come back by undo any more.
            _ = try client.request("POST", "/actions/undo")
            #expect(try edited())
            _ = try client.request("PUT", "/objects/Employee/3/salary", json: "3")
            _ = try client.request("POST", "/actions/undo")
            #expect(try edited())
            #expect(try client.request("POST", "/actions/revertToSaved").status == 200)
            #expect(try !edited())
            #expect(try client.request("GET", "/objects/Employee/3/salary").json == 1)
        }
    }

    /// NSDocument's editors: `save` commits the controllers' pending edits first (and a refused commit refuses the
    /// save), `revertToSaved` discards them; `commitEditing` with nothing pending succeeds on both routes.
    @Test func saveCommitsPendingEdits_revertDiscardsThem() throws {
        try withService { client in
            let selected = try #require(
                try client.request("GET", "/controllers/employees/selectedObjects").json?.arrayValue?.first?["$id"]?
                    .stringValue)
            #expect(try client.request("PUT", "/controllers/employees/edits/salary", json: "-5").status == 200)
            let refused = try client.request("POST", "/actions/save")
            #expect(refused.status == 422)
            #expect(try client.request("GET", "/controllers/employees/edits").json == ["salary": -5])
            #expect(try client.request("PUT", "/controllers/employees/edits/salary", json: "4242").status == 200)
            #expect(try client.request("POST", "/actions/save").status == 200)
            #expect(try client.request("GET", "/objects/\(selected)/salary").json == 4242)
            #expect(try client.request("GET", "/controllers/employees/edits").json == [:])
            // A pending edit alone makes the document edited: revertToSaved is enabled and discards it.
            #expect(try client.request("PUT", "/controllers/employees/edits/salary", json: "7").status == 200)
            #expect(actions(try client.request("GET", "/actions"))["revertToSaved"]?["enabled"] == true)
            #expect(try client.request("POST", "/actions/revertToSaved").status == 200)
            #expect(try client.request("GET", "/controllers/employees/edits").json == [:])
            #expect(try client.request("PUT", "/controllers/employees/edits/salary", json: "1").status == 200)
            #expect(try client.request("PUT", "/objects/\(selected)/lastName", json: #""Changed""#).status == 200)
            #expect(try client.request("POST", "/actions/revertToSaved").status == 200)
            #expect(try client.request("GET", "/controllers/employees/edits").json == [:])
            #expect(try client.request("GET", "/objects/\(selected)/salary").json == 4242)
            let responder = ["X-First-Responder": "employees"]
            let listed = actions(try client.request("GET", "/actions", headers: responder))
            #expect(listed["commitEditing"]?["enabled"] == true)
            #expect(try client.request("POST", "/actions/commitEditing", headers: responder).status == 200)
            #expect(try client.request("POST", "/controllers/employees/commitEditing").status == 200)
        }
    }

    @Test func exportThenImportRoundTripsToAnIdenticalGraph() throws {
        try withService { client in
            let export = try client.request("GET", "/store")
            #expect(export.status == 200)
            #expect(export.json?["seq"] == 1)
            #expect(export.json?["objects"]?.arrayValue?.count == 37)
            // Each object in its JSON form (API.md §4), derived keys included, as GET /objects/{id} gives it.
            for object in try #require(export.json?["objects"]?.arrayValue) {
                let id = try #require(object["$id"]?.stringValue)
                #expect(try client.request("GET", "/objects/\(id)").json == object, "\(id)")
            }
            #expect(export.json?["objects"]?.arrayValue?.first?["headcount"] != nil)
            // The identical graph changes nothing: no seq, no undo group, no change in the feed, versions kept.
            let etag = try client.request("GET", "/objects/Employee/1").header("ETag")
            let put = try client.request("PUT", "/store", body: export.body)
            #expect(put.status == 200)
            #expect(put.json == ["seq": 1, "count": 37])
            let again = try client.request("GET", "/store")
            #expect(again.json?["objects"] == export.json?["objects"])
            #expect(again.json?["seq"] == 1)
            #expect(try client.request("GET", "/objects/Employee/1").header("ETag") == etag)
            #expect(try client.request("POST", "/actions/undo").status == 409)
            #expect(try client.request("GET", "/changes?since=1&timeout=0").json?["changes"] == [])
            // One value different: a replacement like any other.
            var objects = try #require(export.json?["objects"]?.arrayValue)
            objects[0] = .dictionary((objects[0].dictionaryValue ?? [:]).merging(["name": "Renamed"]) { $1 })
            let changed = try client.request(
                "PUT", "/store", json: PropertyListValue.dictionary(["objects": .array(objects)]).jsonString())
            #expect(changed.json == ["seq": 2, "count": 37])
            // A null attribute that has a default in the model stays null through the plist (an entry left out
            // would be imported as the default).
            #expect(try client.request("PUT", "/objects/Employee/1/active", json: "null").status == 200)
            let withNull = try client.request("GET", "/store")
            let plist = try client.request("GET", "/store", headers: ["Accept": "application/x-plist"])
            #expect(plist.header("Content-Type") == "application/x-plist")
            #expect(plist.header("Vary") == "Accept" && export.header("Vary") == "Accept")
            #expect(plist.text.contains("<plist version=\"1.0\">"))
            // Named with q=0, or below JSON (named or by a wildcard), the plist is not chosen.
            for accept in [
                "application/x-plist;q=0", "application/x-plist;q=0.5, application/json",
                "application/x-plist;q=0.5, */*;q=0.9", "*/*",
            ] {
                let json = try client.request("GET", "/store", headers: ["Accept": accept])
                #expect(json.header("Content-Type") == "application/json", "\(accept)")
            }
            // Preferred, or taken by a wildcard where JSON is refused, it is.
            for accept in ["application/json;q=0.5, application/xml", "application/json;q=0, */*"] {
                let preferred = try client.request("GET", "/store", headers: ["Accept": accept])
                #expect(preferred.header("Content-Type") == "application/x-plist", "\(accept)")
            }
            let imported = try client.request(
                "PUT", "/store", headers: ["Content-Type": "application/x-plist"], body: plist.body)
            #expect(imported.status == 200)
            #expect(try client.request("GET", "/store").json?["objects"] == withNull.json?["objects"])
            // XML 1.0 cannot carry a bell character: that export is refused rather than written unreadable.
            #expect(try client.request("PUT", "/objects/Employee/1/lastName", json: #""a\u0007b""#).status == 200)
            let refused = try client.request("GET", "/store", headers: ["Accept": "application/x-plist"])
            #expect(refused.status == 406)
            #expect(refused.errorCode == "not-acceptable")
            #expect(refused.header("Vary") == "Accept")
            // A client that takes JSON as well is sent JSON.
            for accept in ["application/x-plist, application/json;q=0.5", "application/x-plist, */*;q=0.1"] {
                let fallback = try client.request("GET", "/store", headers: ["Accept": accept])
                #expect(fallback.status == 200, "\(accept)")
                #expect(fallback.header("Content-Type") == "application/json", "\(accept)")
            }
            // A property list in another charset is refused as a JSON body in one is.
            let latin1 = try client.request(
                "PUT", "/store", headers: ["Content-Type": "application/x-plist; charset=iso-8859-1"], body: plist.body)
            #expect(latin1.status == 415)
            // Another type: 415 naming both formats the import takes.
            let text = try client.request("PUT", "/store", headers: ["Content-Type": "text/plain"], body: plist.body)
            #expect(text.status == 415)
            #expect(text.json?["error"]?["message"]?.stringValue?.contains("XML property list") == true)
        }
    }

    @Test func invalidImportChangesNothing() throws {
        try withService { client in
            let export = try client.request("GET", "/store")
            let missingName =
                #"{"objects": [{"$id": "Department/1", "name": "A"}, {"$id": "Employee/1", "#
                + #""firstName": "X", "department": {"$ref": "Department/1"}}]}"#
            let invalid = try client.request("PUT", "/store", json: missingName)
            #expect(invalid.status == 422)
            let unknownKey = try client.request(
                "PUT", "/store", json: #"{"objects": [{"$id": "Department/1", "x": 1}]}"#)
            #expect(unknownKey.status == 422)
            // A snapshot's `$version` is no key of an import either.
            let version = try client.request(
                "PUT", "/store", json: #"{"objects": [{"$id": "Department/1", "name": "A", "$version": 9}]}"#)
            #expect(version.status == 422)
            #expect(version.json?["error"]?["cause"] == "undefined-key")
            // A key beside `objects` that is not an export's `seq` (a misspelling) is refused, not dropped.
            let extra = try client.request("PUT", "/store", json: #"{"objects": [], "objcts": [], "seq": 1}"#)
            #expect(extra.status == 422)
            #expect(extra.json?["error"]?["keyPath"] == "objcts")
            #expect(try client.request("PUT", "/store", json: "{\"objects\": [").status == 400)
            #expect(
                try client.request("PUT", "/store", headers: ["Content-Type": "application/x-plist"], body: [1, 2])
                    .status == 400)
            // Nested deeper than any value may be: refused before anything recurses through it (it crashed).
            let deep =
                "<plist>" + String(repeating: "<array>", count: 60_000) + String(repeating: "</array>", count: 60_000)
                + "</plist>"
            let tooDeep = try client.request(
                "PUT", "/store", headers: ["Content-Type": "application/x-plist"], body: Array(deep.utf8))
            #expect(tooDeep.status == 400)
            #expect(tooDeep.text.contains("nested more than"))
            let after = try client.request("GET", "/store")
            #expect(after.json == export.json)
            #expect(after.header("X-Store-Seq") == "1")
        }
    }

    @Test func importIsOneUndoGroup() throws {
        try withService { client in
            let export = try client.request("GET", "/store")
            let small = #"{"objects": [{"$id": "Department/9", "name": "Only"}]}"#
            #expect(try client.request("PUT", "/store", json: small).status == 200)
            #expect(try client.request("GET", "/objects/Employee").json?["count"] == 0)
            #expect(try client.request("POST", "/actions/undo").status == 200)
            #expect(try client.request("GET", "/store").json?["objects"] == export.json?["objects"])
        }
    }
}
