import Bindery
import Foundation
import HTTPServer
import HTTPTestSupport
import PropertyList
import Synchronization
import Testing

@testable import BinderyHTTP

/// Runs `work` on a new thread; the returned closure waits for its result.
private func background<T: Sendable>(_ work: @escaping @Sendable () throws -> T) -> () throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let outcome = Result { try work() }
        result.withLock { $0 = outcome }
        done.signal()
    }
    return {
        guard done.wait(timeout: .now() + 30) == .success else { throw TestHTTPError(description: "timed out") }
        return try result.withLock { $0! }.get()
    }
}

private func changes(_ response: TestResponse) -> [PropertyListValue] {
    response.json?["changes"]?.arrayValue ?? []
}

/// `/changes`, `/observers` and `/notifications` through a real server (API.md §7–8).
struct ObservingRoutesTests {
    @Test func waitingPollIsAnsweredWithinASecondOfAChange() throws {
        try withService { client in
            let waiting = background { try client.request("GET", "/changes?since=1&timeout=20") }
            usleep(300_000)
            let started = Date()
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "5")
            let answer = try waiting()
            // Not a speed check (benchmarks are): answered on the change, long before the poll's 20 s.
            #expect(Date().timeIntervalSince(started) < 5)
            #expect(answer.status == 200)
            #expect(
                changes(answer) == [
                    ["seq": 2, "target": "Employee/4", "keyPath": "salary", "kind": "setting", "old": 154000, "new": 5]
                ])
            #expect(answer.json?["last"] == 2)
            #expect(answer.header("X-Store-Seq") == "2")
        }
    }

    /// An `any` attribute's `[]` is a value (not an empty to-many): the feed has it when an object is created or
    /// deleted with it and when `PUT /store` changes it from or to null, so replaying the feed gives the store.
    @Test func anAnyAttributesEmptyArrayIsAValueInTheFeed() throws {
        let model = #"""
            {"entities": {"Note": {"attributes": {"meta": {"type": "any"}},
              "relationships": {"links": {"destination": "Note", "toMany": true, "inverse": "linked"},
                                "linked": {"destination": "Note", "toMany": true, "inverse": "links"}}}}}
            """#
        try withFixture(model: model, data: #"{"objects": [{"$id": "Note/a", "meta": 1}]}"#) { fixture in
            let document = try Document(fixtureDirectory: fixture)
            try withService(document: document) { client in
                #expect(try client.request("POST", "/objects/Note", json: #"{"$id": "b", "meta": []}"#).status == 201)
                #expect(try client.request("POST", "/objects/Note", json: #"{"$id": "c"}"#).status == 201)
                #expect(try client.request("DELETE", "/objects/Note/b").status == 204)
                var store = try #require(try client.request("GET", "/store").json?.dictionaryValue)
                store["objects"] = [["$id": "Note/a", "meta": []], ["$id": "Note/c", "meta": .null]]
                let replaced = try client.request(
                    "PUT", "/store", json: PropertyListValue.dictionary(store).jsonString())
                #expect(replaced.status == 200)
                let feed = changes(try client.request("GET", "/changes?since=1&timeout=5"))
                #expect(
                    feed.map { [$0["target"], $0["keyPath"], $0["old"], $0["new"]] } == [
                        ["Note/b", "meta", .null, []], ["Note/b", "meta", [], .null],
                        ["store", "objects", nil, nil], ["Note/a", "meta", 1, []],
                    ])
            }
        }
    }

    @Test func sharedAnswersNeverOutliveAChange() throws {
        try withService { client in
            // The same `since` asked before and after changes: each answer holds every change made by then.
            let first = try client.request("GET", "/changes?since=1&timeout=0.2")
            #expect(changes(first).isEmpty)
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "5")
            #expect(changes(try client.request("GET", "/changes?since=1&timeout=5")).count == 1)
            #expect(changes(try client.request("GET", "/changes?since=1&timeout=5")).count == 1)
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "6")
            let after = try client.request("GET", "/changes?since=1&timeout=5")
            #expect(changes(after).map { $0["new"] } == [5, 6])
            #expect(after.json?["last"] == 3)
            let observer = try client.request(
                "POST", "/observers", json: #"{"target": "Employee/4", "keyPath": "salary", "options": ["new"]}"#)
            let id = try #require(observer.json?["id"]?.stringValue)
            let since = try #require(observer.json?["since"]?.integerValue)
            let waiting = background { try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=20") }
            usleep(200_000)
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "7")
            #expect(changes(try waiting()).map { $0["new"] } == [7])
            #expect(
                changes(try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=5")).map {
                    $0["new"]
                }
                    == [7])
        }
    }

    @Test func timeoutAnswersEmptyWithTheCurrentSeq() throws {
        try withService { client in
            let started = Date()
            let answer = try client.request("GET", "/changes?since=1&timeout=0.3")
            #expect(Date().timeIntervalSince(started) >= 0.25)
            #expect(answer.json == ["changes": [], "last": 1])
            #expect(try client.request("GET", "/changes?timeout=0").json == ["changes": [], "last": 1])
            #expect(try client.request("GET", "/changes?since=x").errorCode == "bad-query")
        }
    }

    @Test func concurrentWritersAreSeenExactlyOnceInOrder() throws {
        try withService { client in
            let writers = (0..<4).map { writer in
                background {
                    for step in 0..<40 {
                        let response = try client.request(
                            "PUT", "/objects/Employee/\(writer + 1)/salary", json: "\(1000 * writer + step)")
                        guard response.status == 200 else { throw TestHTTPError(description: response.text) }
                    }
                }
            }
            var seen: [PropertyListValue] = []
            var since: Int64 = 1
            while seen.count < 160 {
                let answer = try client.request("GET", "/changes?since=\(since)&timeout=5")
                let batch = changes(answer)
                #expect(!batch.isEmpty)
                if batch.isEmpty { break }
                seen += batch
                since = answer.json?["last"]?.integerValue ?? since
            }
            for writer in writers { try writer() }
            #expect(seen.count == 160)
            let seqs = seen.compactMap { $0["seq"]?.integerValue }
            #expect(seqs == Array(2...161))
            for writer in 0..<4 {
                let values = seen.filter { $0["target"] == .string("Employee/\(writer + 1)") }.compactMap { $0["new"] }
                #expect(values == (0..<40).map { .integer(Int64(1000 * writer + $0)) })
            }
        }
    }

    @Test func oneChangeWakesThreeHundredWaiters() throws {
        try withService { client in
            let waiters = (0..<300).map { _ in background { try client.request("GET", "/changes?since=1&timeout=20") } }
            usleep(800_000)
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "6")
            for waiter in waiters {
                let answer = try waiter()
                #expect(changes(answer).count == 1)
            }
        }
    }

    @Test func observedKeyPathsThatFanOutAreBoundedAloneAndTogether() throws {
        try withService { client in
            func observe(_ hops: Int) throws -> TestResponse {
                let path =
                    "department" + String(repeating: ".employees.department", count: hops - 1) + ".employees.lastName"
                return try client.request(
                    "POST", "/observers", json: #"{"target": "Employee/1", "keyPath": "\#(path)"}"#)
            }
            // Five to-many steps from an Engineering employee reach 11^5 values: beyond what one observer may.
            let alone = try observe(5)
            #expect(alone.errorCode == "bad-key-path", "\(alone.status) \(alone.text.prefix(200))")
            // Four reach 11^4 = 14,641 (and 1,464 on the way): about 120 fit in the 2,000,000 all observers share.
            var refused: TestResponse?
            for _ in 0..<200 {
                let answer = try observe(4)
                guard answer.status == 201 else {
                    refused = answer
                    break
                }
            }
            #expect(refused?.errorCode == "too-many-observers")
            // An observer of a controller's key path is bounded the same way (its arranged objects fan out too).
            let hops = String(repeating: ".department.employees", count: 4)
            let controller = try client.request(
                "POST", "/observers",
                json: #"{"target": "controllers/employees", "keyPath": "arrangedObjects\#(hops)"}"#)
            #expect(controller.errorCode == "bad-key-path", "\(controller.status) \(controller.text.prefix(200))")
            // A commit still answers: the observers' work per commit is bounded (about 1.7 million values here, up to
            // 2.5 s in a debug build on a loaded machine; unbounded, the next observers would have made it minutes).
            let started = Date()
            #expect(try client.request("PUT", "/objects/Employee/4/salary", json: "5").status == 200)
            #expect(Date().timeIntervalSince(started) < 15)
        }
    }

    @Test func oldSinceIsHistoryCompacted() throws {
        try withService(observation: .init(historyCapacity: 3)) { client in
            for value in 0..<5 { _ = try client.request("PUT", "/objects/Employee/4/salary", json: "\(value)") }
            let gone = try client.request("GET", "/changes?since=1&timeout=0")
            #expect(gone.status == 410)
            #expect(gone.errorCode == "history-compacted")
            #expect(gone.json?["error"]?["oldest"] == 3)
            #expect(gone.json?["error"]?["current"] == 6)
            #expect(changes(try client.request("GET", "/changes?since=3&timeout=0")).count == 3)
            // Filtered, the same `since` is 410 only when a change the filter wants was dropped.
            #expect(try client.request("GET", "/changes?since=1&timeout=0&entity=Employee").status == 410)
            let departments = try client.request("GET", "/changes?since=1&timeout=0&entity=Department")
            #expect(departments.status == 200, "\(departments.text)")
            #expect(changes(departments).isEmpty)
            #expect(departments.json?["last"] == 6)
        }
    }

    @Test func aSinceFromBeyondTheCurrentSeqIs410NotASilentWait() throws {
        try withService { client in
            // As after a restart: seqs the client saw are not this run's (notifications start again at 0).
            for path in ["/changes?since=99&timeout=5", "/notifications?since=99&timeout=5"] {
                let answer = try client.request("GET", path)
                #expect(answer.status == 410, "\(path)")
                #expect(answer.errorCode == "history-compacted")
            }
            let observer = try client.request(
                "POST", "/observers", json: #"{"target": "Employee/4", "keyPath": "salary"}"#)
            let id = try #require(observer.json?["id"]?.stringValue)
            #expect(try client.request("GET", "/observers/\(id)/changes?since=99&timeout=5").status == 410)
            // The current seq itself waits as before; on a store seeded by this run, 0 is the start of the history
            // (the seed is the initial state, not a change).
            #expect(try client.request("GET", "/changes?since=1&timeout=0").status == 200)
            #expect(changes(try client.request("GET", "/changes?since=0&timeout=0")).isEmpty)
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "7")
            #expect(changes(try client.request("GET", "/changes?since=0&timeout=0")).count == 1)
            #expect(try client.request("GET", "/notifications?since=0&timeout=0").status == 200)
        }
    }

    @Test func anObserverAnswersASinceBeforeItsRegistrationFromTheRegistrationUntilItDropsChanges() throws {
        try withService(observation: .init(historyCapacity: 3)) { client in
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "1")
            let observer = try client.request(
                "POST", "/observers",
                json: #"{"target": "Employee/4", "keyPath": "salary", "options": ["new", "old", "initial"]}"#)
            let id = try #require(observer.json?["id"]?.stringValue)
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "2")
            // Changes before the registration were never the observer's: since=0 answers what it has seen.
            for since in [0, 1] {
                let answer = try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=0")
                #expect(answer.status == 200, "\(since): \(answer.text)")
                #expect(changes(answer).map { $0["new"] } == [1, 2])
            }
            // Once it has dropped changes of its own, a since before them is a gap: 410.
            for value in 3..<7 { _ = try client.request("PUT", "/objects/Employee/4/salary", json: "\(value)") }
            let gone = try client.request("GET", "/observers/\(id)/changes?since=0&timeout=0")
            #expect(gone.status == 410)
            #expect(gone.errorCode == "history-compacted")
        }
    }

    @Test func entityFilter() throws {
        try withService { client in
            _ = try client.request("PUT", "/objects/Department/2/name", json: "\"Sales EMEA\"")
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "7")
            let departments = try client.request("GET", "/changes?since=1&timeout=0&entity=Department")
            #expect(changes(departments).map { $0["target"] } == ["Department/2"])
            #expect(departments.json?["last"] == 3)
            // API.md §7 writes the filter as `entity=`: an empty value, like an absent one, filters nothing.
            let all = try client.request("GET", "/changes?since=1&timeout=0&entity=")
            #expect(changes(all).map { $0["target"] } == ["Department/2", "Employee/4"])
        }
    }

    @Test func observerOptionShapes() throws {
        try withService { client in
            func observe(_ options: String) throws -> (id: String, since: Int64) {
                let created = try client.request(
                    "POST", "/observers",
                    json: #"{"target": "Employee/4", "keyPath": "salary", "options": \#(options)}"#)
                #expect(created.status == 201)
                return (
                    try #require(created.json?["id"]?.stringValue), try #require(created.json?["since"]?.integerValue)
                )
            }
            let bare = try observe("[]")
            let both = try observe(#"["new", "old"]"#)
            // `initial` takes a seq of its own (2) for its change and starts right before it.
            let initial = try observe(#"["initial"]"#)
            let prior = try observe(#"["prior", "old"]"#)
            #expect([bare.since, both.since, initial.since, prior.since] == [1, 1, 1, 2])
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "10")
            func poll(_ observer: (id: String, since: Int64)) throws -> [PropertyListValue] {
                changes(
                    try client.request("GET", "/observers/\(observer.id)/changes?since=\(observer.since)&timeout=0"))
            }
            #expect(try poll(bare) == [["seq": 3, "target": "Employee/4", "keyPath": "salary", "kind": "setting"]])
            #expect(
                try poll(both) == [
                    [
                        "seq": 3, "target": "Employee/4", "keyPath": "salary", "kind": "setting", "old": 154000,
                        "new": 10,
                    ]
                ])
            let initialChanges = try poll(initial)
            #expect(initialChanges.map { $0["seq"] } == [2, 3])
            #expect(initialChanges.first?["new"] == 154000)
            #expect(initialChanges.first?["old"] == nil)
            #expect(initialChanges.last?["new"] == nil)
            // Passing back `last` never repeats the initial change, and a poll with nothing new waits.
            let next = try client.request("GET", "/observers/\(initial.id)/changes?since=3&timeout=0.2")
            #expect(changes(next).isEmpty)
            #expect(next.json?["last"] == 3)
            #expect(
                try poll(prior) == [
                    [
                        "seq": 3, "target": "Employee/4", "keyPath": "salary", "kind": "setting", "old": 154000,
                        "prior": true,
                    ],
                    ["seq": 3, "target": "Employee/4", "keyPath": "salary", "kind": "setting", "old": 154000],
                ])
        }
    }

    @Test func keyPathObserverRetargetsToTheNewIntermediateObject() throws {
        try withService { client in
            let created = try client.request(
                "POST", "/observers",
                json: #"{"target": "Employee/4", "keyPath": "department.name", "options": ["new", "old"]}"#)
            let id = try #require(created.json?["id"]?.stringValue)
            _ = try client.request("PUT", "/objects/Employee/4/department", json: #"{"$ref": "Department/2"}"#)
            _ = try client.request("PUT", "/objects/Department/1/name", json: #""Old home""#)
            _ = try client.request("PUT", "/objects/Department/2/name", json: #""New home""#)
            let seen = changes(try client.request("GET", "/observers/\(id)/changes?since=1&timeout=0"))
            #expect(seen.map { $0["new"] } == ["Sales", "New home"])
            #expect(seen.map { $0["old"] } == ["Engineering", "Sales"])
        }
    }

    @Test func derivedKeyObserverFiresOnMembershipAndValues() throws {
        try withService { client in
            let created = try client.request(
                "POST", "/observers", json: #"{"target": "Department/5", "keyPath": "payroll", "options": ["new"]}"#)
            let id = try #require(created.json?["id"]?.stringValue)
            _ = try client.request("PUT", "/objects/Employee/4/department", json: #"{"$ref": "Department/5"}"#)
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "100")
            let seen = changes(try client.request("GET", "/observers/\(id)/changes?since=1&timeout=0"))
            #expect(seen.map { $0["new"] } == [154000, 100])
        }
    }

    @Test func observerErrorsAndDeletion() throws {
        try withService { client in
            #expect(
                try client.request("POST", "/observers", json: #"{"target": "Employee/404", "keyPath": "salary"}"#)
                    .errorCode == "no-such-object")
            #expect(
                try client.request("POST", "/observers", json: #"{"target": "Employee/4", "keyPath": "nope"}"#)
                    .errorCode == "undefined-key")
            let unknownOption = try client.request(
                "POST", "/observers", json: #"{"target": "Employee/4", "keyPath": "salary", "options": ["x"]}"#)
            #expect(unknownOption.status == 422)
            #expect(unknownOption.json?["error"]?["keyPath"] == "options")
            let created = try client.request(
                "POST", "/observers",
                json: #"{"target": "Employee/4", "keyPath": "salary", "options": ["prior", "new", "new"]}"#)
            let id = try #require(created.json?["id"]?.stringValue)
            // Its Location reads it back as registered.
            let location = try #require(created.header("Location"))
            let described = try client.request("GET", location)
            #expect(described.status == 200)
            #expect(
                described.json
                    == [
                        "id": .string(id), "target": "Employee/4", "keyPath": "salary", "options": ["new", "prior"],
                        "since": created.json?["since"] ?? .null,
                    ])
            let waiting = background { try client.request("GET", "/observers/\(id)/changes?since=1&timeout=20") }
            usleep(200_000)
            #expect(try client.request("DELETE", "/observers/\(id)").status == 204)
            #expect(try waiting().status == 404)
            #expect(try client.request("GET", "/observers/\(id)/changes?timeout=0").errorCode == "no-such-observer")
            #expect(try client.request("DELETE", "/observers/\(id)").status == 404)
            #expect(try client.request("GET", "/observers/\(id)").errorCode == "no-such-observer")
        }
    }

    /// A long-poll waits at most 300 s (API.md §7: "default 30, max 300"): a longer `timeout` is taken as 300.
    @Test(
        arguments: [(nil, 30), ("0", 0), ("0.5", 0.5), ("300", 300), ("400", 300), ("1000000", 300)]
            as [(String?, Double)])
    func aPollsTimeoutIsAtMost300Seconds(text: String?, seconds: Double) throws {
        #expect(try BinderyService.pollTimeout(text) == seconds)
    }

    /// An observer nobody polls expires once its TTL has passed, not at some multiple of it (API.md §7: "Observers
    /// that nobody polls for 5 minutes (configurable) expire").
    @Test func unpolledObserversExpireOnceTheirTTLHasPassed() throws {
        try withService(observation: .init(observerTTL: 1)) { client in
            let created = try client.request(
                "POST", "/observers", json: #"{"target": "Employee/4", "keyPath": "salary", "options": ["new"]}"#)
            let id = try #require(created.json?["id"]?.stringValue)
            usleep(1_600_000)
            #expect(try client.request("GET", "/observers/\(id)/changes?timeout=0").status == 404)
        }
    }

    /// An event stream keeps its observer in use, and its end counts as the observer's last use: a client that
    /// closes a stream after a quiet spell longer than the TTL finds the observer when it comes back within the TTL.
    @Test func anObserverReadByAnEventStreamLivesOnAfterItsQuietSpell() throws {
        try withService(observation: .init(observerTTL: 3)) { client in
            let created = try client.request(
                "POST", "/observers", json: #"{"target": "Employee/4", "keyPath": "salary", "options": ["new"]}"#)
            let id = try #require(created.json?["id"]?.stringValue)
            let socket = try client.connect()
            try client.send(
                Array("GET /observers/\(id)/changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".utf8),
                on: socket)
            var received = ""
            #expect(read(socket, until: "text/event-stream", into: &received))
            usleep(3_500_000)
            close(socket)
            // Once the server has noticed the stream's end (its peek at abandoned connections runs every 2 s), the
            // observer has a TTL to live from then: polled at once, well within it even on a loaded machine.
            var streams: Substring?
            for _ in 0..<100 where streams != "bindery_event_streams 0" {
                if streams != nil { usleep(100_000) }
                let metrics = try client.request("GET", "/metrics").text
                streams = metrics.split(separator: "\n").first { $0.hasPrefix("bindery_event_streams ") }
            }
            #expect(streams == "bindery_event_streams 0")
            let poll = try client.request("GET", "/observers/\(id)/changes?timeout=0")
            #expect(poll.status == 200, "\(poll.text)")
        }
    }

    /// A poll that comes while the server stops, after the waiting clients were answered: with `since` it is
    /// answered as having nothing after it; without, there is no `last` it could be told (not `0`, which would send
    /// the client back to the start), so it is told to retry.
    @Test func aPollThatComesWhileTheServerStops_isToldNoMadeUpLast() throws {
        let document = try Document(fixtureDirectory: packageRoot + "/Fixtures/employees")
        let observations = ObservationCenter(document: document, queue: DispatchQueue(label: "test.observation"))
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2),
            responder: BinderyService(
                configuration: .init(publicDirectory: packageRoot + "/Public", corsOrigin: "*"), document: document,
                observations: observations))
        try server.start()
        let client = TestHTTPClient(port: try #require(server.port))
        #expect(try client.request("PUT", "/objects/Employee/4/salary", json: "1").status == 200)
        observations.answerAllWaiters()
        let withoutSince = background { try client.request("GET", "/changes?timeout=20") }
        let withSince = background { try client.request("GET", "/changes?since=2&timeout=20") }
        usleep(300_000)
        server.stop()
        let answer = try withoutSince()
        #expect(answer.status == 503 && answer.errorCode == "shutting-down", "\(answer.text)")
        #expect(answer.header("Retry-After") == "1")
        #expect(try withSince().json?["last"] == 2)
    }

    /// A HEAD of an event stream is its header alone: libmicrohttpd 0.9.75 would follow it with a chunked body's last
    /// chunk (`0\r\n\r\n`), which the client would read as the start of the next answer.
    @Test func aHeadOfAnEventStreamIsItsHeaderAlone() throws {
        try withService { client in
            let head = "HEAD /changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
            let answer = String(decoding: try client.exchange(Array(head.utf8)), as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 200"))
            #expect(answer.contains("Content-Type: text/event-stream"))
            #expect(answer.contains("Vary: Accept"))
            #expect(answer.hasSuffix("\r\n\r\n") && !answer.contains("\r\n\r\n0"), "\(answer)")
            #expect(try client.request("GET", "/changes?timeout=0").header("Vary") == "Accept")
        }
    }

    @Test func tooManyWaitersIs503WithRetryAfter() throws {
        try withService(observation: .init(maxWaiters: 2)) { client in
            let first = background { try client.request("GET", "/changes?timeout=2") }
            let second = background { try client.request("GET", "/changes?timeout=2") }
            usleep(300_000)
            let third = try client.request("GET", "/changes?timeout=2")
            #expect(third.status == 503)
            #expect(third.errorCode == "too-many-waiters")
            #expect(third.header("Retry-After") == "1")
            // Event streams count against the same limit, and are refused with a status, not a 200 stream.
            let stream = try client.request("GET", "/changes", headers: ["Accept": "text/event-stream"])
            #expect(stream.status == 503)
            #expect(stream.errorCode == "too-many-waiters")
            #expect(stream.header("Retry-After") == "1")
            // `q=0` refuses the stream, and JSON named higher prefers the answer: a plain long-poll, here one that
            // does not wait.
            for accept in ["text/event-stream;q=0", "application/json,text/event-stream;q=0.9"] {
                let notStream = try client.request("GET", "/changes?timeout=0", headers: ["Accept": accept])
                #expect(notStream.status == 200, "\(accept)")
                #expect(notStream.header("Content-Type") == "application/json", "\(accept)")
            }
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "1")
            #expect(try first().status == 200)
            #expect(try second().status == 200)
        }
    }

    /// libmicrohttpd does not watch suspended sockets: long-polls whose clients have gone are found by a peek at
    /// their sockets and let go, so that they hold no place among the waiters.
    @Test func longPollsOfClientsThatLeftHoldNoPlace() throws {
        try withService(observation: .init(maxWaiters: 3)) { client in
            for _ in 0..<3 {
                let socket = try client.connect()
                try client.send(Array("GET /changes?timeout=300 HTTP/1.1\r\nHost: x\r\n\r\n".utf8), on: socket)
                usleep(50_000)
                close(socket)
            }
            usleep(100_000)
            let poll = try client.request("GET", "/changes?timeout=0.2")
            #expect(poll.status == 200, "\(poll.text)")
            // The places were given back: three more can wait.
            let waiting = (0..<3).map { _ in background { try client.request("GET", "/changes?timeout=5") } }
            usleep(300_000)
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "1")
            for wait in waiting { #expect(try wait().status == 200) }
        }
    }

    /// The same for event streams: a stream whose client left between events is found by the same peek, not only
    /// when the next heartbeat cannot be written (15 s later).
    @Test func eventStreamsOfClientsThatLeftHoldNoPlace() throws {
        try withService(observation: .init(maxWaiters: 3)) { client in
            for _ in 0..<3 {
                let socket = try client.connect()
                try client.send(
                    Array("GET /changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".utf8), on: socket)
                var received = ""
                #expect(read(socket, until: "text/event-stream", into: &received))
                close(socket)
            }
            usleep(100_000)
            let poll = try client.request("GET", "/changes?timeout=0.2")
            #expect(poll.status == 200, "\(poll.text)")
        }
    }

    @Test func revertToSavedIsObservedLikeAnyChange() throws {
        try withService { client in
            #expect(try client.request("POST", "/actions/save").status == 200)
            let observer = try client.request(
                "POST", "/observers",
                json: #"{"target": "Employee/6", "keyPath": "salary", "options": ["new", "old"]}"#)
            let id = try #require(observer.json?["id"]?.stringValue)
            let since = try #require(observer.json?["since"]?.integerValue)
            _ = try client.request("PUT", "/objects/Employee/6/salary", json: "7")
            let revert = try client.request("POST", "/actions/revertToSaved")
            #expect(revert.status == 200)
            let answer = try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=5")
            #expect(changes(answer).map { [$0["seq"], $0["old"], $0["new"]] } == [[2, 149000, 7], [3, 7, 149000]])
            let feed = changes(try client.request("GET", "/changes?since=2&entity=Employee&timeout=0"))
            #expect(
                feed == [
                    ["seq": 3, "target": "Employee/6", "keyPath": "salary", "kind": "setting", "old": 7, "new": 149000]
                ])
            let didChange = try client.request("GET", "/notifications?since=0&name=ObjectsDidChange&timeout=0")
            #expect(
                didChange.json?["notifications"]?.arrayValue?.last?["userInfo"]
                    == ["inserted": [], "updated": [["$ref": "Employee/6"]], "deleted": []])
        }
    }

    /// An observer of a stored to-many keeps its value from the records' insertions, removals and replacements
    /// (a relationship of 100,000 is not read again for each): after 80 of them in random places, replacing the store
    /// with its export, another department renamed (which has every observer read its value again), tells it
    /// nothing, so what it kept is what the store holds.
    @Test func aToManyObserverKeepsItsValueFromTheRecords() throws {
        try withService { client in
            let registered = try client.request(
                "POST", "/observers", json: #"{"target": "Department/1", "keyPath": "employees", "options": ["old"]}"#)
            let id = try #require(registered.json?["id"]?.stringValue)
            var state: UInt64 = 11
            func random(_ count: Int) -> Int {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int((state >> 33) % UInt64(count))
            }
            func members() throws -> Int {
                Int(try client.request("GET", "/objects/Department/1/employees/@count").json?.integerValue ?? 0)
            }
            for _ in 0..<80 {
                let employee = "Employee/\(random(32) + 1)"
                switch random(3) {
                case 0:
                    // Moved to another department (a removal here) or here (an insertion at the end).
                    let department = random(2) == 0 ? "Department/1" : "Department/\(random(4) + 2)"
                    _ = try client.request(
                        "PUT", "/objects/\(employee)/department", json: #"{"$ref": "\#(department)"}"#)
                case 1:
                    // Inserted at a random index (an employee already here is refused, and changes nothing).
                    _ = try client.request(
                        "POST", "/objects/Department/1/employees?index=\(random(try members() + 1))",
                        json: #"{"$ref": "\#(employee)"}"#)
                default:
                    let count = try members()
                    // Removed by index: the employee then has no department, which is refused (required).
                    if count > 0 {
                        _ = try client.request("DELETE", "/objects/Department/1/employees/\(random(count))")
                    }
                }
            }
            let told = changes(try client.request("GET", "/observers/\(id)/changes?since=1&timeout=0"))
            #expect(told.contains { $0["kind"] == "insertion" } && told.contains { $0["kind"] == "removal" })
            let last = try #require(try client.request("GET", "/healthz").header("X-Store-Seq").flatMap { Int64($0) })
            var objects = try #require(try client.request("GET", "/store").json?["objects"]?.arrayValue)
            let index = try #require(objects.firstIndex { $0["$id"] == "Department/2" })
            var department = try #require(objects[index].dictionaryValue)
            department["name"] = "Renamed"
            objects[index] = .dictionary(department)
            let graph: PropertyListValue = ["objects": .array(objects)]
            #expect(try client.request("PUT", "/store", body: graph.jsonBytes()).status == 200)
            let after = changes(try client.request("GET", "/observers/\(id)/changes?since=\(last)&timeout=0"))
            #expect(after.isEmpty, "\(after)")
        }
    }

    @Test func replacingTheStoreFeedsEveryChangedValue() throws {
        try withService { client in
            let original = try #require(try client.request("GET", "/store").json?["objects"]?.arrayValue)
            var objects = original
            let index = try #require(objects.firstIndex { $0["$id"] == "Employee/4" })
            var employee = try #require(objects[index].dictionaryValue)
            employee["salary"] = 1
            objects[index] = .dictionary(employee)
            objects.append(["$id": "Department/99", "name": "Research"])
            let graph: PropertyListValue = ["objects": .array(objects)]
            #expect(try client.request("PUT", "/store", body: graph.jsonBytes()).status == 200)
            let feed = changes(try client.request("GET", "/changes?since=1&timeout=0"))
            #expect(feed.first == ["seq": 2, "target": "store", "keyPath": "objects", "kind": "setting"])
            #expect(
                feed.dropFirst().map { [$0["target"], $0["keyPath"], $0["old"], $0["new"]] } == [
                    ["Department/99", "budget", .null, 0.0], ["Department/99", "name", .null, "Research"],
                    ["Employee/4", "salary", 154000, 1],
                ])
            func objectsDidChange() throws -> PropertyListValue? {
                try client.request("GET", "/notifications?since=0&name=ObjectsDidChange&timeout=0")
                    .json?["notifications"]?.arrayValue?.last?["userInfo"]
            }
            #expect(
                try objectsDidChange()
                    == ["inserted": [["$ref": "Department/99"]], "updated": [["$ref": "Employee/4"]], "deleted": []])
            // Back to the original graph: the department goes, the salary comes back.
            let back: PropertyListValue = ["objects": .array(original)]
            #expect(try client.request("PUT", "/store", body: back.jsonBytes()).status == 200)
            let entityFeed = changes(try client.request("GET", "/changes?since=2&entity=Department&timeout=0"))
            #expect(
                entityFeed.map { [$0["keyPath"], $0["old"], $0["new"]] } == [
                    ["budget", 0.0, .null], ["name", "Research", .null],
                ])
            #expect(
                try objectsDidChange()
                    == ["inserted": [], "updated": [["$ref": "Employee/4"]], "deleted": [["$ref": "Department/99"]]])
        }
    }

    /// A replacement tells the changes a set would: `-0.0` over `0.0` and é written as e and an accent over é as one
    /// character are stored, so they are in the feed and in `ObjectsDidChange` too.
    @Test func replacingTheStoreFeedsChangesOfCodePointsAndOfTheSignOfZero() throws {
        try withService { client in
            #expect(try client.request("PUT", "/objects/Employee/4/lastName", json: "\"Caf\u{E9}\"").status == 200)
            #expect(try client.request("PUT", "/objects/Department/1/budget", json: "0.0").status == 200)
            let since = try #require(try client.request("GET", "/healthz").header("X-Store-Seq"))
            let objects = try #require(try client.request("GET", "/store").json?["objects"]?.arrayValue).map {
                object -> PropertyListValue in
                var values = object.dictionaryValue ?? [:]
                if object["$id"] == "Employee/4" { values["lastName"] = "Cafe\u{301}" }
                if object["$id"] == "Department/1" { values["budget"] = .real(-0.0) }
                return .dictionary(values)
            }
            let graph: PropertyListValue = ["objects": .array(objects)]
            #expect(try client.request("PUT", "/store", body: graph.jsonBytes()).status == 200)
            let feed = changes(try client.request("GET", "/changes?since=\(since)&timeout=0"))
            let settings = feed.filter { $0["target"] != "store" }
            #expect(
                settings.map { [$0["target"], $0["keyPath"]] } == [
                    ["Department/1", "budget"], ["Employee/4", "lastName"],
                ])
            #expect(settings.first?["new"]?.isIdentical(to: .real(-0.0)) == true)
            #expect(settings.last?["new"]?.isIdentical(to: "Cafe\u{301}") == true)
            let notification = try client.request("GET", "/notifications?since=0&name=ObjectsDidChange&timeout=0")
            #expect(
                notification.json?["notifications"]?.arrayValue?.last?["userInfo"]?["updated"]
                    == [["$ref": "Department/1"], ["$ref": "Employee/4"]])
        }
    }

    /// The to-many of an object a replacement adds or removes is told from or to `[]`, its value in KVC, not null.
    @Test func replacingTheStoreTellsAToManyOfAnAddedObjectFromEmpty() throws {
        try withService { client in
            let original = try #require(try client.request("GET", "/store").json?["objects"]?.arrayValue)
            let moved: PropertyListValue = ["$ref": "Employee/4"]
            let objects = original.map { object -> PropertyListValue in
                var values = object.dictionaryValue ?? [:]
                if object["$id"] == "Employee/4" { values["department"] = ["$ref": "Department/99"] }
                if object["$id"] == "Department/1" {
                    values["employees"] = .array((object["employees"]?.arrayValue ?? []).filter { $0 != moved })
                }
                return .dictionary(values)
            }
            let added: PropertyListValue = ["$id": "Department/99", "name": "Ops", "employees": [moved]]
            let graph: PropertyListValue = ["objects": .array(objects + [added])]
            #expect(try client.request("PUT", "/store", body: graph.jsonBytes()).status == 200)
            let back: PropertyListValue = ["objects": .array(original)]
            #expect(try client.request("PUT", "/store", body: back.jsonBytes()).status == 200)
            let feed = changes(try client.request("GET", "/changes?since=1&timeout=0"))
            #expect(
                feed.filter { $0["target"] == "Department/99" && $0["keyPath"] == "employees" }.map {
                    [$0["seq"], $0["old"], $0["new"]]
                } == [[2, [], [moved]], [3, [moved], []]])
        }
    }

    /// Coalescing never delays: an `asap` post that matches a queued `whenIdle` one brings that one forward (the
    /// first queued is kept).
    @Test func anAsapPostBringsAMatchingIdleOneForward() throws {
        // An idle queue only after 5 s: a loaded machine may take longer than the usual 50 ms between two requests.
        try withService(observation: .init(idleTurn: 5)) { client in
            let idle = #"{"name": "Tick", "object": "o", "userInfo": {"n": "idle"}, "postingStyle": "whenIdle"}"#
            let asap = #"{"name": "Tick", "object": "o", "userInfo": {"n": "asap"}, "postingStyle": "asap"}"#
            let queued = try client.request("POST", "/notifications", json: idle)
            let coalesced = try client.request("POST", "/notifications", json: asap)
            #expect(queued.json?["coalesced"] == false)
            #expect(coalesced.json?["coalesced"] == true)
            // Posted at the end of the queue's turn, before a `now` post that comes after it (a `whenIdle` one would
            // come 5 s later).
            #expect(try client.request("POST", "/notifications", json: #"{"name": "Marker"}"#).status == 201)
            usleep(100_000)
            let answer = try client.request("GET", "/notifications?since=0&timeout=0")
            #expect(
                answer.json?["notifications"]?.arrayValue?.map { [$0["name"], $0["userInfo"]] } == [
                    ["Tick", ["n": "idle"]], ["Marker", .null],
                ])
        }
    }

    @Test func asapPostsSentOneAfterAnotherCoalesceAndAPollWaitsForThem() throws {
        // A long turn, so that a loaded machine cannot end it between two posts.
        try withService(observation: .init(asapTurn: 1)) { client in
            // One client's posts, each sent after the previous answer, within the queue's turn.
            for (n, sender) in ["a", "a", "b", "a"].enumerated() {
                let post = try client.request(
                    "POST", "/notifications",
                    json:
                        #"{"name": "Burst", "object": "\#(sender)", "userInfo": {"n": \#(n)}, "postingStyle": "asap"}"#)
                #expect(post.status == 202)
                #expect(post.json?["coalesced"] == .boolean(n == 1 || n == 3), "\(n)")
            }
            // A poll with timeout 0 sent at once sees them: it waits for the queued ones to be posted.
            let answer = try client.request("GET", "/notifications?since=0&name=Burst&timeout=0")
            #expect(answer.json?["notifications"]?.arrayValue?.map { $0["userInfo"]?["n"] } == [0, 2])
            // A `now` post ends the turn: the queued ones it does not match come first, the ones it matches go.
            for body in [
                #"{"name": "Burst", "object": "a", "postingStyle": "asap"}"#,
                #"{"name": "Burst", "object": "b", "postingStyle": "asap"}"#, #"{"name": "Burst", "object": "a"}"#,
            ] { _ = try client.request("POST", "/notifications", json: body) }
            let after = try client.request(
                "GET", "/notifications?since=\(answer.json?["last"]?.integerValue ?? 0)&name=Burst&timeout=0")
            #expect(after.json?["notifications"]?.arrayValue?.map { $0["object"] } == ["b", "a"])
        }
    }

    /// A turn ended early by a `now` post does not end the next one early: the timer of the turn it ended does not
    /// post the `asap` notifications queued in the next turn, so a matching one sent within that turn still coalesces.
    @Test func aTurnEndedByANowPostDoesNotEndTheNextOneEarly() throws {
        try withService(observation: .init(asapTurn: 2)) { client in
            func post(_ object: String, _ style: String) throws -> TestResponse {
                try client.request(
                    "POST", "/notifications",
                    json: #"{"name": "Turn", "object": "\#(object)", "postingStyle": "\#(style)"}"#)
            }
            let started = Date()
            let first = try post("a", "asap")  // its turn ends at 2 s
            let now = try post("x", "now")  // ends that turn now
            usleep(1_000_000)
            let next = try post("b", "asap")  // a new turn, ending at about 3 s
            usleep(UInt32(max(0, 2.5 - Date().timeIntervalSince(started)) * 1_000_000))
            // Past the first turn's end, within the second's.
            let matching = try post("b", "asap")
            #expect(first.json?["coalesced"] == false && now.status == 201 && next.json?["coalesced"] == false)
            #expect(matching.json?["coalesced"] == true, "\(matching.text)")
        }
    }

    /// Names and string objects compare code point for code point, as `isEqual:` does: é as one character and as e
    /// and an accent are two names, two senders, and neither coalesces with the other.
    @Test func notificationNamesAndObjectsCompareByCodePoints() throws {
        try withService { client in
            for name in ["Caf\u{e9}", "Cafe\u{301}"] {
                let body = PropertyListValue.dictionary([
                    "name": .string(name), "object": .string(name), "postingStyle": "whenIdle",
                    "coalesce": ["name", "sender"],
                ])
                let posted = try client.request("POST", "/notifications", json: body.jsonString())
                #expect(posted.json?["coalesced"] == false, "\(name)")
            }
            usleep(200_000)
            for query in ["name=Caf%C3%A9", "object=Caf%C3%A9", "object=%7B%22%24ref%22%3A%22Caf%C3%A9%22%7D"] {
                let answer = try client.request("GET", "/notifications?since=0&timeout=0&\(query)")
                let names = answer.json?["notifications"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
                #expect(
                    names.map { Array($0.unicodeScalars) }
                        == (query.hasPrefix("object=%7B") ? [] : [["C", "a", "f", "\u{e9}"]]), "\(query)")
            }
        }
    }

    @Test func notificationsPostPollAndCoalesce() throws {
        try withService { client in
            let waiting = background { try client.request("GET", "/notifications?since=0&name=Ping&timeout=10") }
            usleep(200_000)
            let posted = try client.request(
                "POST", "/notifications", json: #"{"name": "Ping", "object": "me", "userInfo": {"n": 1}}"#)
            #expect(posted.status == 201)
            let answer = try waiting()
            #expect(
                answer.json?["notifications"] == [["seq": 1, "name": "Ping", "object": "me", "userInfo": ["n": 1]]])
            for n in 0..<3 {
                let queued = try client.request(
                    "POST", "/notifications",
                    json:
                        #"{"name": "Idle", "object": "me", "userInfo": {"n": \#(n)}, "postingStyle": "whenIdle", "coalesce": ["name", "sender"]}"#
                )
                #expect(queued.status == 202)
                #expect(queued.json?["coalesced"] == .boolean(n > 0))
            }
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "1")
            usleep(300_000)
            let idle = try client.request("GET", "/notifications?since=0&name=Idle&timeout=0")
            #expect(idle.json?["notifications"]?.arrayValue?.map { $0["userInfo"]?["n"] } == [0])
            let didChange = try client.request("GET", "/notifications?since=0&name=ObjectsDidChange&timeout=0")
            #expect(
                didChange.json?["notifications"]?.arrayValue?.first?["userInfo"]
                    == ["inserted": [], "updated": [["$ref": "Employee/4"]], "deleted": []])
            // Well-formed but not a notification: 422 naming the key, and nothing posted.
            for (body, key) in [
                (#"{"name": "X", "postingStyle": "later"}"#, "postingStyle"),
                (#"{"name": "X", "coalesce": "name"}"#, "coalesce"),
                (#"{"name": "X", "coalesce": ["bogus"]}"#, "coalesce"),
                (#"{"name": 5}"#, "name"), (#"{"object": "o"}"#, "name"),
                (#"{"name": "X", "postingstyle": "asap"}"#, "postingstyle"),
            ] {
                let refused = try client.request("POST", "/notifications", json: body)
                #expect(refused.status == 422, "\(body)")
                #expect(refused.json?["error"]?["keyPath"] == .string(key), "\(body)")
            }
            #expect(
                try client.request("GET", "/notifications?since=0&name=X&timeout=0").json?["notifications"] == [])
            // API.md §1: keys starting with $ are the tags'; a reference is one, anything else is refused.
            let reserved = try client.request(
                "POST", "/notifications", json: #"{"name": "X", "userInfo": {"a": [{"$set": 1}]}}"#)
            #expect(reserved.status == 422)
            #expect(reserved.errorCode == "type-mismatch")
            #expect(reserved.json?["error"]?["keyPath"] == "userInfo")
            let reference = try client.request(
                "POST", "/notifications",
                json: #"{"name": "X", "object": {"$ref": "Employee/4"}, "userInfo": {"who": [{"$ref": "Employee/1"}]}}"#
            )
            #expect(reference.status == 201)
            // NSNotification's userInfo is a dictionary (or nil).
            // A malformed reference is no reference: its `$ref` is a reserved key (API.md §1).
            for body in [
                #"{"name": "T", "object": {"$ref": "garbage"}}"#,
                #"{"name": "T", "userInfo": {"r": {"$ref": "E/a b"}}}"#,
            ] {
                #expect(try client.request("POST", "/notifications", json: body).status == 422, "\(body)")
            }
            for userInfo in ["[1]", "\"text\"", "5", #"{"$ref": "Employee/1"}"#] {
                let refused = try client.request(
                    "POST", "/notifications", json: #"{"name": "X", "userInfo": \#(userInfo)}"#)
                #expect(refused.status == 422 && refused.json?["error"]?["keyPath"] == "userInfo", "\(userInfo)")
            }
            // NSPostNow posts "immediately after coalescing": the queued one it coalesces with is dropped.
            let queued = #"{"name": "B", "object": "x", "postingStyle": "whenIdle", "coalesce": ["name"]}"#
            #expect(try client.request("POST", "/notifications", json: queued).status == 202)
            let now = #"{"name": "B", "object": "y", "postingStyle": "now", "coalesce": ["name"]}"#
            #expect(try client.request("POST", "/notifications", json: now).status == 201)
            usleep(300_000)
            let coalesced = try client.request("GET", "/notifications?since=0&name=B&timeout=0")
            #expect(coalesced.json?["notifications"]?.arrayValue?.map { $0["object"] } == ["y"])
            // Omitted `coalesce` is on name and sender (Cocoa's two-argument enqueue); `[]` is none.
            for (name, coalesce) in [("C", ""), ("D", #", "coalesce": []"#)] {
                for n in 0..<2 {
                    let body =
                        #"{"name": "\#(name)", "object": "s", "userInfo": {"n": \#(n)}, "postingStyle": "whenIdle"\#(coalesce)}"#
                    #expect(try client.request("POST", "/notifications", json: body).status == 202)
                }
            }
            usleep(300_000)
            for (name, expected) in [("C", [PropertyListValue(0)]), ("D", [0, 1])] {
                let posted = try client.request("GET", "/notifications?since=0&name=\(name)&timeout=0")
                #expect(posted.json?["notifications"]?.arrayValue?.map { $0["userInfo"]?["n"] } == expected, "\(name)")
            }
        }
    }

    /// Notifications are numbered apart from the store's changes: a poll's `last` is theirs, its `X-Store-Seq` the
    /// store's (as on every answer), and a 410 tells how to go on with this feed, not with an observer.
    @Test func notificationsPoll_storeSeqHeaderIsTheStores_410SaysHowToGoOn() throws {
        try withService { client in
            for _ in 0..<3 {
                #expect(try client.request("POST", "/notifications", json: #"{"name": "Ping"}"#).status == 201)
            }
            let storeSeq = try client.request("GET", "/healthz").header("X-Store-Seq")
            let poll = try client.request("GET", "/notifications?since=0&timeout=0")
            #expect(poll.json?["last"] == 3)
            #expect(poll.header("X-Store-Seq") == storeSeq && storeSeq == "1")
            let ahead = try client.request("GET", "/notifications?since=99&timeout=0")
            #expect(ahead.status == 410 && ahead.json?["error"]?["current"] == 3)
            #expect(ahead.header("X-Store-Seq") == storeSeq)
            let message = ahead.json?["error"]?["message"]?.stringValue ?? ""
            #expect(!message.contains("observer") && message.contains("numbered apart"), "\(message)")
            let changes = try client.request("GET", "/changes?since=99&timeout=0")
            #expect(changes.json?["error"]?["message"]?.stringValue?.contains("GET /store") == true)
        }
    }

    /// API.md §8 writes the query as `?since=N&timeout=S&name=&object=`: a template filled with empty values filters
    /// nothing, and a long-poll with them is woken by any notification.
    @Test func emptyNameAndObjectInTheNotificationsQueryFilterNothing() throws {
        try withService { client in
            let waiting = background { try client.request("GET", "/notifications?since=0&timeout=10&name=&object=") }
            usleep(200_000)
            let started = Date()
            #expect(
                try client.request("POST", "/notifications", json: #"{"name": "Ping", "object": "me"}"#).status == 201)
            let answer = try waiting()
            #expect(Date().timeIntervalSince(started) < 5)
            #expect(answer.json?["notifications"]?.arrayValue?.map { $0["name"] } == ["Ping"])
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "1")
            usleep(300_000)
            let everything = try client.request("GET", "/notifications?since=0&timeout=0")
            let names = everything.json?["notifications"]?.arrayValue?.map { $0["name"] }
            #expect(names == ["Ping", "ObjectsDidChange"])
            let queries: [(String, [PropertyListValue?]?)] = [
                ("name=&object=", names), ("name=", names), ("object=", names), ("name=&object=me", ["Ping"]),
                ("name=Ping&object=", ["Ping"]),
            ]
            for (query, expected) in queries {
                let filtered = try client.request("GET", "/notifications?since=0&timeout=0&\(query)")
                #expect(filtered.json?["notifications"]?.arrayValue?.map { $0["name"] } == expected, "\(query)")
            }
            // Answers shared between polls are keyed by name and object apart (a joined key mixed these two up).
            let since = everything.json?["last"]?.integerValue ?? 0
            #expect(
                try client.request("POST", "/notifications", json: #"{"name": "a/b", "object": "c"}"#).status == 201)
            for (query, count) in [("name=a%2Fb&object=c", 1), ("name=a&object=b%2Fc", 0)] {
                let polled = try client.request("GET", "/notifications?since=\(since)&timeout=1&\(query)")
                #expect(polled.json?["notifications"]?.arrayValue?.count == count, "\(query)")
            }
        }
    }
}

extension ObservingRoutesTests {
    /// A registration body that is JSON but not a registration is 422 naming the key (as for notifications); an
    /// empty key path is 400 `bad-key-path`.
    @Test(
        arguments: [
            (#"{"target": "Employee/1", "keyPath": "salary", "bogus": 1}"#, 422, "undefined-key", "bogus"),
            (#"{"target": 5, "keyPath": "salary"}"#, 422, "type-mismatch", "target"),
            (#"{"target": "nope", "keyPath": "salary"}"#, 422, "type-mismatch", "target"),
            (#"{"keyPath": "salary"}"#, 422, "type-mismatch", "target"),
            (#"{"target": "Employee/1", "keyPath": 5}"#, 422, "type-mismatch", "keyPath"),
            (#"{"target": "Employee/1", "keyPath": "salary", "options": "new"}"#, 422, "type-mismatch", "options"),
            (#"{"target": "Employee/1", "keyPath": "salary", "options": [1]}"#, 422, "type-mismatch", "options"),
            (#"{"target": "Employee/1", "keyPath": ""}"#, 400, "bad-key-path", nil),
        ] as [(String, Int, String, String?)])
    func invalidRegistrationsNameTheKey(body: String, status: Int, code: String, key: String?) throws {
        try withService { client in
            let response = try client.request("POST", "/observers", json: body)
            #expect(response.status == status)
            #expect(response.json?["error"]?["code"] == .string(code))
            #expect(response.json?["error"]?["keyPath"] == key.map { PropertyListValue.string($0) })
        }
    }

    /// `object=` names a reference by its id too, and any object by its JSON, however spaced.
    @Test func theObjectFilterMatchesReferencesByIdAndObjectsByTheirJSON() throws {
        try withService { client in
            let posts = [
                #"{"name": "Ref", "object": {"$ref": "Employee/1"}}"#, #"{"name": "Text", "object": "Employee/1"}"#,
                #"{"name": "Dict", "object": {"a": 1, "b": [true]}}"#, #"{"name": "None"}"#,
            ]
            for post in posts { #expect(try client.request("POST", "/notifications", json: post).status == 201) }
            let queries: [(String, [PropertyListValue?])] = [
                ("Employee/1", ["Ref", "Text"]), ("%7B%22%24ref%22%3A%20%22Employee%2F1%22%7D", ["Ref"]),
                ("%7B%22b%22%3A%5Btrue%5D%2C%22a%22%3A1%7D", ["Dict"]), ("%22Employee%2F1%22", ["Text"]),
                ("null", ["None"]), ("Employee/2", []),
            ]
            for (object, expected) in queries {
                let polled = try client.request("GET", "/notifications?since=0&timeout=0&object=\(object)")
                #expect(polled.json?["notifications"]?.arrayValue?.map { $0["name"] } == expected, "\(object)")
            }
        }
    }
}

/// How many times `needle` occurs in `haystack` (not overlapping).
private func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
    guard let first = needle.first, haystack.count >= needle.count else { return 0 }
    var count = 0
    var index = 0
    while index <= haystack.count - needle.count {
        if haystack[index] == first && haystack[index..<index + needle.count].elementsEqual(needle) {
            count += 1
            index += needle.count
        } else {
            index += 1
        }
    }
    return count
}

/// Reads a streamed response until `marker` shows up (or the socket's timeout passes).
private func read(_ socket: Int32, until marker: String, into received: inout String) -> Bool {
    var buffer = [UInt8](repeating: 0, count: 8192)
    while !received.contains(marker) {
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        if count <= 0 { return false }
        received += String(decoding: buffer[0..<count], as: UTF8.self)
    }
    return true
}

/// A test's client end of an event stream: its socket (closed by `close()`), and its body read past the response head
/// with the chunked framing taken off (a chunk may end inside an event, which a search of the raw bytes misses).
private final class EventStreamClient {
    let socket: Int32
    /// Received past the head and not decoded yet.
    private var raw: [UInt8]
    /// Data bytes left in the current chunk, and whether the CRLF after a chunk's data is still to skip.
    private var remaining = 0
    private var skipsLineEnd = false

    /// Opens a stream of `target` whose reads give up after `timeout` seconds; throws unless its head says
    /// `text/event-stream`.
    init(_ client: TestHTTPClient, _ target: String, timeout seconds: Int = 10) throws {
        let socket = try client.connect()
        self.socket = socket
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        try client.send(
            Array("GET \(target) HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".utf8), on: socket)
        var received: [UInt8] = []
        let end = Array("\r\n\r\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while occurrences(of: end, in: received) == 0 {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        let head = received.indices.first { received[$0...].starts(with: end) }
        guard let head, occurrences(of: Array("text/event-stream".utf8), in: Array(received[..<head])) > 0 else {
            Glibc.close(socket)
            throw TestHTTPError(
                description: "no event stream for \(target): \(String(decoding: received, as: UTF8.self))")
        }
        raw = Array(received[(head + end.count)...])
    }

    func close() { Glibc.close(socket) }

    /// The next body bytes: what is buffered, else what one `recv` brings; nil once the connection ended or timed out.
    func next() -> [UInt8]? {
        while true {
            let decoded = decode()
            if !decoded.isEmpty { return decoded }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            raw += buffer[0..<count]
        }
    }

    private func decode() -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < raw.count {
            if remaining > 0 {
                let count = min(remaining, raw.count - index)
                out += raw[index..<index + count]
                (index, remaining) = (index + count, remaining - count)
                skipsLineEnd = remaining == 0
            } else if skipsLineEnd {
                guard raw.count - index >= 2 else { break }
                (index, skipsLineEnd) = (index + 2, false)
            } else {
                guard let lineEnd = raw[index...].firstIndex(of: UInt8(ascii: "\n")) else { break }
                let size = String(decoding: raw[index..<lineEnd], as: UTF8.self).prefix { $0.isHexDigit }
                remaining = Int(size, radix: 16) ?? 0
                index = lineEnd + 1
            }
        }
        raw.removeFirst(index)
        return out
    }

    /// Reads on until `done` says so (or the stream ends): how many `event: change` came, and whether
    /// `client-too-slow` did. Each piece is searched with the end of the one before, too short to hold a marker again
    /// (a marker is counted once), in bytes (String searches of megabytes are slow in a debug build).
    func readEvents(
        pause: useconds_t = 0, until done: (_ changes: Int, _ tooSlow: Bool) -> Bool
    ) -> (changes: Int, tooSlow: Bool) {
        let tooSlowMarker = Array("event: error\ndata: {\"error\":{\"code\":\"client-too-slow\"".utf8)
        let change = Array("event: change".utf8)
        var tail: [UInt8] = []
        var (changes, tooSlow) = (0, false)
        while !done(changes, tooSlow), let piece = next() {
            tooSlow = tooSlow || occurrences(of: tooSlowMarker, in: tail.suffix(tooSlowMarker.count - 1) + piece) > 0
            changes += occurrences(of: change, in: tail.suffix(change.count - 1) + piece)
            tail = Array((tail + piece).suffix(tooSlowMarker.count))
            if pause > 0 { usleep(pause) }
        }
        return (changes, tooSlow)
    }
}

struct ServerSentEventsTests {
    @Test func deletingTheObserverEndsItsStreamsAtOnce() throws {
        try withService { client in
            let observer = try client.request(
                "POST", "/observers", json: #"{"target": "Employee/4", "keyPath": "salary"}"#)
            let id = try #require(observer.json?["id"]?.stringValue)
            let stream = try EventStreamClient(client, "/observers/\(id)/changes", timeout: 3)
            defer { stream.close() }
            let socket = stream.socket
            var received = ""
            #expect(try client.request("DELETE", "/observers/\(id)").status == 204)
            // Well before the 15 s heartbeat.
            #expect(read(socket, until: "no-such-observer", into: &received))
        }
    }

    /// Deleting an observer ends its stream also while a page of the stream's backlog is on its way to a client that
    /// does not read: the stream does not keep its place among the waiters until the client reads.
    @Test func deletingTheObserverEndsAStreamWhosePageIsOnItsWay() throws {
        // An observer's history holds a sixteenth of `historyBytes` in values: all of the backlog here.
        try withService(observation: .init(historyBytes: 1 << 30)) { client in
            let observer = try client.request(
                "POST", "/observers", json: #"{"target": "Employee/4", "keyPath": "firstName", "options": ["new"]}"#)
            let id = try #require(observer.json?["id"]?.stringValue)
            let since = try #require(observer.json?["since"]?.integerValue)
            // 15 MB of backlog, more than the kernel's buffers hold for a client that reads nothing.
            let long = String(repeating: "x", count: 50_000)
            for index in 0..<300 {
                #expect(
                    try client.request("PUT", "/objects/Employee/4/firstName", json: "\"\(index)\(long)\"").status
                        == 200)
            }
            func streams() throws -> Substring? {
                try client.request("GET", "/metrics").text.split(separator: "\n").first {
                    $0.hasPrefix("bindery_event_streams ")
                }
            }
            let stream = try EventStreamClient(client, "/observers/\(id)/changes?since=\(since)")
            defer { stream.close() }
            usleep(500_000)
            #expect(try streams() == "bindery_event_streams 1")
            #expect(try client.request("DELETE", "/observers/\(id)").status == 204)
            var counted = try streams()
            for _ in 0..<30 where counted != "bindery_event_streams 0" {
                usleep(100_000)
                counted = try streams()
            }
            #expect(counted == "bindery_event_streams 0")
            // The page on its way, then the error event that says why the stream ends.
            let marker = Array("no-such-observer".utf8)
            var (tail, told) = ([UInt8](), false)
            while !told, let piece = stream.next() {
                told = occurrences(of: marker, in: tail + piece) > 0
                tail = Array(piece.suffix(marker.count - 1))
            }
            #expect(told)
        }
    }

    /// A client that stops reading does not make the server buffer every change for it: it is cut off
    /// `client-too-slow`, or, when the observation queue fell behind the writes (a loaded machine), sent its backlog
    /// page by page, the next once the last was read. Either way the stream holds at most its 4 MiB of unsent events
    /// (`maxUnsentEventBytes`) and one event more: with the queue lagging part of the time, some changes go as they
    /// come and the rest by page (4.4 MB held once under the full suite's load), never the 16 changes' 22 MB.
    @Test func aStreamWhoseClientStopsReading_endsWithClientTooSlow() throws {
        try withServiceAndServer { client, server in
            let stream = try EventStreamClient(client, "/changes")
            defer { stream.close() }
            // Each change is an event of ~1.4 MB (old and new); the kernel's buffers hold up to ~10 MB of them.
            let held = try maximumUnsent(of: server) {
                for round in 0..<16 {
                    let value = String(repeating: round % 2 == 0 ? "a" : "b", count: 700_000)
                    let put = try client.request("PUT", "/objects/Employee/4/firstName", json: "\"\(value)\"")
                    #expect(put.status == 200)
                }
            }
            let (changes, tooSlow) = stream.readEvents { changes, tooSlow in tooSlow || changes >= 16 }
            #expect(
                (tooSlow && changes < 16) || (changes == 16 && held <= (4 << 20) + 1_500_000),
                "\(changes) changes, \(held) bytes held")
        }
    }

    /// The most bytes `server` held unsent for clients while `body` ran and a while after, until some were held (the
    /// observation queue renders behind the writes), sampled every 200 µs: they are held only between a render and
    /// the stream's end or the kernel's buffers taking them, which can be brief.
    func maximumUnsent(of server: HTTPServer, during body: () throws -> Void) throws -> Int {
        let sampled = Atomic<Int>(0)
        let sampling = Atomic<Bool>(true)
        let sampler = background {
            while sampling.load(ordering: .relaxed) {
                let now = server.unsentByteCount
                if now > sampled.load(ordering: .relaxed) { sampled.store(now, ordering: .relaxed) }
                usleep(200)
            }
        }
        try body()
        for _ in 0..<200 where sampled.load(ordering: .relaxed) == 0 { usleep(10_000) }
        sampling.store(false, ordering: .relaxed)
        try sampler()
        return sampled.load(ordering: .relaxed)
    }

    /// Event streams' unread bytes count in what the server holds for clients (`--max-unsent`, `/metrics`): past
    /// that, a stream holding unread bytes ends with `client-too-slow`, so streams that never read cannot together
    /// make the server hold any amount (300 held 9.3 GB).
    @Test func streamsThatDoNotReadAreHeldToTheServersUnsentLimitTogether() throws {
        try withServiceAndServer(maxUnsent: 1 << 20) { client, server in
            var streams: [EventStreamClient] = []
            defer { for stream in streams { stream.close() } }
            for _ in 0..<2 { streams.append(try EventStreamClient(client, "/changes")) }
            let held = try maximumUnsent(of: server) {
                for round in 0..<16 {
                    let value = String(repeating: round % 2 == 0 ? "a" : "b", count: 700_000)
                    let put = try client.request("PUT", "/objects/Employee/4/firstName", json: "\"\(value)\"")
                    #expect(put.status == 200)
                }
            }
            // Counted (and held to the limit, but for what one write adds while nothing else is held: a push renders
            // every change that came since the last, ~1.4 MB each with old and new values, several when the
            // observation queue is behind).
            #expect(held > 0, "the streams' unread bytes are counted")
            // Ended `client-too-slow`, or, when the observation queue fell behind the writes, sent its backlog page by
            // page, the next once the last was read: at most a page (1 MiB and the seq that passes it) held each.
            let (changes, tooSlow) = streams[0].readEvents { changes, tooSlow in tooSlow || changes >= 16 }
            #expect(
                tooSlow || (changes == 16 && held <= 2 * (ObservationCenter.streamPageBytes + 1_500_000)),
                "\(changes) changes, \(held) bytes held")
            for stream in streams { stream.close() }
            streams = []
            for _ in 0..<500 where server.unsentByteCount != 0 { usleep(10_000) }
            #expect(server.unsentByteCount == 0)
        }
    }

    /// A stream that starts far back is sent its backlog a page of about a megabyte at a time, the next once the
    /// client has read the last: it holds one page unread, not the whole backlog (1,000 large changes were one write
    /// of tens of megabytes), and a client that reads on while writes go on catches up, where each write pushed a
    /// page at once and the stream ended `client-too-slow`.
    @Test func aStreamFarBackIsSentPagesAndCatchesUpWhileWritesGoOn() throws {
        try withServiceAndServer { client, server in
            let since = try #require(client.request("GET", "/healthz").header("X-Store-Seq"))
            // 20 MB of backlog: more than the kernel's socket buffers take from the server.
            for round in 0..<200 {
                let value = String(repeating: round % 2 == 0 ? "a" : "b", count: 50_000)
                #expect(try client.request("PUT", "/objects/Employee/4/firstName", json: "\"\(value)\"").status == 200)
            }
            let stream = try EventStreamClient(client, "/changes?since=\(since)")
            defer { stream.close() }
            var held = 0
            for _ in 0..<50 {
                held = max(held, server.unsentByteCount)
                usleep(10_000)
            }
            #expect(held < 2 << 20, "unread: \(held) bytes")  // a page the kernel's buffers did not take, at most
            // Reads on slowly, while writes go on: every change arrives, and no client-too-slow.
            let writer = background {
                for round in 0..<5 {
                    usleep(100_000)
                    _ = try client.request("PUT", "/objects/Employee/5/salary", json: "\(1000 + round)")
                }
            }
            let (changes, tooSlow) = stream.readEvents(pause: 4_000) { changes, tooSlow in changes >= 205 || tooSlow }
            try writer()
            #expect(!tooSlow)
            #expect(changes == 205)
        }
    }

    @Test func queryChecksOfTheFeeds() throws {
        try withService { client in
            let unknown = try client.request("GET", "/changes?entity=Nope&timeout=0")
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == "no-such-entity")
            for timeout in ["0x10", "1e2", "nan", "-1"] {
                #expect(try client.request("GET", "/changes?timeout=\(timeout)").status == 400, "\(timeout)")
            }
            #expect(try client.request("GET", "/changes?entity=Employee&timeout=0.5").status == 200)
        }
    }

    @Test func aStreamThatCannotStartIsAnErrorStatus() throws {
        try withService { client in
            let sse = ["Accept": "text/event-stream"]
            let compacted = try client.request("GET", "/changes?since=99", headers: sse)
            #expect(compacted.status == 410)
            #expect(compacted.errorCode == "history-compacted")
            let resumed = try client.request("GET", "/changes", headers: sse.merging(["Last-Event-ID": "99"]) { $1 })
            #expect(resumed.status == 410)
            // An id this service never sends is not taken as "from now" (that would skip changes silently).
            // White space around the value is not part of it.
            let spaced = try client.request("GET", "/changes", headers: sse.merging(["Last-Event-ID": "99\t "]) { $1 })
            #expect(spaced.status == 410)
            for id in ["99999999999999999999", "abc", "-1", "1.5"] {
                let odd = try client.request("GET", "/changes", headers: sse.merging(["Last-Event-ID": id]) { $1 })
                #expect(odd.status == 400, "\(id)")
                #expect(odd.errorCode == "bad-query", "\(id)")
            }
            #expect(try client.request("GET", "/observers/o404/changes", headers: sse).status == 404)
        }
    }

    /// The notification feed streams with the one event name API.md §7 gives the feeds: `change`.
    @Test func notificationsStreamAsChangeEvents() throws {
        try withService { client in
            let socket = try client.connect()
            defer { close(socket) }
            try client.send(
                Array("GET /notifications?since=0 HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".utf8),
                on: socket)
            _ = try client.request("POST", "/notifications", json: #"{"name": "Ping"}"#)
            var received = ""
            #expect(read(socket, until: "event: change\ndata: {\"name\":\"Ping\"", into: &received))
            #expect(!received.contains("event: notification"))
        }
    }

    @Test func streamsChangesAndResumesFromLastEventID() throws {
        try withService(observation: .init(heartbeatInterval: 0.3)) { client in
            let socket = try client.connect()
            defer { close(socket) }
            try client.send(
                Array("GET /changes?since=1 HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".utf8), on: socket)
            var received = ""
            #expect(read(socket, until: ": heartbeat", into: &received))
            #expect(received.contains("Content-Type: text/event-stream"))
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "11")
            _ = try client.request("PUT", "/objects/Employee/4/salary", json: "12")
            #expect(read(socket, until: "id: 3\nevent: change\n", into: &received))
            #expect(received.contains("id: 2\nevent: change\ndata: {\"keyPath\":\"salary\",\"kind\":\"setting\""))

            let resumed = try client.connect()
            defer { close(resumed) }
            try client.send(
                Array("GET /changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nLast-Event-ID: 2\r\n\r\n".utf8),
                on: resumed)
            var again = ""
            #expect(read(resumed, until: "id: 3\n", into: &again))
            #expect(!again.contains("id: 2\n"))

            // A transaction's changes share a seq: only the last of them carries the id, so a client that loses the
            // connection in the middle resumes from the seq before and is sent the whole transaction again.
            let inserted = try client.request(
                "POST", "/objects/Employee",
                json: #"{"firstName": "A", "lastName": "B", "department": {"$ref": "Department/1"}}"#)
            #expect(inserted.status == 201)
            var group = ""
            #expect(read(resumed, until: "id: 4\n", into: &group))
            let events = group.components(separatedBy: "\n\n").filter { $0.contains("event: change") }
            let lastOfGroup = try #require(events.last)
            #expect(events.count > 2)
            #expect(events.dropLast().allSatisfy { !$0.contains("id: ") })
            #expect(lastOfGroup.hasPrefix("id: 4\nevent: change"))
        }
    }
}

struct ControllerObservingTests {
    @Test func controllerAndDefaultsKeysAreObservable() throws {
        try withService { client in
            let selection = try client.request(
                "POST", "/observers",
                json:
                    #"{"target": "controllers/employees", "keyPath": "selection.lastName", "options": ["new", "old"]}"#)
            #expect(selection.status == 201)
            let selectionID = try #require(selection.json?["id"]?.stringValue)
            let theme = try client.request(
                "POST", "/observers", json: #"{"target": "defaults", "keyPath": "theme", "options": ["new"]}"#)
            let themeID = try #require(theme.json?["id"]?.stringValue)
            // The binding form (`values.theme`) observes the same default.
            let bound = try client.request(
                "POST", "/observers", json: #"{"target": "defaults", "keyPath": "values.theme", "options": ["new"]}"#)
            let boundID = try #require(bound.json?["id"]?.stringValue)
            let waiting = background {
                try client.request("GET", "/observers/\(selectionID)/changes?since=1&timeout=10")
            }
            usleep(200_000)
            // Selecting another department re-targets the detail controller's selection.
            _ = try client.request("PUT", "/controllers/departments/selectionIndexes", json: "[1]")
            let answer = try waiting()
            #expect(changes(answer).first?["new"] == "Babbage")
            #expect(changes(answer).first?["old"] == "Allen")
            _ = try client.request("PUT", "/defaults/theme", json: #""dark""#)
            let themeChanges = changes(try client.request("GET", "/observers/\(themeID)/changes?since=1&timeout=5"))
            #expect(themeChanges.map { $0["new"] } == ["dark"])
            let boundChanges = changes(try client.request("GET", "/observers/\(boundID)/changes?since=1&timeout=5"))
            #expect(boundChanges.map { $0["new"] } == ["dark"])
            let notifications = try client.request("GET", "/notifications?since=0&name=DefaultsDidChange&timeout=0")
            #expect(notifications.json?["notifications"]?.arrayValue?.count == 1)
            #expect(
                try client.request(
                    "POST", "/observers", json: #"{"target": "controllers/nope", "keyPath": "selection"}"#
                )
                .status == 404)
        }
    }

    /// A key path that names no possible default (`$x`, as `PUT /defaults/%24x` refuses; an empty name) is refused at
    /// registration, as `PUT` refuses it, rather than observed as null for ever; a key that is not set yet is taken.
    @Test func defaultsObserversRefuseKeysNoDefaultCanHave() throws {
        try withService { client in
            for keyPath in ["$x", "values.$x", "values.", "$x.y"] {
                let answer = try client.request(
                    "POST", "/observers", json: #"{"target": "defaults", "keyPath": "\#(keyPath)"}"#)
                #expect(answer.status == 400, "\(keyPath)")
                #expect(answer.json?["error"]?["code"] == "bad-key-path", "\(keyPath)")
            }
            #expect(try client.request("PUT", "/defaults/%24x", json: "1").status == 400)
            for keyPath in ["notSetYet", "values.notSetYet", "a.$b"] {
                let answer = try client.request(
                    "POST", "/observers", json: #"{"target": "defaults", "keyPath": "\#(keyPath)"}"#)
                #expect(answer.status == 201, "\(keyPath)")
            }
        }
    }

    /// Every change of a default is reported with its own value, also when the observation queue lags behind several
    /// (each change leaves a snapshot; the queue reads that, not the latest state), and answered with its own value.
    @Test func defaultsObserversSeeEveryValueWhileTheQueueLags() throws {
        let queue = DispatchQueue(label: "test.lagging")
        try withService(observationQueue: queue) { client in
            let registered = try client.request(
                "POST", "/observers", json: #"{"target": "defaults", "keyPath": "theme", "options": ["new", "old"]}"#)
            let id = try #require(registered.json?["id"]?.stringValue)
            let since = try #require(registered.json?["since"]?.integerValue)
            queue.suspend()
            for n in 1...20 {
                #expect(try client.request("PUT", "/defaults/theme", json: "\(n)").json == .integer(Int64(n)))
            }
            queue.resume()
            var seen: [PropertyListValue] = []
            var last = since
            for _ in 0..<20 where seen.count < 20 {
                let answer = try client.request("GET", "/observers/\(id)/changes?since=\(last)&timeout=5")
                seen += changes(answer)
                last = try #require(answer.json?["last"]?.integerValue)
            }
            #expect(seen.map { $0["new"] } == (1...20).map { .integer(Int64($0)) })
            #expect(seen.map { $0["old"] } == ["light"] + (1...19).map { .integer(Int64($0)) })
        }
    }

    /// Observers that re-read their value (of the defaults, of a key path through a relationship) tell `0.0` from
    /// `-0.0`, as the store and the defaults file do.
    @Test(arguments: [
        (value: "/defaults/ratio", target: "defaults", keyPath: "ratio"),
        (value: "/objects/Department/1/budget", target: "", keyPath: "department.budget"),
    ])
    func reReadingObserverSeesNegativeZeroReplaceZero(value: String, target: String, keyPath: String) throws {
        try withService { client in
            _ = try client.request("PUT", value, json: "0.0")
            // An employee of Department/1 when the target is not given.
            let employee = try client.request("GET", "/objects/Department/1/employees").json?.arrayValue?.first
            let observed = target.isEmpty ? try #require(employee?["$ref"]?.stringValue) : target
            let observer = try client.request(
                "POST", "/observers",
                json: #"{"target": "\#(observed)", "keyPath": "\#(keyPath)", "options": ["new"]}"#)
            let id = try #require(observer.json?["id"]?.stringValue)
            let since = try #require(observer.json?["since"]?.integerValue)
            _ = try client.request("PUT", value, json: "-0.0")
            let answer = try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=5")
            #expect(changes(answer).map { $0["new"]?.doubleValue?.sign } == [.minus])
        }
    }

    @Test func selectionChangesHaveSeqsOfTheirOwnAndAreAnsweredBySince() throws {
        try withService { client in
            let observer = try client.request(
                "POST", "/observers",
                json: #"{"target": "controllers/employees", "keyPath": "selectionIndexes", "options": ["new"]}"#)
            let id = try #require(observer.json?["id"]?.stringValue)
            let since = try #require(observer.json?["since"]?.integerValue)
            // A poll whose client is gone must not take the changes with it.
            let abandoned = background {
                try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=1")
            }
            usleep(200_000)
            _ = try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[2]")
            _ = try abandoned()
            _ = try client.request("PUT", "/controllers/employees/selectionIndexes", json: "[3]")
            var answer = try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=5")
            for _ in 0..<50 where changes(answer).count < 2 {
                usleep(20_000)
                answer = try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=5")
            }
            let found = changes(answer)
            #expect(found.map { $0["new"] } == [[2], [3]])
            let seqs = found.compactMap { $0["seq"]?.integerValue }
            #expect(seqs.count == 2 && since < seqs[0] && seqs[0] < seqs[1])
            #expect(answer.json?["last"]?.integerValue == seqs.last)
            // The same `since` again gets the same answer; the first change's seq gets the second only.
            #expect(changes(try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=0")) == found)
            #expect(
                changes(try client.request("GET", "/observers/\(id)/changes?since=\(seqs[0])&timeout=0")) == [found[1]])
            // A selection is neither an edit of the document nor an undoable change.
            let actions = try client.request("GET", "/actions").json?["actions"]?.arrayValue ?? []
            #expect(actions.first { $0["action"] == "undo" }?["enabled"] == false)
            #expect(actions.first { $0["action"] == "revertToSaved" }?["enabled"] == false)
            #expect(try client.request("GET", "/changes?since=\(since)&timeout=0").json?["changes"] == [])
        }
    }

    @Test func aDefaultsObserverFollowsAKeyPathIntoADictionaryDefault() throws {
        try withService { client in
            _ = try client.request("PUT", "/defaults/window", json: #"{"w": 5, "h": 2}"#)
            var ids: [(String, Int64)] = []
            for keyPath in ["window.w", "values.window.w"] {
                let observer = try client.request(
                    "POST", "/observers",
                    json: #"{"target": "defaults", "keyPath": "\#(keyPath)", "options": ["new", "initial"]}"#)
                ids.append(
                    (
                        try #require(observer.json?["id"]?.stringValue),
                        try #require(observer.json?["since"]?.integerValue)
                    ))
            }
            _ = try client.request("PUT", "/defaults/window", json: #"{"w": 6, "h": 2}"#)
            _ = try client.request("PUT", "/defaults/window", json: #"{"w": 6, "h": 3}"#)
            _ = try client.request("PUT", "/defaults/window", json: "7")
            for (id, since) in ids {
                let answer = try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=0")
                #expect(changes(answer).map { $0["new"] } == [5, 6, .null], "\(answer.text)")
            }
        }
    }

    @Test func aPollRightAfterCommitEditingSeesControllerDidCommitEditing() throws {
        try withService { client in
            // Busy cores make the registry's queue late with the notification, as a loaded server's is.
            let busy = Atomic(true)
            for _ in 0..<3 {
                Thread.detachNewThread {
                    var spin = 0
                    while busy.load(ordering: .relaxed) { spin &+= 1 }
                }
            }
            defer { busy.store(false, ordering: .relaxed) }
            for round in 0..<30 {
                let last = try #require(
                    try client.request("GET", "/notifications?timeout=0").json?["last"]?.integerValue)
                _ = try client.request("PUT", "/controllers/employees/edits/lastName", json: #""Name \#(round)""#)
                #expect(try client.request("POST", "/controllers/employees/commitEditing").status == 200)
                let answer = try client.request(
                    "GET", "/notifications?since=\(last)&name=ControllerDidCommitEditing&timeout=0")
                #expect(answer.json?["notifications"]?.arrayValue?.count == 1, "round \(round): \(answer.text)")
            }
        }
    }

    @Test func aPollRightAfterTheAnswerSeesTheControllerChangesItCaused() throws {
        try withService { client in
            func observe(_ target: String, _ keyPath: String) throws -> (id: String, since: Int64) {
                let observer = try client.request(
                    "POST", "/observers", json: #"{"target": "\#(target)", "keyPath": "\#(keyPath)"}"#)
                return (
                    try #require(observer.json?["id"]?.stringValue), try #require(observer.json?["since"]?.integerValue)
                )
            }
            // The changes reach the observers on other queues, after the answer: a poll with timeout 0 waits for them.
            for round in 0..<10 {
                let selection = try observe("controllers/departments", "selection.name")
                let detail = try observe("controllers/employees", "arrangedObjects.@count")
                let salaries = try observe("controllers/employees", "arrangedObjects.salary")
                _ = try client.request(
                    "PUT", "/controllers/departments/selectionIndexes", json: "[\(round % 2 == 0 ? 1 : 0)]")
                for (id, since) in [selection, detail] {
                    let answer = try client.request("GET", "/observers/\(id)/changes?since=\(since)&timeout=0")
                    #expect(changes(answer).count == 1, "round \(round): \(answer.text)")
                }
                let shown = try #require(
                    try client.request("GET", "/controllers/employees/arrangedObjects").json?.arrayValue?.first?["$id"]?
                        .stringValue)
                let after = try client.request(
                    "GET", "/observers/\(salaries.id)/changes?since=\(salaries.since)&timeout=0")
                _ = try client.request("PUT", "/objects/\(shown)/salary", json: "\(100 + round)")
                let answer = try client.request(
                    "GET", "/observers/\(salaries.id)/changes?since=\(after.json?["last"]?.integerValue ?? 0)&timeout=0"
                )
                #expect(changes(answer).count == 1, "round \(round): \(answer.text)")
                for id in [selection.id, detail.id, salaries.id] {
                    _ = try client.request("DELETE", "/observers/\(id)")
                }
            }
        }
    }
}
