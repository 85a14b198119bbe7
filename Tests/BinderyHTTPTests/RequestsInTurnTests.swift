import Bindery
import BinderyHTTP
import Dispatch
import Foundation
import HTTPTestSupport
import PropertyList
import Synchronization
import Testing

/// Requests that take the controllers' lock are carried out in turn on the service's queue, off the request threads
/// (`BinderyService.answeredInTurn`), once the store or a controller holds more than 1,000 objects.
struct RequestsInTurnTests {
    @Test func controllerAndActionRequestsWaitForTheirTurnWithoutHoldingTheRequestThreads() throws {
        try withServiceParts { client, _, service in
            try ObjectRoutesTests.addEmployeesAndAController(1_000, client: client)
            let held = DispatchSemaphore(value: 0)
            service.controllerRequests.async { held.wait() }
            // More than the server's two request threads: on them, these would hold both.
            let answers = asking(
                [
                    ("GET", "/controllers", nil),
                    ("PUT", "/controllers/employees/selectionIndexes", "[1]"),
                    ("POST", "/controllers/employees/rearrangeObjects", nil),
                    ("GET", "/actions", nil),
                    ("GET", "/controllers/nobody/selectionIndexes", nil),
                ], client: client)
            #expect(answers(0.5) == nil, "answered on a request thread")
            // (A `try` outside `#expect`: the closure is inferred as throwing only from one.)
            let health = try client.request("GET", "/healthz")
            #expect(health.status == 200)
            #expect(try client.request("GET", "/objects/Employee/1").status == 200)
            held.signal()
            #expect(answers(30) == [200, 200, 200, 200, 404])
            #expect(try client.request("GET", "/controllers/employees/selectionIndexes").json == [1])
        }
    }

    /// A poll of an observer waiting for its turn keeps the observer in use, as a poll waiting for changes does: it
    /// does not expire meanwhile, however long the controllers' work before it takes, and its TTL counts from then.
    @Test func anObserverWhosePollWaitsForItsTurnDoesNotExpire() throws {
        try withServiceParts(observation: .init(observerTTL: 1)) { client, _, service in
            try ObjectRoutesTests.addEmployeesAndAController(1_000, client: client)
            let created = try client.request(
                "POST", "/observers", json: #"{"target": "controllers/all", "keyPath": "selectionIndexes"}"#)
            let id = try #require(created.json?["id"]?.stringValue)
            let held = DispatchSemaphore(value: 0)
            service.controllerRequests.async { held.wait() }
            let answers = asking([("GET", "/observers/\(id)/changes?timeout=0", nil)], client: client)
            #expect(answers(2.5) == nil, "answered on a request thread")
            held.signal()
            #expect(answers(30) == [200])
            #expect(try client.request("GET", "/observers/\(id)/changes?timeout=0").status == 200)
        }
    }

    /// Only a poll of an observer of a controller or the defaults waits in turn (it lets the controllers apply the
    /// commits so far first): one of an object's key path does not wait behind the controllers' work, even while
    /// another observer watches a controller.
    @Test func aPollOfAnObjectsObserverDoesNotWaitBehindTheControllers() throws {
        try withServiceParts { client, _, service in
            try ObjectRoutesTests.addEmployeesAndAController(1_000, client: client)
            let ofController = try #require(
                try client.request(
                    "POST", "/observers", json: #"{"target": "controllers/all", "keyPath": "selectionIndexes"}"#
                ).json?["id"]?.stringValue)
            let ofObject = try client.request(
                "POST", "/observers", json: #"{"target": "Employee/1", "keyPath": "firstName", "options": ["new"]}"#)
            let id = try #require(ofObject.json?["id"]?.stringValue)
            let since = try #require(ofObject.json?["since"]?.integerValue)
            let held = DispatchSemaphore(value: 0)
            service.controllerRequests.async { held.wait() }
            defer { held.signal() }
            let waiting = asking([("GET", "/observers/\(ofController)/changes?timeout=0", nil)], client: client)
            #expect(try client.request("PUT", "/objects/Employee/1/firstName", json: #""Renamed""#).status == 200)
            let answer = try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=5")
            #expect(answer.status == 200)
            #expect(answer.json?["changes"]?.arrayValue?.compactMap { $0["new"] } == ["Renamed"])
            #expect(waiting(0.5) == nil, "the controller's observer was answered on a request thread")
            held.signal()
            #expect(waiting(30) == [200])
        }
    }

    /// While the request first in line has waited past the line's patience, a new one is refused at once (`503
    /// server-busy`, `Retry-After`), not queued behind it, even if no request's turn has come yet (a burst sent at
    /// once); a line whose first request has waited less takes requests. `/metrics` counts those waiting.
    @Test func aLineWhoseFirstRequestHasWaitedLongRefusesNewOnes() throws {
        try withServiceParts(turnPatience: 1) { client, _, service in
            try ObjectRoutesTests.addEmployeesAndAController(1_000, client: client)
            func waiting() -> String? {
                (try? client.request("GET", "/metrics"))?.text.split(separator: "\n")
                    .first { $0.hasPrefix("bindery_requests_waiting_turn{line=\"controller-requests\"}") }
                    .map { String($0.split(separator: " ").last ?? "") }
            }
            func expectWaiting(_ count: Int) {
                var now = waiting()
                for _ in 0..<200 where now != String(count) {
                    usleep(10_000)
                    now = waiting()
                }
                #expect(now == String(count))
            }
            let held = DispatchSemaphore(value: 0)
            service.controllerRequests.async { held.wait() }
            let first = asking([("PUT", "/controllers/all/selectionIndexes", "[1]")], client: client)
            expectWaiting(1)
            // A second request just after the first is taken.
            let second = asking([("PUT", "/controllers/all/selectionIndexes", "[2]")], client: client)
            expectWaiting(2)
            usleep(1_300_000)
            // The first has waited past the patience: a new one is refused, with no turn come yet.
            let refused = try? TestHTTPClient(port: client.port, timeout: 3).request(
                "PUT", "/controllers/all/selectionIndexes", json: "[3]")
            #expect(refused?.status == 503 && refused?.errorCode == "server-busy", "\(refused?.text ?? "no answer")")
            #expect(refused?.header("Retry-After") == "1")
            #expect(try client.request("GET", "/healthz").status == 200)
            held.signal()
            #expect(first(30) == [200])
            #expect(second(30) == [200])
            expectWaiting(0)
            #expect(try client.request("PUT", "/controllers/all/selectionIndexes", json: "[4]").status == 200)
            #expect(try client.request("GET", "/controllers/all/selectionIndexes").json == [4])
        }
    }

    /// A repeat of an answered request (its `Idempotency-Key`) does no work: it is answered at once, not kept waiting
    /// for its turn behind others (nor refused while the line is long).
    @Test func aRepeatOfAnAnsweredRequestDoesNotWaitItsTurn() throws {
        try withServiceParts { client, _, service in
            try ObjectRoutesTests.addEmployeesAndAController(1_000, client: client)
            let key = ["Idempotency-Key": "select-7"]
            let answered = try client.request("PUT", "/controllers/all/selectionIndexes", headers: key, json: "[7]")
            #expect(answered.status == 200)
            let held = DispatchSemaphore(value: 0)
            service.controllerRequests.async { held.wait() }
            defer { held.signal() }
            let again = try? TestHTTPClient(port: client.port, timeout: 3).request(
                "PUT", "/controllers/all/selectionIndexes", headers: key, json: "[7]")
            #expect(again?.status == 200)
            #expect(again?.header("Idempotent-Replayed") == "true")
        }
    }

    @Test func withOnlySmallControllersTheyAreAnsweredOnTheRequestThreads() throws {
        try withServiceParts { client, _, service in
            let held = DispatchSemaphore(value: 0)
            service.controllerRequests.async { held.wait() }
            defer { held.signal() }
            let answers = asking(
                [("PUT", "/controllers/employees/selectionIndexes", "[1]"), ("GET", "/actions", nil)], client: client)
            #expect(answers(10) == [200, 200])
        }
    }

    /// A store of more than 1,000 objects whose controllers are all small (the fixture's departments and their
    /// employees, and a department "Zz" of 1,000 employees not selected): a request may fill a controller with any of
    /// them (selecting Zz fills `employees`), so it waits for its turn, as do polls that let the controllers catch up
    /// first; a client gone by its turn is not worked for.
    @Test func inALargeStoreRequestsThatMayFillAControllerWaitForTheirTurn() throws {
        let fixture = FileManager.default.temporaryDirectory.appendingPathComponent("bindery-turn-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: fixture) }
        try FileManager.default.copyItem(atPath: packageRoot + "/Fixtures/employees", toPath: fixture)
        let controllers =
            #"{"controllers": [{"name": "departments", "kind": "array", "content": "Department"}, "#
            + #"{"name": "employees", "kind": "array", "content": "@departments.selection.employees"}]}"#
        try Data(controllers.utf8).write(to: URL(fileURLWithPath: fixture + "/controllers.json"))
        try withServiceParts(document: try Document(fixtureDirectory: fixture)) { client, server, service in
            let zz = try client.request("POST", "/objects/Department", json: #"{"name": "Zz"}"#)
            let department = try #require(zz.header("Location")?.split(separator: "/").last)
            for index in 0..<1_000 {
                let body =
                    #"{"firstName": "F", "lastName": "L\#(index)", "department": {"$ref": "Department/\#(department)"}}"#
                #expect(try client.request("POST", "/objects/Employee", json: body).status == 201)
            }
            service.controllers.synchronize()
            #expect(service.controllers.largestControllerSize < 1_000)
            let zzIndex = try #require(
                try client.request("GET", "/controllers/departments/arrangedObjects.name").json?.arrayValue?
                    .firstIndex(of: "Zz"))
            let held = DispatchSemaphore(value: 0)
            service.controllerRequests.async { held.wait() }
            // A client that leaves before its turn: its selection is not made.
            let gone = try client.connect()
            try client.send(
                client.keptAliveRequest(
                    "PUT", "/controllers/departments/selectionIndexes", body: Array("[\(zzIndex)]".utf8)), on: gone)
            let deadline = Date().addingTimeInterval(10)
            while server.suspendedCount == 0, Date() < deadline { usleep(1_000) }
            close(gone)
            let answers = asking(
                [
                    ("GET", "/notifications?since=0&timeout=0", nil),
                    ("GET", "/controllers/departments/selectionIndexes", nil),
                ], client: client)
            #expect(answers(0.5) == nil, "answered on a request thread")
            held.signal()
            #expect(answers(30) == [200, 200])
            // The gone client was answered `499 client-gone`, which `/metrics` counts with the 4xx (README: "which
            // `/metrics` counts with the 4xx"), not as a server error.
            let metrics = try client.request("GET", "/metrics").text
            #expect(metrics.contains("bindery_http_responses_total{class=\"5xx\"} 0\n"), "\(metrics)")
            #expect(try client.request("GET", "/controllers/employees/arrangedObjects/@count").json != 1_000)
        }
    }

    @Test func aRequestStillWaitingWhenTheServerStopsIsNotCarriedOut() throws {
        try withServiceParts { client, server, service in
            let held = DispatchSemaphore(value: 0)
            service.controllerRequests.async { held.wait() }
            let answer = Mutex<TestResponse?>(nil)
            let answered = DispatchSemaphore(value: 0)
            Thread {
                // A creation always waits for its turn (its content may be large).
                let body = #"{"name": "all", "kind": "array", "content": "Employee"}"#
                let response = try? client.request("POST", "/controllers", json: body)
                answer.withLock { $0 = response }
                answered.signal()
            }.start()
            let deadline = Date().addingTimeInterval(10)
            while server.suspendedCount == 0, Date() < deadline { usleep(1_000) }
            #expect(server.suspendedCount == 1)
            server.stop()
            #expect(answered.wait(timeout: .now() + 10) == .success)
            let response = try #require(answer.withLock { $0 })
            #expect(response.status == 503)
            #expect(response.errorCode == "shutting-down")
            held.signal()
            service.controllerRequests.sync {}
            #expect(!service.controllers.contains("all"))
        }
    }
}
