import Bindery
import Foundation
import GraphTestSupport
import HTTPTestSupport
import PropertyList
import Synchronization
import Testing

/// Random requests drawn from the API's own routes with odd ids, key paths, bodies and headers (API.md §2: no
/// request may crash the server, corrupt the store or leave a partial change applied).
struct RandomRequests {
    typealias Request = (method: String, path: String, headers: [String: String], body: [UInt8]?)

    var random: SeededGenerator

    private mutating func pick<T>(_ choices: [T]) -> T { choices.randomElement(using: &random)! }
    private mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }

    private static let entities = ["Employee", "Department", "Nope", "Employee%00", "%2e%2e", "employee"]
    private static let ids = ["1", "2", "3", "5", "0", "-1", "abc", "99999", "%ff", "1.5"]
    private static let keyPaths = [
        "firstName", "salary", "hireDate", "active", "department", "department.name", "manager", "directReports",
        "employees", "employees.@count", "employees.@avg.salary", "manager.manager.firstName", "@sum", "a.b.c",
        "headcount", "payroll", "departmentName", "budget", "name", String(repeating: "x", count: 300),
        "directReports/0", "employees/-1", "employees/99999999999999999999",
    ]
    private static let controllers = ["employees", "departments", "nope", "employees%2F.."]
    private static let controllerParts = [
        "", "/selection", "/selection/firstName", "/selection/salary", "/arrangedObjects", "/arrangedObjects/lastName",
        "/edits", "/edits/salary", "/selectedObjects", "/selectionIndexes", "/sortDescriptors", "/filterPredicate",
        "/add", "/remove", "/insert", "/commitEditing", "/discardEditing", "/selectNext", "/selectPrevious",
    ]

    mutating func path() -> String {
        let entity = pick(Self.entities)
        let id = pick(Self.ids)
        let keyPath = pick(Self.keyPaths)
        switch Int.random(in: 0..<16, using: &random) {
        case 0: return "/objects/\(entity)"
        case 1:
            return "/objects/\(entity)?"
                + pick(["filter=salary%20%3E%2010", "sort=-salary", "limit=-1", "keys=", "offset=x"])
        case 2, 3: return "/objects/\(entity)/\(id)"
        case 4, 5, 6: return "/objects/\(entity)/\(id)/\(keyPath)"
        case 7: return "/controllers"
        case 8, 9: return "/controllers/\(pick(Self.controllers))\(pick(Self.controllerParts))"
        case 10:
            return pick(["/observers", "/observers/o1", "/observers/o999", "/observers/o1/changes?since=1&timeout=0"])
        case 11: return "/changes?since=\(pick(["0", "1", "-1", "x", "99999999999999999999"]))&timeout=0"
        case 12: return pick(["/actions", "/actions/undo", "/actions/redo", "/actions/save", "/actions/revertToSaved"])
        case 13: return pick(["/actions/nope", "/actions/add", "/actions/remove", "/actions/selectNext"])
        case 14: return pick(["/defaults", "/defaults/\(keyPath)", "/notifications?timeout=0", "/store", "/metrics"])
        default: return pick(["/healthz", "/", "/index.html", "/../etc/passwd", "/%2e%2e/x", "//", "/objects/%ZZ"])
        }
    }

    mutating func value(depth: Int = 0) -> String {
        switch Int.random(in: 0..<14, using: &random) {
        case 0: return "null"
        case 1: return pick(["true", "false"])
        case 2: return String(Int64.random(in: .min ... .max, using: &random))
        case 3: return pick(["0.5", "-1e308", "1e-300", "3.0", "-0.0"])
        case 4:
            return pick([#""""#, #""Ada""#, #""é\u00e9""#, "\"\(String(repeating: "y", count: 90))\"", #""\ud800""#])
        case 5: return pick([#"{"$date": "2020-01-01T00:00:00.000Z"}"#, #"{"$date": "bad"}"#, #"{"$data": "aGk="}"#])
        case 6: return pick([#"{"$ref": "Employee/2"}"#, #"{"$ref": "Department/2"}"#, #"{"$ref": "Nope/1"}"#])
        case 7: return pick([#"{"$ref": "Employee/999"}"#, #"{"$ref": 3}"#, #"{"$bogus": 1}"#])
        case 8 where depth < 3:
            return "["
                + (0..<Int.random(in: 0..<4, using: &random)).map { _ in value(depth: depth + 1) }
                .joined(separator: ",") + "]"
        case 9 where depth < 3:
            let keys = ["firstName", "lastName", "salary", "department", "name", "$id", "key", "ascending", "target"]
            return "{"
                + (0..<Int.random(in: 0..<5, using: &random)).map { _ in
                    "\"\(pick(keys))\": \(value(depth: depth + 1))"
                }.joined(separator: ",") + "}"
        case 10:
            return pick([
                #""salary > 5 AND""#, #""department.name BEGINSWITH 'E'""#, #""ANY employees.salary > 1""#,
                #""((((""#, #""firstName MATCHES '['""#,
            ])
        case 11: return #"[{"key": "salary", "ascending": false}, {"key": "lastName"}]"#
        default: return String(Int.random(in: -5...200_000, using: &random))
        }
    }

    mutating func body() -> [UInt8] {
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return []
        case 1:
            return (0..<Int.random(in: 1..<200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        case 2: return Array(#"{"a": 1, "a": 2}"#.utf8)
        case 3: return Array("[1, 2".utf8)
        case 4: return Array(#""\u0000""#.utf8)
        case 5: return Array("123456789012345678901234567890".utf8)
        case 6: return Array((String(repeating: "[", count: 3000) + String(repeating: "]", count: 3000)).utf8)
        default: return Array(value().utf8)
        }
    }

    /// A request that often succeeds, so that the run commits changes of every kind (sets, relationship edits,
    /// inserts, deletes, undo, controller edits) for the consistency check to look at.
    mutating func plausibleRequest() -> Request {
        let employee = "Employee/\(Int.random(in: 1...34, using: &random))"
        let department = "Department/\(Int.random(in: 1...6, using: &random))"
        let reference = #"{"$ref": "\#(chance(0.5) ? employee : department)"}"#
        let attribute = pick([
            ("salary", String(Int.random(in: -10...300_000, using: &random))), ("firstName", #""Grace""#),
            ("lastName", pick([#""""#, #""Hopper""#])), ("active", "false"),
            ("hireDate", #"{"$date": "2021-05-01T00:00:00.000Z"}"#),
            ("manager", chance(0.2) ? "null" : reference), ("department", chance(0.1) ? "null" : reference),
        ])
        switch Int.random(in: 0..<12, using: &random) {
        case 0, 1, 2:
            return ("PUT", "/objects/\(employee)/\(attribute.0)", [:], Array(attribute.1.utf8))
        case 3:
            let body = #"{"firstName": "New", "lastName": "Hire", "salary": 10, "department": \#(reference)}"#
            return ("POST", "/objects/Employee", [:], Array(body.utf8))
        case 4:
            return (
                "PATCH", "/objects/\(employee)", [:], Array("{\"\(attribute.0)\": \(attribute.1), \"salary\": 7}".utf8)
            )
        case 5:
            return ("DELETE", "/objects/\(chance(0.8) ? employee : department)", [:], nil)
        case 6:
            return ("POST", "/objects/\(department)/employees", [:], Array(reference.utf8))
        case 7:
            let index = Int.random(in: 0...3, using: &random)
            return (
                "DELETE", "/objects/\(chance(0.5) ? department + "/employees" : employee + "/directReports")/\(index)",
                [:], nil
            )
        case 8:
            return ("POST", "/actions/\(pick(["undo", "undo", "redo"]))", [:], Array("{}".utf8))
        case 9:
            return (
                "PUT", "/controllers/employees/selectionIndexes", [:],
                Array("[\(Int.random(in: 0...3, using: &random))]".utf8)
            )
        case 10:
            return ("PUT", "/controllers/employees/selection/\(attribute.0)", [:], Array(attribute.1.utf8))
        default:
            return (
                "POST", "/controllers/employees/\(pick(["commitEditing", "discardEditing", "remove", "add"]))", [:],
                Array("{}".utf8)
            )
        }
    }

    /// The next request; `PUT /store` is left out because a valid empty graph (`[]`) would end the run's interest.
    mutating func request() -> Request {
        if chance(0.4) { return plausibleRequest() }
        let method = pick(["GET", "GET", "PUT", "PUT", "POST", "POST", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW"])
        var path = path()
        if method == "PUT" && path == "/store" { path = "/objects/Employee" }
        var headers: [String: String] = [:]
        if chance(0.2) { headers["X-First-Responder"] = pick(Self.controllers) }
        if chance(0.15) { headers["If-Match"] = pick([#""1""#, "*", "garbage", #""999999""#]) }
        if chance(0.1) { headers["Accept"] = "application/x-plist" }
        if chance(0.1) { headers["Content-Type"] = pick(["application/x-plist", "text/plain", "application/json"]) }
        let hasBody = ["PUT", "POST", "PATCH"].contains(method) || chance(0.05)
        return (method, path, headers, hasBody ? body() : nil)
    }
}

struct RandomRequestTests {
    /// Every answer is a success or the JSON error of API.md §2 (never a 5xx other than 503), and afterwards the
    /// graph still keeps every relationship's inverse and the model's constraints.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func randomRequestsGetJSONErrorsAndLeaveAConsistentGraph(seed: UInt64) throws {
        try withService { client in
            var requests = RandomRequests(random: SeededGenerator(state: seed))
            var successes = 0
            for index in 0..<600 {
                let (method, path, headers, body) = requests.request()
                let response: TestResponse
                do {
                    response = try client.request(method, path, headers: headers, body: body)
                } catch {
                    let shownBody = body.map { String(decoding: $0.prefix(200), as: UTF8.self) } ?? "none"
                    Issue.record(
                        "seed \(seed) request \(index): \(method) \(path) \(headers) body \(shownBody): \(error)")
                    continue
                }
                let problem = answerProblem(response, method: method)
                #expect(problem == nil, "seed \(seed) request \(index): \(method) \(path): \(problem ?? "")")
                if response.status < 400 { successes += 1 }
            }
            #expect(successes > 50, "seed \(seed): only \(successes) successes, the generator misses the API")
            // Some of them committed: the run changed the graph it then checks.
            let seq = Int(try client.request("GET", "/healthz").header("X-Store-Seq") ?? "") ?? 0
            #expect(seq > 40, "seed \(seed): only \(seq - 1) commits")
            try expectConsistentGraph(client, seed: seed)
        }
    }

    /// Four clients at once (each its own seed) against the two server threads: the same answers, and the graph
    /// stays consistent when commits, controller edits and undo interleave.
    @Test func concurrentRandomRequestsLeaveAConsistentGraph() throws {
        try withService { client in
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                var requests = RandomRequests(random: SeededGenerator(state: 100 + UInt64(worker)))
                for index in 0..<400 {
                    let (method, path, headers, body) = requests.request()
                    let context = "worker \(worker) request \(index): \(method) \(path)"
                    guard let response = try? client.request(method, path, headers: headers, body: body) else {
                        failures.withLock { $0.append("\(context): no answer") }
                        continue
                    }
                    if let problem = answerProblem(response, method: method) {
                        failures.withLock { $0.append("\(context): \(problem)") }
                    }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 }.prefix(10))")
            try expectConsistentGraph(client, seed: 100)
        }
    }

    /// The same kind of run on a data directory with small snapshot intervals: a restart (snapshot + journal
    /// replay) rebuilds exactly the graph and seq that were served.
    @Test(arguments: [UInt64(11), 12])
    func randomChangesSurviveARestartExactly(seed: UInt64) throws {
        try withTemporaryDataDirectory { data in
            let fixture = packageRoot + "/Fixtures/employees"
            let options = Document.Options(fsync: .never, snapshotRecords: 37)
            var before: TestResponse?
            do {  // the first document (and its lock on the directory) goes at the end of this scope
                let first = try Document(fixtureDirectory: fixture, dataDirectory: data, options: options)
                try withService(document: first) { client in
                    var requests = RandomRequests(random: SeededGenerator(state: seed))
                    for _ in 0..<600 {
                        let (method, path, headers, body) = requests.request()
                        _ = try? client.request(method, path, headers: headers, body: body)
                    }
                    before = try client.request("GET", "/store")
                }
                first.close()
            }
            let exported = try #require(before?.json)
            #expect((exported["seq"]?.integerValue ?? 0) > 40)
            let second = try Document(fixtureDirectory: fixture, dataDirectory: data, options: options)
            defer { second.close() }
            try withService(document: second) { client in
                let after = try client.request("GET", "/store").json
                #expect(after == exported, "seed \(seed)")
            }
        }
    }

    /// The checker itself: the fixture passes with references followed, and a one-sided link is caught.
    @Test func graphCheckerFollowsReferencesAndCatchesAOneSidedLink() throws {
        try withService { client in
            let objects = try #require(try client.request("GET", "/store").json?["objects"]?.arrayValue)
            let fixture = graphInconsistencies(objects)
            #expect(fixture.problems.isEmpty)
            #expect(fixture.references > 60)
        }
        let broken: [PropertyListValue] = [
            ["$id": "Department/1", "employees": []],
            ["$id": "Employee/1", "department": ["$ref": "Department/1"]],
            ["$id": "Employee/2", "department": ["$ref": "Department/9"]],
        ]
        #expect(
            graphInconsistencies(broken).problems == [
                "Employee/1.department → Department/1, but Department/1.employees does not point back",
                "Employee/2.department points at missing Department/9",
            ])
    }
}

/// What is wrong with an exported graph (`GET /store`'s `objects`) against the employees model: a relationship whose
/// inverse does not point back, a reference to a missing object, an employee without its required department, a
/// manager with more than 15 direct reports. Also returns how many references it followed.
func graphInconsistencies(_ objects: [PropertyListValue]) -> (problems: [String], references: Int) {
    var byID: [String: [String: PropertyListValue]] = [:]
    var problems: [String] = []
    for object in objects {
        guard let fields = object.dictionaryValue, let id = fields["$id"]?.stringValue else {
            problems.append("an object without $id: \(object)")
            continue
        }
        byID[id] = fields
    }
    func references(_ value: PropertyListValue?) -> [String] {
        switch value {
        case .array(let items)?: items.compactMap { $0["$ref"]?.stringValue }
        case let single?: single["$ref"]?.stringValue.map { [$0] } ?? []
        case nil: []
        }
    }
    // (entity prefix, key, inverse key)
    let pairs = [
        ("Department/", "employees", "department"), ("Employee/", "department", "employees"),
        ("Employee/", "manager", "directReports"), ("Employee/", "directReports", "manager"),
    ]
    var followed = 0
    for (id, fields) in byID.sorted(by: { $0.key < $1.key }) {
        for (prefix, key, inverse) in pairs where id.hasPrefix(prefix) {
            for target in references(fields[key]) {
                followed += 1
                guard let other = byID[target] else {
                    problems.append("\(id).\(key) points at missing \(target)")
                    continue
                }
                if !references(other[inverse]).contains(id) {
                    problems.append("\(id).\(key) → \(target), but \(target).\(inverse) does not point back")
                }
            }
        }
        if id.hasPrefix("Employee/") {
            if references(fields["department"]).count != 1 { problems.append("\(id) has no department") }
            if references(fields["directReports"]).count > 15 { problems.append("\(id) has over 15 reports") }
        }
    }
    return (problems, followed)
}

/// What is wrong with an answer to a random request, or nil: a 5xx other than 503 (and 501 to a method the server
/// does not implement), no `X-Store-Seq`, or an error (other than to HEAD) that is not the JSON of API.md §2 with a
/// `code` and a `message`.
func answerProblem(_ response: TestResponse, method: String) -> String? {
    let shown = "\(response.status) \(response.text.prefix(300))"
    let implemented = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].contains(method)
    if response.status >= 500 && response.status != 503 && (implemented || response.status != 501) {
        return "server error \(shown)"
    }
    if response.header("X-Store-Seq") == nil { return "no X-Store-Seq: \(shown)" }
    if response.status >= 400 && method != "HEAD" {
        let error = response.json?["error"]
        if error?["code"]?.stringValue == nil || error?["message"]?.stringValue == nil {
            return "not a JSON error: \(shown)"
        }
    }
    return nil
}

/// Exports the graph and expects no inconsistency.
func expectConsistentGraph(_ client: TestHTTPClient, seed: UInt64) throws {
    let export = try client.request("GET", "/store")
    #expect(export.status == 200)
    let objects = try #require(export.json?["objects"]?.arrayValue)
    let (problems, _) = graphInconsistencies(objects)
    #expect(problems.isEmpty, "seed \(seed): \(problems.prefix(10))")
}
