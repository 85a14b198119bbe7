import Bindery
import BinderyHTTP
import Foundation
import HTTPServer
import HTTPTestSupport
import PropertyList
import Synchronization
import Testing

/// The package's root folder.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// A fixture folder made of `model` and `data` (`model.json`, `data.json`), removed after `body`.
func withFixture(model: String, data: String, _ body: (_ fixture: String) throws -> Void) throws {
    let fixture = FileManager.default.temporaryDirectory.appendingPathComponent("bindery-fixture-\(UUID())").path
    defer { try? FileManager.default.removeItem(atPath: fixture) }
    try FileManager.default.createDirectory(atPath: fixture, withIntermediateDirectories: true)
    try model.write(toFile: fixture + "/model.json", atomically: true, encoding: .utf8)
    try data.write(toFile: fixture + "/data.json", atomically: true, encoding: .utf8)
    try body(fixture)
}

/// Starts the REST service on a free port with the employees fixture and the repository's Public/ folder.
func withService(
    maxBody: Int = 1 << 20, observation: ObservationCenter.Configuration = .init(), document: Document? = nil,
    observationQueue: DispatchQueue = DispatchQueue(label: "test.observation"),
    _ body: (TestHTTPClient) throws -> Void
) throws {
    try withServiceAndServer(
        maxBody: maxBody, observation: observation, document: document, observationQueue: observationQueue
    ) { client, _ in try body(client) }
}

/// `withService`, with the server too (and its `maxUnsentBytes`).
func withServiceAndServer(
    maxBody: Int = 1 << 20, maxUnsent: Int = 1 << 30, observation: ObservationCenter.Configuration = .init(),
    document: Document? = nil, observationQueue: DispatchQueue = DispatchQueue(label: "test.observation"),
    _ body: (TestHTTPClient, HTTPServer) throws -> Void
) throws {
    try withServiceParts(
        maxBody: maxBody, maxUnsent: maxUnsent, observation: observation, document: document,
        observationQueue: observationQueue
    ) { client, server, _ in try body(client, server) }
}

/// `withServiceAndServer`, with the service too (and its `--cors`).
func withServiceParts(
    maxBody: Int = 1 << 20, maxUnsent: Int = 1 << 30, observation: ObservationCenter.Configuration = .init(),
    document: Document? = nil, observationQueue: DispatchQueue = DispatchQueue(label: "test.observation"),
    cors: String = "*", turnPatience: Double = 30, _ body: (TestHTTPClient, HTTPServer, BinderyService) throws -> Void
) throws {
    let document = try document ?? Document(fixtureDirectory: packageRoot + "/Fixtures/employees")
    let observations = ObservationCenter(document: document, queue: observationQueue, configuration: observation)
    let service = BinderyService(
        configuration: .init(publicDirectory: packageRoot + "/Public", corsOrigin: cors, turnPatience: turnPatience),
        document: document,
        observations: observations)
    let server = HTTPServer(
        configuration: HTTPServerConfiguration(
            host: "127.0.0.1", port: 0, threads: 2, maxBodySize: maxBody, maxUnsentBytes: maxUnsent),
        responder: service)
    try server.start()
    defer {
        observations.answerAllWaiters()
        server.stop()
    }
    try body(TestHTTPClient(port: try #require(server.port)), server, service)
}

extension TestResponse {
    var json: PropertyListValue? { try? PropertyListValue(jsonBytes: body) }
}

/// Asks each of `requests` (method, path, JSON body) on a thread of its own; answers the statuses, once all are in.
func asking(
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

struct ServiceTests {
    @Test func healthzAnswersOKWithStoreSeq() throws {
        try withService { client in
            let response = try client.request("GET", "/healthz")
            #expect(response.status == 200)
            #expect(response.json == ["status": "ok"])
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.header("X-Store-Seq") == "1")
            #expect(response.header("Access-Control-Allow-Origin") == "*")
            // Only a cross-origin request reads Access-Control-Expose-Headers.
            #expect(response.header("Access-Control-Expose-Headers") == nil)
            let crossOrigin = try client.request("GET", "/healthz", headers: ["Origin": "http://example.test"])
            #expect(crossOrigin.header("Access-Control-Expose-Headers")?.contains("X-Store-Seq") == true)
            // The arranged objects' total, for paging (`offset`, `limit`), is readable across origins too.
            #expect(crossOrigin.header("Access-Control-Expose-Headers")?.contains("X-Total-Count") == true)
        }
    }

    /// A method no route takes is 501 wherever it is sent (RFC 9110 §9.1); methods are case-sensitive.
    @Test func anUnknownMethodIs501() throws {
        try withService { client in
            for method in ["BREW", "get", "TRACE"] {
                let response = try client.request(method, "/objects/Employee/4")
                #expect(response.status == 501, "\(method)")
                #expect(response.json?["error"]?["code"] == "not-implemented", "\(method)")
            }
            #expect(try client.request("PUT", "/healthz").status == 405)
        }
    }

    @Test func unknownPathIs404JSON() throws {
        try withService { client in
            let response = try client.request("GET", "/no/such/thing")
            #expect(response.status == 404)
            #expect(response.json?["error"]?["code"] == "not-found")
            #expect(response.json?["error"]?["message"]?.stringValue?.isEmpty == false)
            #expect(response.header("X-Store-Seq") == "1")
            let post = try client.request("POST", "/no/such/thing", json: "{}")
            #expect(post.status == 404)
        }
    }

    @Test func wrongMethodIs405WithAllow() throws {
        try withService { client in
            let response = try client.request("DELETE", "/healthz")
            #expect(response.status == 405)
            // OPTIONS too: every path answers it (RFC 9110 §10.2.1: Allow lists what the resource supports).
            #expect(response.header("Allow") == "GET, HEAD, OPTIONS")
            #expect(response.json?["error"]?["code"] == "method-not-allowed")
            #expect(response.json?["error"]?["allowed"] == ["GET", "HEAD", "OPTIONS"])
        }
    }

    @Test func oversizedBodyIs413JSON() throws {
        try withService(maxBody: 64) { client in
            let response = try client.request("PUT", "/healthz", body: [UInt8](repeating: 32, count: 65))
            #expect(response.status == 413)
            #expect(response.json?["error"]?["code"] == "body-too-large")
            #expect(try client.request("GET", "/healthz").status == 200)
        }
    }

    /// With `--cors` naming an origin, a page of another origin cannot write through a browser's form POST (which
    /// needs no preflight and is read as JSON): 403, nothing done. Without `Origin` (curl), from the allowed origin
    /// and from the server's own (the demo page) writes go through; reads are answered as before.
    @Test func aRestrictedCORSOriginRefusesOtherPagesWrites() throws {
        try withServiceParts(cors: "http://good.example") { client, server, _ in
            let form = ["Content-Type": "application/x-www-form-urlencoded"]
            let body = Array(#"{"firstName": "E", "lastName": "Forged", "department": {"$ref": "Department/1"}}"#.utf8)
            let own = "http://127.0.0.1:\(try #require(server.port))"
            for (origin, status) in [
                ("http://evil.example", 403), ("null", 403), ("http://good.example", 201), (own, 201), (nil, 201),
            ] {
                var headers = form
                headers["Origin"] = origin
                let answer = try client.request("POST", "/objects/Employee", headers: headers, body: body)
                #expect(answer.status == status, "\(origin ?? "no Origin"): \(answer.text)")
                if status == 403 {
                    #expect(answer.errorCode == "forbidden-origin")
                    #expect(answer.header("Access-Control-Allow-Origin") == "http://good.example")
                }
            }
            // Default ports written out (a proxy's `Host`, an origin with `:80`) are the same origin.
            let port = try #require(server.port)
            for (origin, host) in [
                ("http://good.example:80", "127.0.0.1:\(port)"), ("HTTP://Own.Example", "own.example:80"),
            ] {
                let answer = try client.request(
                    "POST", "/objects/Employee",
                    headers: ["Origin": origin, "Host": host, "Content-Type": form["Content-Type"]!],
                    body: body)
                #expect(answer.status == 201, "\(origin) with Host \(host): \(answer.text)")
            }
            let evil = ["Origin": "http://evil.example"]
            #expect(try client.request("DELETE", "/objects/Employee/4", headers: evil).status == 403)
            #expect(try client.request("POST", "/actions/revertToSaved", headers: evil).status == 403)
            #expect(try client.request("GET", "/objects/Employee/4", headers: evil).status == 200)
            let forged = try client.request("GET", "/objects/Employee?filter=lastName%20==%20'Forged'")
            #expect(forged.json?["count"] == 5)
        }
        // The default `*` lets every origin write, as it lets every origin read the answers.
        try withServiceParts { client, _, _ in
            let answer = try client.request(
                "POST", "/objects/Employee", headers: ["Origin": "http://evil.example"],
                json: #"{"firstName": "A", "lastName": "B", "department": {"$ref": "Department/1"}}"#)
            #expect(answer.status == 201)
        }
    }

    @Test func answersHeldForSlowReadersGiveServerBusyJSON() throws {
        // The HTTP layer's budget itself is tested in HTTPServerTests; this is the answer the service gives then.
        let document = try Document(fixtureDirectory: packageRoot + "/Fixtures/employees")
        let service = BinderyService(
            configuration: .init(publicDirectory: packageRoot + "/Public", corsOrigin: "*"), document: document,
            observations: ObservationCenter(document: document, queue: DispatchQueue(label: "test.busy")))
        let response = service.respondToUnsentLimit(limit: 1000, held: 600)
        #expect(response.status == 503)
        #expect(response.headers.contains { $0.name == "Retry-After" && $0.value == "1" })
        guard case .bytes(let body) = response.body else {
            Issue.record("no body")
            return
        }
        let json = try PropertyListValue(jsonBytes: body)
        #expect(json["error"]?["code"] == "server-busy")
        #expect(json["error"]?["message"]?.stringValue?.contains("holds 600 bytes") == true)
        #expect(json["error"]?["message"]?.stringValue?.contains("limit of 1000") == true)
    }

    @Test func undecodablePathIs400JSON() throws {
        try withService { client in
            let response = try client.request("GET", "/objects/%FF%FE")
            #expect(response.status == 400)
            #expect(response.json?["error"]?["code"] == "bad-path")
        }
    }

    /// A body in a content coding is refused (RFC 9110 §8.4: 415 with `Accept-Encoding`), not read as JSON;
    /// `identity` is the body as it is.
    @Test func encodedBodiesAre415() throws {
        try withService { client in
            for coding in ["gzip", "br", "identity, gzip", "x-custom"] {
                let response = try client.request(
                    "PUT", "/objects/Employee/4/salary", headers: ["Content-Encoding": coding], json: "150011")
                #expect(response.status == 415, "\(coding)")
                #expect(response.json?["error"]?["code"] == "unsupported-media-type")
                #expect(response.header("Accept-Encoding") == "identity")
            }
            #expect(try client.request("GET", "/objects/Employee/4/salary").json != 150011)
            // Nothing is encoded in a request without a body.
            #expect(try client.request("GET", "/healthz", headers: ["Content-Encoding": "gzip"]).status == 200)
            let identity = try client.request(
                "PUT", "/objects/Employee/4/salary", headers: ["Content-Encoding": "Identity"], json: "150011")
            #expect(identity.status == 200)
        }
    }

    /// A query that does not decode is refused as such, not read as a key or predicate spelled U+FFFD; a U+FFFD sent
    /// on purpose is an ordinary character.
    @Test func undecodableQueryIs400BadQuery() throws {
        try withService { client in
            for target in [
                "/objects/Employee?filter=lastName%20%3D%3D%20%27ab%FF%27", "/objects/Employee?sort=lastName%FF",
                "/objects/Employee?%C3=1", "/healthz?x=%E2%82",
            ] {
                let response = try client.request("GET", target)
                #expect(response.status == 400, "\(target)")
                #expect(response.json?["error"]?["code"] == "bad-query", "\(target)")
            }
            let replacement = try client.request("GET", "/objects/Employee?filter=lastName%20%3D%3D%20%27%EF%BF%BD%27")
            #expect(replacement.status == 200)
            #expect(replacement.json?["count"] == 0)
            // Decoded as a form (WHATWG): a `%` without two hex digits is itself.
            for target in ["/objects/Employee?filter=lastName%20%3D%3D%20%27100%%27", "/healthz?x=%zz&y=%", "/?q=%2"] {
                #expect(try client.request("GET", target).status == 200, "\(target)")
            }
            #expect(
                try client.request("GET", "/objects/Employee?filter=lastName%20BEGINSWITH%20%27Hop%%27").json?["count"]
                    == 0)
            #expect(
                try client.request("GET", "/objects/Employee?filter=lastName%20BEGINSWITH%20%27Hop%27").json?["count"]
                    == 1)
        }
    }

    @Test func servesTheIndexPage() throws {
        try withService { client in
            let response = try client.request("GET", "/")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "text/html; charset=utf-8")
            #expect(response.header("ETag") != nil)
            #expect(response.text.contains("Bindery"))
            let head = try client.request("HEAD", "/healthz")
            #expect(head.status == 200)
        }
    }

    @Test func preflightListsTheRoutesMethods() throws {
        try withService { client in
            let response = try client.request(
                "OPTIONS", "/healthz",
                headers: ["Origin": "http://example.test", "Access-Control-Request-Method": "GET"])
            #expect(response.status == 204)
            #expect(response.header("Access-Control-Allow-Methods")?.contains("GET") == true)
            #expect(response.header("Access-Control-Allow-Origin") == "*")
            // Every method of the path, whatever the preflight asks about.
            for asked in [nil, "DELETE", "PUT"] {
                let store = try client.request(
                    "OPTIONS", "/store", headers: asked.map { ["Access-Control-Request-Method": $0] } ?? [:])
                #expect(store.header("Allow") == "GET, PUT, HEAD, OPTIONS", "\(asked ?? "none")")
            }
            let object = try client.request("OPTIONS", "/objects/Employee/1")
            #expect(object.header("Allow")?.split(separator: ",").count ?? 0 > 3)
            #expect(try client.request("OPTIONS", "/app.js").header("Allow") == "GET, HEAD, OPTIONS")
        }
    }

    @Test func allowListsDeleteOnlyForAnIndexedPath() throws {
        try withService { client in
            let attribute = try client.request("DELETE", "/objects/Employee/1/firstName")
            #expect(attribute.status == 405)
            #expect(attribute.header("Allow") == "GET, PUT, POST, HEAD, OPTIONS")
            #expect(
                try client.request("OPTIONS", "/objects/Employee/1/lastName").header("Allow")?.contains("DELETE")
                    == false)
            let indexed = try client.request("OPTIONS", "/objects/Department/1/employees/0")
            #expect(indexed.header("Allow")?.contains("DELETE") == true)
            let tooFar = try client.request("DELETE", "/objects/Department/1/employees/99999999999999999999")
            #expect(tooFar.status == 400)  // as `?index=` beyond 64 bits: an integer JSON would refuse (API.md §1)
            #expect(tooFar.errorCode == "bad-path")
            let insertTooFar = try client.request(
                "POST", "/objects/Department/1/employees?index=99999999999999999999", json: #"{"$ref": "Employee/1"}"#)
            #expect(insertTooFar.status == 400)
            let outOfRange = try client.request("DELETE", "/objects/Department/1/employees/9223372036854775807")
            #expect(outOfRange.status == 422)
            #expect(outOfRange.json?["error"]?["object"] == "Department/1")
            #expect(try client.request("GET", "/objects/Employee/1/firstName").status == 200)
        }
    }

    /// A method a path does not take is 405, but under a controller that does not exist there is nothing: 404, as the
    /// path's own method answers.
    @Test func aWrongMethodUnderAMissingControllerIs404() throws {
        try withService { client in
            for (method, path) in [("GET", "/controllers/nope/add"), ("DELETE", "/controllers/nope/selection")] {
                let missing = try client.request(method, path)
                #expect(missing.status == 404, "\(method) \(path)")
                #expect(missing.errorCode == "no-such-controller")
            }
            #expect(try client.request("POST", "/controllers/nope/add").errorCode == "no-such-controller")
            // Nor is a malformed body answered first.
            for (path, body) in [
                ("/controllers/nope/selectionIndexes", "{}"), ("/controllers/nope/sortDescriptors", "{}"),
            ] {
                #expect(try client.request("PUT", path, json: body).errorCode == "no-such-controller", "\(path)")
            }
            let wrong = try client.request("GET", "/controllers/employees/add")
            #expect(wrong.status == 405)
            #expect(wrong.header("Allow") == "POST, OPTIONS")
        }
    }

    @Test func aWriteToAStaticFileIs405() throws {
        try withService { client in
            for (method, path) in [("POST", "/app.js"), ("PUT", "/index.html"), ("POST", "/"), ("DELETE", "/app.js")] {
                let answer = try client.request(method, path, body: Array("{}".utf8))
                #expect(answer.status == 405, "\(method) \(path)")
                #expect(answer.header("Allow") == "GET, HEAD, OPTIONS")
                #expect(answer.errorCode == "method-not-allowed")
            }
            #expect(try client.request("POST", "/nothing-here.js").status == 404)
        }
    }
}

struct RouterTests {
    /// The routed request for `method path`, or nil (recorded as an issue) when no route takes it.
    private func route(_ router: Router, _ method: String, _ path: String) -> RouteRequest? {
        let request = HTTPRequest(method: method, rawPath: path)
        guard case .found(_, let routed) = router.match(request, segments: request.pathSegments!) else {
            Issue.record("no match for \(method) \(path)")
            return nil
        }
        return routed
    }

    /// The methods a 405 for `method path` allows, or nil (recorded as an issue) when it is not a 405.
    private func allowed(_ router: Router, _ method: String, _ path: String) -> [String]? {
        let request = HTTPRequest(method: method, rawPath: path)
        guard case .methodNotAllowed(let allowed) = router.match(request, segments: request.pathSegments!) else {
            Issue.record("expected 405 for \(method) \(path)")
            return nil
        }
        return allowed
    }

    @Test func bindsParametersAndRest() throws {
        var router = Router()
        router.add("GET", "/objects/:entity") { _ in .response(HTTPResponse(status: 1)) }
        router.add("GET", "/objects/:entity/:id/*keyPath") { _ in .response(HTTPResponse(status: 2)) }
        router.add("PUT", "/objects/:entity/:id/*keyPath") { _ in .response(HTTPResponse(status: 3)) }
        let routed = try #require(route(router, "GET", "/objects/Employee/42/department/name"))
        #expect(routed.parameter("entity") == "Employee")
        #expect(routed.parameter("id") == "42")
        #expect(routed.rest("keyPath") == ["department", "name"])
        #expect(allowed(router, "DELETE", "/objects/Employee/42/name") == ["GET", "PUT", "HEAD"])
        let none = HTTPRequest(method: "GET", rawPath: "/objects")
        guard case .notFound = router.match(none, segments: none.pathSegments!) else {
            Issue.record("expected no route")
            return
        }
    }

    @Test func aParameterWithWordsMatchesOnlyThem() throws {
        var router = Router()
        router.add("POST", "/controllers/:name/:action(add|remove)") { _ in .response(HTTPResponse(status: 1)) }
        router.add("GET", "/controllers/:name/*keyPath") { _ in .response(HTTPResponse(status: 2)) }
        let routed = try #require(route(router, "POST", "/controllers/people/add"))
        #expect(routed.parameter("action") == "add")
        #expect(routed.parameter("name") == "people")
        #expect(allowed(router, "POST", "/controllers/people/arrangedObjects") == ["GET", "HEAD"])
    }

    /// `*name(!a|b)`: the rest may not start with these words, so an action's path allows only the action's method.
    @Test func aRestWithExcludedWordsLeavesThemToOtherRoutes() throws {
        var router = Router()
        router.add("POST", "/controllers/:name/:action(add|remove)") { _ in .response(HTTPResponse(status: 1)) }
        router.add("GET", "/controllers/:name/*keyPath(!add|remove)") { _ in .response(HTTPResponse(status: 2)) }
        #expect(allowed(router, "GET", "/controllers/people/add") == ["POST"])
        #expect(allowed(router, "DELETE", "/controllers/people/remove") == ["POST"])
        let routed = try #require(route(router, "GET", "/controllers/people/selection/add"))
        #expect(routed.rest("keyPath") == ["selection", "add"])
        let under = HTTPRequest(method: "GET", rawPath: "/controllers/people/add/x")
        guard case .notFound = router.match(under, segments: under.pathSegments!) else {
            Issue.record("expected no route")
            return
        }
    }

    @Test func restThenIndex_takesTheLastSegmentOnlyWhenItIsDigits() throws {
        var router = Router()
        router.add("GET", "/objects/:entity/:id/*keyPath") { _ in .response(HTTPResponse(status: 1)) }
        router.add("DELETE", "/objects/:entity/:id/*keyPath/#index") { _ in .response(HTTPResponse(status: 2)) }
        let routed = try #require(route(router, "DELETE", "/objects/Department/1/boss/employees/12"))
        #expect(routed.rest("keyPath") == ["boss", "employees"])
        #expect(routed.keyPath("keyPath") == "boss.employees")
        #expect(routed.parameter("index") == "12")
        for path in ["/objects/Department/1/name", "/objects/Department/1/employees/-1", "/objects/Department/1/7"] {
            #expect(allowed(router, "DELETE", path) == ["GET", "HEAD"], "\(path)")
        }
        #expect(allowed(router, "PUT", "/objects/Department/1/employees/3") == ["GET", "DELETE", "HEAD"])
    }
}
