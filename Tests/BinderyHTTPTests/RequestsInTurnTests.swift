import BinderyHTTP
import Dispatch
import Foundation
import HTTPTestSupport
import PropertyList
import Synchronization
import Testing

/// Requests on `/controllers` and `/actions` are carried out in turn on the service's queue, off the request threads
/// (`BinderyService.answeredInTurn`), once a controller arranges more than 1,000 objects.
struct RequestsInTurnTests {
    /// Asks each of `requests` (method, path, JSON body) on a thread of its own; answers the statuses, once all are in.
    private static func asking(
        _ requests: [(String, String, String?)], client: TestHTTPClient
    ) -> @Sendable (_ timeout: Double) -> [Int]? {
        let statuses = Mutex([Int](repeating: 0, count: requests.count))
        let answered = DispatchSemaphore(value: 0)
        for (index, (method, path, body)) in requests.enumerated() {
            Thread {
                let answer =
                    try? body.map { try client.request(method, path, json: $0) } ?? client.request(method, path)
                statuses.withLock { $0[index] = answer?.status ?? -1 }
                answered.signal()
            }.start()
        }
        return { timeout in
            for _ in requests where answered.wait(timeout: .now() + timeout) == .timedOut { return nil }
            return statuses.withLock { $0 }
        }
    }

    @Test func controllerAndActionRequestsWaitForTheirTurnWithoutHoldingTheRequestThreads() throws {
        try withServiceParts { client, _, service in
            try ObjectRoutesTests.addEmployeesAndAController(1_000, client: client)
            let held = DispatchSemaphore(value: 0)
            service.controllerRequests.async { held.wait() }
            // More than the server's two request threads: on them, these would hold both.
            let answers = Self.asking(
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

    @Test func withOnlySmallControllersTheyAreAnsweredOnTheRequestThreads() throws {
        try withServiceParts { client, _, service in
            let held = DispatchSemaphore(value: 0)
            service.controllerRequests.async { held.wait() }
            defer { held.signal() }
            let answers = Self.asking(
                [("PUT", "/controllers/employees/selectionIndexes", "[1]"), ("GET", "/actions", nil)], client: client)
            #expect(answers(10) == [200, 200])
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
