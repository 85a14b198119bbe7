import Foundation
import HTTPTestSupport
import PropertyList
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `bindery` executable next to the test bundle (the same build folder), if it was built.
let binderyBinary: String? = {
    let buildFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [buildFolder.appendingPathComponent("bindery").path, packageRoot + "/.build/debug/bindery"]
    where FileManager.default.isExecutableFile(atPath: candidate) {
        return candidate
    }
    return nil
}()

/// A `bindery serve` child process on a free port.
struct ServerProcess {
    let process: Process
    let port: UInt16
    let errors: Pipe

    var client: TestHTTPClient { TestHTTPClient(port: port, timeout: 5) }

    /// Starts the server and waits for its `listening` line; nil (with the exit status) when it exits first.
    /// With `fileSizeLimit` (in 512-byte blocks), no file it writes can grow past that size (`ulimit -S -f`, with
    /// SIGXFSZ ignored, so that a write past it fails with EFBIG as on a full disk; `prlimit` can lift it). With
    /// `openFiles`, its limit on open files (soft and hard). `arguments` come last (a flag given twice takes its last
    /// value).
    static func start(
        data: String, fsync: String = "always", fileSizeLimit: Int? = nil, openFiles: Int? = nil,
        arguments extra: [String] = []
    ) throws -> (ServerProcess?, Int32, String) {
        let process = Process()
        let binary = binderyBinary ?? "/nonexistent"
        let arguments =
            [
                "serve", "--fixture", packageRoot + "/Fixtures/employees", "--data", data, "--port", "0", "--fsync",
                fsync,
                "--public", packageRoot + "/Public", "--threads", "4",
            ] + extra
        let limits =
            (fileSizeLimit.map { ["trap '' XFSZ; ulimit -S -f \($0)"] } ?? [])
            + (openFiles.map { ["ulimit -n \($0)"] } ?? [])
        if !limits.isEmpty {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments =
                ["-c", limits.joined(separator: "; ") + "; exec \"$0\" \"$@\"", binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = arguments
        }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        var line: [UInt8] = []
        let handle = output.fileHandleForReading
        while true {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty { break }
            if byte.first == UInt8(ascii: "\n") { break }
            line.append(contentsOf: byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            process.waitUntilExit()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (nil, process.terminationStatus, message)
        }
        return (ServerProcess(process: process, port: port, errors: errors), 0, "")
    }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Sends the signal (SIGTERM unless told) and returns the exit status; -1 (after a SIGKILL) when the server is
    /// still running 10 s later, so a lost signal fails the test instead of hanging the suite.
    func terminate(_ signalNumber: Int32 = SIGTERM) -> Int32 {
        kill(process.processIdentifier, signalNumber)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        guard !process.isRunning else {
            kill9()
            return -1
        }
        return process.terminationStatus
    }
}

/// Runs `body` on `count` threads at once and waits for all.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> [Thread] {
    (0..<count).map { index in
        let thread = Thread { body(index) }
        thread.start()
        return thread
    }
}

/// The real executable: restart, kill -9 and the lock on the data directory (API.md §0, §9).
@Suite(.enabled(if: binderyBinary != nil, "needs the bindery executable in the build folder"), .serialized)
struct PersistenceProcessTests {
    /// With `--fsync batch`, a read is answered once what it shows is durable: under writes, an object's ETag is
    /// never above the read's `X-Store-Seq` (it was in about half the reads while reads showed undurable changes).
    /// So is a `412`, which shows the object as it is (`current`, its `ETag`): it was above in 16,430 of 19,261.
    @Test(arguments: [false, true])
    func batchReadsAreAnsweredOnceWhatTheyShowIsDurable(refusedWrites: Bool) throws {
        try withTemporaryDataDirectory { data in
            let (started, _, _) = try ServerProcess.start(data: data, fsync: "batch")
            let server = try #require(started)
            defer { _ = server.terminate() }
            let client = server.client
            let wrong = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                for n in 0..<300 {
                    guard worker == 0 else {
                        _ = try? client.request("PUT", "/objects/Employee/20/salary", json: "\(n * 10 + worker)")
                        continue
                    }
                    let request =
                        refusedWrites
                        ? try? client.request(
                            "PUT", "/objects/Employee/20/salary", headers: ["If-Match": "\"1\""], json: "1")
                        : try? client.request("GET", "/objects/Employee/20")
                    guard let read = request, read.status == (refusedWrites ? 412 : 200),
                        let told = read.header("X-Store-Seq").flatMap({ Int64($0) }),
                        let tag = read.header("ETag").flatMap({ Int64($0.filter(\.isNumber)) })
                    else { continue }
                    if tag > told { wrong.withLock { $0.append("ETag \(tag), X-Store-Seq \(told)") } }
                }
            }
            #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { $0.prefix(5) })")
        }
    }

    @Test func restartKeepsChangesAndTheLockRefusesASecondServer() throws {
        try withTemporaryDataDirectory { data in
            let (started, _, _) = try ServerProcess.start(data: data, fsync: "batch")
            let server = try #require(started)
            let client = server.client
            #expect(try client.request("PUT", "/objects/Employee/3/salary", json: "4321").status == 200)
            let insert = try client.request(
                "POST", "/objects/Department", json: #"{"$id": "77", "name": "Persisted"}"#)
            #expect(insert.status == 201)
            let (second, status, message) = try ServerProcess.start(data: data)
            #expect(second == nil)
            #expect(status != 0)
            #expect(message.contains("in use by another bindery"))
            #expect(server.terminate() == 0)
            let (restarted, _, _) = try ServerProcess.start(data: data)
            let again = try #require(restarted)
            defer { _ = again.terminate() }
            #expect(try again.client.request("GET", "/objects/Employee/3/salary").json == 4321)
            #expect(try again.client.request("GET", "/objects/Department/77/name").json == "Persisted")
            #expect(try again.client.request("GET", "/objects/Employee").json?["count"] == 32)
            #expect(try again.client.request("GET", "/healthz").header("X-Store-Seq") == "3")
            // The earlier run's changes are not in this run's history: since=0 is a gap, not a fresh start.
            let gap = try again.client.request("GET", "/changes?since=0&timeout=0")
            #expect(gap.status == 410)
            #expect(gap.json?["error"]?["oldest"] == 3)
        }
    }

    /// A data directory whose store cannot be read refuses the start (exit 1), says why, and says what an operator
    /// can do; the directory is left as it is.
    @Test func aDamagedStoreRefusesTheStartAndSaysWhatToDo() throws {
        try withTemporaryDataDirectory { data in
            let (started, _, _) = try ServerProcess.start(data: data)
            #expect(try #require(started).terminate() == 0)
            let names = try FileManager.default.contentsOfDirectory(atPath: data).filter { $0.hasPrefix("snapshot-") }
            #expect(!names.isEmpty)
            for name in names {
                let path = data + "/" + name
                var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
                bytes[bytes.count / 2] ^= 0xFF
                try Data(bytes).write(to: URL(fileURLWithPath: path))
            }
            let (refused, status, message) = try ServerProcess.start(data: data)
            refused?.kill9()
            #expect(refused == nil && status == 1)
            #expect(message.contains("can be read"), "\(message)")
            #expect(message.contains("is left as it is") && message.contains("move it aside"), "\(message)")
        }
    }

    /// An event stream the client closes is how streams end, not an error: libmicrohttpd's line about the socket
    /// being gone is kept out of the log (its other lines are not).
    @Test func aClosedEventStreamLeavesNoErrorInTheLog() throws {
        try withTemporaryDataDirectory { data in
            let server = try #require(try ServerProcess.start(data: data).0)
            let client = server.client
            for salary in 1...3 {
                let socket = try client.connect()
                let head = "GET /changes?since=1 HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
                try client.send(Array(head.utf8), on: socket)
                usleep(200_000)
                _ = try client.request("PUT", "/objects/Employee/4/salary", json: "\(salary)")
                usleep(200_000)
                close(socket)
                usleep(200_000)
                _ = try client.request("PUT", "/objects/Employee/4/salary", json: "\(salary + 10)")
                usleep(300_000)
            }
            #expect(server.terminate() == 0)
            let stderr = String(decoding: server.errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(!stderr.contains("Failed to send"), "\(stderr)")
        }
    }

    /// A client cannot fill the log: libmicrohttpd's line per malformed request is written at most 20 times in 10 s
    /// (then counted), and a client leaving in the middle of its request writes none.
    @Test func malformedOrAbandonedRequestsCannotFloodTheLog() throws {
        try withTemporaryDataDirectory { data in
            let server = try #require(try ServerProcess.start(data: data).0)
            let client = server.client
            for index in 0..<150 {
                let socket = try client.connect()
                let request =
                    index % 3 == 0
                    ? "POST /objects/Employee HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"first"
                    : "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n"
                try client.send(Array(request.utf8), on: socket)
                usleep(5_000)
                close(socket)
            }
            #expect(try client.request("GET", "/healthz").status == 200)
            #expect(server.terminate() == 0)
            let lines = String(decoding: server.errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .split(separator: "\n")
            let malformed = lines.filter { $0.contains("Error processing request") }.count
            #expect((1...20).contains(malformed), "\(lines)")
            #expect(!lines.contains { $0.contains("incomplete request") }, "\(lines)")
            #expect(lines.contains { $0.contains("more lines were not logged") }, "\(lines)")
        }
    }

    /// A last snapshot that cannot be written shows in the exit status; the journal still holds every change.
    @Test func aFailedSnapshotAtShutdownExitsNonZeroAndLosesNothing() throws {
        try withTemporaryDataDirectory { data in
            let (started, _, _) = try ServerProcess.start(data: data, fsync: "batch")
            let server = try #require(started)
            let put = try server.client.request("PUT", "/objects/Employee/3/salary", json: "4321")
            let seq = try #require(put.header("X-Store-Seq"))
            // The snapshot's temporary file name taken by a directory: the snapshot cannot be written.
            let blocker = data + "/snapshot-" + String(repeating: "0", count: 20 - seq.count) + seq + ".bin.tmp"
            try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: false)
            #expect(server.terminate() == 1)
            let stderr = String(decoding: server.errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(stderr.contains("snapshot at shutdown failed"))
            try FileManager.default.removeItem(atPath: blocker)
            let (restarted, _, _) = try ServerProcess.start(data: data)
            let again = try #require(restarted)
            #expect(try again.client.request("GET", "/objects/Employee/3/salary").json == 4321)
            #expect(again.terminate() == 0)
        }
    }

    /// Whether the document is edited (`revertToSaved` enabled) survives restarts as NSDocument counts it: commits
    /// that only take a seq after a save (an observer's `initial`, an observed controller's selection, the skip after
    /// a crash) and `revertToSaved` leave it unedited; a change to objects leaves it edited.
    @Test func revertToSavedIsEnabledAfterARestartOnlyWhenObjectsChangedSinceTheSave() throws {
        func revertEnabled(_ server: ServerProcess) throws -> Bool? {
            let listed = try server.client.request("GET", "/actions").json?["actions"]?.arrayValue ?? []
            return listed.first { $0["action"] == "revertToSaved" }?["enabled"]?.boolValue
        }
        try withTemporaryDataDirectory { data in
            var server = try #require(try ServerProcess.start(data: data, fsync: "batch").0)
            #expect(try server.client.request("PUT", "/objects/Employee/4/salary", json: "5").status == 200)
            #expect(try server.client.request("POST", "/actions/save").status == 200)
            #expect(try revertEnabled(server) == false)
            let observer = #"{"target": "Employee/4", "keyPath": "salary", "options": ["initial"]}"#
            #expect(try server.client.request("POST", "/observers", json: observer).status == 201)
            let selection = #"{"target": "controllers/departments", "keyPath": "selectionIndexes"}"#
            #expect(try server.client.request("POST", "/observers", json: selection).status == 201)
            let selected = try server.client.request("PUT", "/controllers/departments/selectionIndexes", json: "[1]")
            #expect(selected.status == 200)
            #expect(try revertEnabled(server) == false)
            #expect(server.terminate() == 0)
            server = try #require(try ServerProcess.start(data: data, fsync: "batch").0)
            #expect(try revertEnabled(server) == false, "after a clean restart")
            // A crash: the next start skips seqs with a record of no changes.
            server.kill9()
            server = try #require(try ServerProcess.start(data: data, fsync: "batch").0)
            #expect(try revertEnabled(server) == false, "after a crash")
            #expect(server.terminate() == 0)
            server = try #require(try ServerProcess.start(data: data, fsync: "batch").0)
            #expect(try revertEnabled(server) == false, "after a crash and a clean restart")
            // A change, reverted: unedited, also after a restart.
            #expect(try server.client.request("PUT", "/objects/Employee/4/salary", json: "6").status == 200)
            #expect(try revertEnabled(server) == true)
            #expect(try server.client.request("POST", "/actions/revertToSaved").status == 200)
            #expect(try revertEnabled(server) == false)
            #expect(server.terminate() == 0)
            server = try #require(try ServerProcess.start(data: data, fsync: "batch").0)
            #expect(try revertEnabled(server) == false, "after revertToSaved and a restart")
            #expect(try server.client.request("GET", "/objects/Employee/4/salary").json == 5)
            // A change not saved: edited, also after a restart.
            #expect(try server.client.request("PUT", "/objects/Employee/4/salary", json: "7").status == 200)
            #expect(server.terminate() == 0)
            server = try #require(try ServerProcess.start(data: data, fsync: "batch").0)
            #expect(try revertEnabled(server) == true, "after a change and a restart")
            #expect(server.terminate() == 0)
        }
    }

    /// `--max-controllers` bounds the controllers created at run time (declared ones do not count).
    @Test func maxControllersBoundsTheControllersCreatedAtRunTime() throws {
        try withTemporaryDataDirectory { data in
            let server = try #require(try ServerProcess.start(data: data, arguments: ["--max-controllers", "1"]).0)
            let client = server.client
            let create = { (name: String) in
                try client.request(
                    "POST", "/controllers", json: #"{"name": "\#(name)", "kind": "array", "content": "Employee"}"#)
            }
            #expect(try create("first").status == 201)
            let refused = try create("second")
            #expect(refused.status == 503)
            #expect(refused.errorCode == "too-many-controllers")
            #expect(refused.json?["error"]?["limit"] == 1)
            #expect(server.terminate() == 0)
        }
    }

    /// A number a flag cannot take stops the start with the reason (exit 64): never a trap (`--threads` beyond 32 bits
    /// trapped), nor "Missing value" for a negative one.
    @Test(arguments: [
        (["--threads", "4294967296"], "--threads must be from 1 to 4096"), (["--port", "-1"], "'-1' is invalid"),
        (["--history", "-5"], "--history must be positive"),
        (["--max-controllers", "-1"], "--max-controllers must not be negative"),
        (["--max-receiving", "0"], "--max-receiving must be positive"), (["--data", ""], "--data must name a folder"),
        (["--fixture", ""], "--fixture must name a folder"),
        (["--cors", ""], "--cors must be * or an origin"), (["--cors", "https://a.example\r\nX: y"], "--cors must be"),
    ])
    func aFlagOutOfItsRangeIsRefusedWithTheReason(arguments: [String], reason: String) throws {
        try withTemporaryDataDirectory { data in
            let (server, status, message) = try ServerProcess.start(data: data, arguments: arguments)
            server?.kill9()
            #expect(server == nil && status == 64, "\(arguments)")
            #expect(message.contains(reason), "\(message)")
        }
    }

    /// A supervisor may signal as soon as the listening line appears; the handlers are in place by then. SIGHUP (a
    /// closed terminal) stops it as cleanly as SIGINT and SIGTERM.
    @Test func aSignalRightAfterTheListeningLineStopsTheServerCleanly() throws {
        try withTemporaryDataDirectory { data in
            for round in 0..<9 {
                let (started, _, _) = try ServerProcess.start(data: data, fsync: "batch")
                let server = try #require(started)
                #expect(server.terminate([SIGTERM, SIGINT, SIGHUP][round % 3]) == 0, "round \(round)")
            }
        }
    }

    /// With `always` every commit is flushed before its answer; with `batch` the answer waits for the group's flush.
    @Test(arguments: ["always", "batch"])
    func killNineDuringConcurrentWritesLosesNoAcknowledgedWrite(fsync: String) throws {
        try withTemporaryDataDirectory { data in
            let writers = 4
            var expected = [Int](repeating: 0, count: writers)
            for round in 0..<3 {
                let (started, _, _) = try ServerProcess.start(data: data, fsync: fsync)
                let server = try #require(started)
                for writer in 0..<writers {
                    let value = try server.client.request("GET", "/objects/Employee/\(writer + 1)/salary").json
                    let stored = Int(value?.integerValue ?? -1)
                    // Acknowledged writes are all there; at most the one in flight at the kill is there too.
                    if round > 0 {
                        #expect(
                            stored == expected[writer] || stored == expected[writer] + 1, "\(fsync) round \(round)")
                    }
                    expected[writer] = stored
                }
                let acknowledged = Mutex([Int](expected))
                let start = expected
                let threads = onThreads(writers) { writer in
                    let client = server.client
                    var value = start[writer]
                    while true {
                        value += 1
                        guard
                            let response = try? client.request(
                                "PUT", "/objects/Employee/\(writer + 1)/salary", json: String(value)),
                            response.status == 200
                        else { return }
                        acknowledged.withLock { $0[writer] = value }
                    }
                }
                Thread.sleep(forTimeInterval: 0.6)
                server.kill9()
                while threads.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.01) }
                expected = acknowledged.withLock { $0 }
                #expect(zip(expected, start).allSatisfy { $0 > $1 }, "every writer got writes acknowledged")
            }
            let (started, _, _) = try ServerProcess.start(data: data, fsync: fsync)
            let server = try #require(started)
            defer { _ = server.terminate() }
            for writer in 0..<writers {
                let stored = try server.client.request("GET", "/objects/Employee/\(writer + 1)/salary").json
                let value = Int(stored?.integerValue ?? -1)
                #expect(value == expected[writer] || value == expected[writer] + 1)
            }
        }
    }

    /// Requests that the observation queue answers (`/metrics`, registering and removing observers) wait on it from
    /// the server's threads; stopping the server joins those threads, so the stop must not run on that queue.
    @Test func sigtermWhileRequestsWaitOnTheObservationQueueStopsTheServer() throws {
        try withTemporaryDataDirectory { data in
            let (started, _, _) = try ServerProcess.start(data: data)
            let server = try #require(started)
            let threads = onThreads(6) { worker in
                let client = server.client
                for _ in 0..<100_000 {
                    let answer: TestResponse?
                    if worker.isMultiple(of: 2) {
                        answer = try? client.request("GET", "/metrics")
                    } else {
                        answer = try? client.request(
                            "POST", "/observers", json: #"{"target": "Employee/4", "keyPath": "salary"}"#)
                        if let id = answer?.json?["id"]?.stringValue {
                            _ = try? client.request("DELETE", "/observers/\(id)")
                        }
                    }
                    guard answer != nil else { return }  // the server has gone
                }
            }
            Thread.sleep(forTimeInterval: 0.5)
            #expect(server.terminate() == 0)
            while threads.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.01) }
        }
    }

    @Test(arguments: ["batch", "always"])
    func sigtermDuringWritesAnswersEachWriteWithItsRealOutcome(fsync: String) throws {
        try withTemporaryDataDirectory { data in
            let writers = 4
            let (started, _, _) = try ServerProcess.start(data: data, fsync: fsync)
            let server = try #require(started)
            // Per writer: the last value answered 200, and the value in flight when the answers stopped.
            let outcomes = Mutex([(acknowledged: Int, unanswered: Int?)](repeating: (0, nil), count: writers))
            let refusals = Mutex([String]())
            let threads = onThreads(writers) { writer in
                let client = server.client
                for value in 1...1_000_000 {
                    guard
                        let response = try? client.request(
                            "PUT", "/objects/Employee/\(writer + 1)/salary", json: String(value))
                    else {
                        outcomes.withLock { $0[writer].unanswered = value }
                        return
                    }
                    guard response.status == 200 else {
                        refusals.withLock { $0.append("\(response.status) \(response.errorCode ?? "")") }
                        return
                    }
                    outcomes.withLock { $0[writer].acknowledged = value }
                }
            }
            Thread.sleep(forTimeInterval: 0.5)
            #expect(server.terminate() == 0)
            while threads.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.01) }
            // A write refused at shutdown is refused because it was not applied (document-closed), never
            // 'not-durable' for a write the close then made durable.
            #expect(refusals.withLock { $0 }.allSatisfy { $0 == "503 document-closed" }, "\(refusals.withLock { $0 })")
            let (restarted, _, _) = try ServerProcess.start(data: data, fsync: fsync)
            let again = try #require(restarted)
            defer { _ = again.terminate() }
            let final = outcomes.withLock { $0 }
            for writer in 0..<writers {
                let outcome = final[writer]
                #expect(outcome.acknowledged > 0)
                let stored = try again.client.request("GET", "/objects/Employee/\(writer + 1)/salary").json
                let value = Int(stored?.integerValue ?? -1)
                #expect(
                    value == outcome.acknowledged || value == outcome.unanswered,
                    "\(fsync) \(writer): stored \(value), acknowledged \(outcome.acknowledged), \(outcome.unanswered ?? -1)"
                )
            }
        }
    }

    /// With `batch` a commit is readable before its group is flushed. No `X-Store-Seq` may tell a seq that a crash
    /// can take back: after kill -9 the server restarts at or past every seq it told (here the seqs of an observed
    /// controller's selection changes, which are answered without waiting for their flush).
    @Test func killNineWithBatchNeverTakesBackASeqItTold() throws {
        try withTemporaryDataDirectory { data in
            for round in 0..<4 {
                let (started, _, _) = try ServerProcess.start(data: data, fsync: "batch")
                let server = try #require(started)
                let observer = try server.client.request(
                    "POST", "/observers", json: #"{"target": "controllers/departments", "keyPath": "selectionIndexes"}"#
                )
                #expect(observer.status == 201)
                let told = Mutex<Int64>(0)
                let threads = onThreads(4) { writer in
                    let client = server.client
                    for n in 0..<1_000_000 {
                        // Selection changes (seqs of their own), reads, and exports (whose body tells a seq too).
                        let (method, path) = [
                            ("PUT", "/controllers/departments/selectionIndexes"), ("GET", "/healthz"),
                            ("GET", "/store"),
                        ][n % 3]
                        guard
                            let response = try? client.request(method, path, json: "[\((n + writer) % 5)]"),
                            let seq = response.header("X-Store-Seq").flatMap({ Int64($0) })
                        else { return }
                        let exported = response.json?["seq"]?.integerValue ?? 0
                        told.withLock { $0 = max($0, seq, exported) }
                    }
                }
                Thread.sleep(forTimeInterval: 0.5 + 0.2 * Double(round))
                server.kill9()
                while threads.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.01) }
                let (restarted, _, _) = try ServerProcess.start(data: data, fsync: "batch")
                let again = try #require(restarted)
                let seq = try again.client.request("GET", "/healthz").header("X-Store-Seq").flatMap { Int64($0) }
                #expect((seq ?? 0) >= told.withLock { $0 }, "round \(round)")
                #expect(again.terminate() == 0)
            }
        }
    }

    /// Sets Employee/4's salary to 1, 2, ... until a change is refused: the last value acknowledged, and the refusal.
    private static func setSalariesUntilRefused(_ client: TestHTTPClient) throws -> (Int, TestResponse) {
        for value in 1...5_000 {
            let response = try client.request("PUT", "/objects/Employee/4/salary", json: String(value))
            if response.status != 200 { return (value - 1, response) }
        }
        throw TestHTTPError(description: "no change was refused")
    }

    @Test func aJournalThatCannotBeWrittenRefusesTheChangeAndShowsNothingOfIt() throws {
        try withTemporaryDataDirectory { data in
            // 64 KiB per file: the seed's snapshot fits; the journal fills up after a few hundred changes.
            let (started, _, message) = try ServerProcess.start(data: data, fsync: "batch", fileSizeLimit: 128)
            let server = try #require(started, "\(message)")
            let client = server.client
            let (acknowledged, refused) = try Self.setSalariesUntilRefused(client)
            #expect(refused.status == 503)
            #expect(refused.errorCode == "journal-failed")
            #expect(acknowledged > 100)
            // All or nothing: the refused value is not what anyone reads, now or after a restart.
            let read = try client.request("GET", "/objects/Employee/4/salary")
            #expect(read.json == .integer(Int64(acknowledged)), "\(read.status) \(read.text) after \(acknowledged)")
            #expect(try client.request("PUT", "/objects/Employee/5/salary", json: "1").status == 503)
            // Unhealthy until restart, so that a supervisor restarts it; a refused save reloads nothing more.
            let health = try client.request("GET", "/healthz")
            #expect(health.status == 503)
            #expect(health.json?["status"] == "journal-failed")
            #expect(health.json?["error"]?["code"] == "journal-failed")
            #expect(try client.request("GET", "/metrics").text.contains("bindery_journal_failed 1\n"))
            for _ in 0..<3 { #expect(try client.request("POST", "/actions/save").status == 503) }
            Thread.sleep(forTimeInterval: 0.5)  // each refused save wakes the journal's flusher: let it run
            _ = server.terminate()
            let errors = String(decoding: server.errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(errors.components(separatedBy: "the journal could not be written").count == 2, "\(errors)")
            let (restarted, _, _) = try ServerProcess.start(data: data)
            let again = try #require(restarted)
            defer { _ = again.terminate() }
            #expect(try again.client.request("GET", "/objects/Employee/4/salary").json == .integer(Int64(acknowledged)))
        }
    }

    /// With `always` (each change written before it is committed), a write that fails refuses that change only,
    /// with `Retry-After`; `/healthz` says so while writes fail, and standard error once; once writes can succeed
    /// again (the limit lifted), `/healthz` finds it by itself within a second or so, without a change tried.
    @Test func aFailingWriteWithAlwaysIsRefusedAndToldByHealth() throws {
        try withTemporaryDataDirectory { data in
            let (started, _, message) = try ServerProcess.start(data: data, fsync: "always", fileSizeLimit: 128)
            let server = try #require(started, "\(message)")
            let client = server.client
            #expect(try client.request("GET", "/healthz").status == 200)
            let (acknowledged, refused) = try Self.setSalariesUntilRefused(client)
            #expect(refused.status == 503)
            #expect(refused.errorCode == "storage-error")
            #expect(refused.header("Retry-After") == "1")
            #expect(try client.request("PUT", "/objects/Employee/4/salary", json: "1").errorCode == "storage-error")
            #expect(try client.request("GET", "/objects/Employee/4/salary").json == .integer(Int64(acknowledged)))
            let health = try client.request("GET", "/healthz")
            #expect(health.status == 503)
            #expect(health.json?["status"] == "storage-error")
            #expect(try client.request("GET", "/metrics").text.contains("bindery_journal_failed 0\n"))
            Thread.sleep(forTimeInterval: 1.1)
            #expect(try client.request("GET", "/healthz").status == 503, "the test write fails too")
            let lift = Process()
            lift.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            lift.arguments = ["--pid", "\(server.process.processIdentifier)", "--fsize=unlimited:"]
            try lift.run()
            lift.waitUntilExit()
            #expect(lift.terminationStatus == 0)
            let deadline = Date().addingTimeInterval(3)
            var healthy = false
            while !healthy, Date() < deadline {
                healthy = try client.request("GET", "/healthz").status == 200
                if !healthy { Thread.sleep(forTimeInterval: 0.1) }
            }
            #expect(healthy)
            #expect(try client.request("PUT", "/objects/Employee/4/salary", json: "1").status == 200)
            _ = server.terminate()
            let errors = String(decoding: server.errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(errors.components(separatedBy: "a change could not be journaled").count == 2, "\(errors)")
            #expect(errors.contains("a test write to the journal succeeded"), "\(errors)")
            let (restarted, _, _) = try ServerProcess.start(data: data)
            let again = try #require(restarted)
            defer { _ = again.terminate() }
            #expect(try again.client.request("GET", "/objects/Employee/4/salary").json == .integer(1))
        }
    }

    @Test func aRolledBackInsertLeavesNoControllerHoldingIt() throws {
        try withTemporaryDataDirectory { data in
            let (started, _, message) = try ServerProcess.start(data: data, fsync: "batch", fileSizeLimit: 128)
            let server = try #require(started, "\(message)")
            defer { _ = server.terminate() }
            let client = server.client
            // The declared tree `org` has every employee without a manager as a root: each insert adds one.
            var refused = false
            for number in 1...5_000 {
                let body = #"{"firstName": "Temp", "lastName": "N\#(number)", "department": {"$ref": "Department/1"}}"#
                let response = try client.request("POST", "/objects/Employee", json: body)
                guard response.status == 201 else {
                    #expect(response.errorCode == "journal-failed")
                    refused = true
                    break
                }
            }
            #expect(refused)
            let roots = try client.request("GET", "/objects/Employee?filter=manager%20==%20nil&keys=lastName")
            let stored = try #require(roots.json?["count"]?.integerValue)
            let tree = try client.request("GET", "/controllers/org/arrangedObjects")
            guard case .array(let nodes)? = tree.json else {
                Issue.record("\(tree.status) \(tree.text)")
                return
            }
            #expect(nodes.count == Int(stored))
            for node in nodes {
                let reference = try #require(
                    node["object"]?["$id"]?.stringValue ?? node["object"]?["$ref"]?.stringValue)
                let path = "/objects/" + reference
                #expect(try client.request("GET", path).status == 200, "\(path)")
            }
        }
    }

    @Test func killNineUnderInsertLoadLeavesRelationshipsConsistent() throws {
        try withTemporaryDataDirectory { data in
            let (started, _, _) = try ServerProcess.start(data: data, fsync: "batch")
            let server = try #require(started)
            let inserted = Mutex<[String]>([])
            let threads = onThreads(4) { writer in
                let client = server.client
                for n in 0..<100_000 {
                    let body =
                        #"{"$id": "w\#(writer)-\#(n)", "firstName": "F", "lastName": "L", "#
                        + #""department": {"$ref": "Department/\#(n % 5 + 1)"}, "manager": {"$ref": "Employee/\#(n % 32 + 1)"}}"#
                    guard let response = try? client.request("POST", "/objects/Employee", json: body),
                        response.status == 201
                    else { return }
                    inserted.withLock { $0.append("w\(writer)-\(n)") }
                }
            }
            Thread.sleep(forTimeInterval: 0.8)
            server.kill9()
            while threads.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.01) }
            let acknowledged = inserted.withLock { $0 }
            #expect(!acknowledged.isEmpty)
            let (restarted, _, _) = try ServerProcess.start(data: data)
            let again = try #require(restarted)
            defer { _ = again.terminate() }
            let client = again.client
            let employees = try client.request("GET", "/objects/Employee?keys=department,manager").json
            let list = employees?["objects"]?.arrayValue ?? []
            let ids = Set(list.compactMap { $0["$id"]?.stringValue })
            for id in acknowledged { #expect(ids.contains("Employee/" + id)) }
            var members: [String: Set<String>] = [:]
            for employee in list {
                let id = employee["$id"]?.stringValue ?? ""
                members[employee["department"]?["$ref"]?.stringValue ?? "none", default: []].insert(id)
            }
            #expect(members["none"] == nil)
            var total = 0
            for department in 1...5 {
                let employeesOf = try client.request("GET", "/objects/Department/\(department)/employees").json
                let refs = (employeesOf?.arrayValue ?? []).compactMap { $0["$ref"]?.stringValue }
                #expect(Set(refs) == members["Department/\(department)"] ?? [])
                #expect(refs.count == Set(refs).count)
                total += refs.count
            }
            #expect(total == list.count)
            let reports = try client.request("GET", "/objects/Employee?keys=directReports").json
            var reportCount = 0
            for employee in reports?["objects"]?.arrayValue ?? [] {
                reportCount += employee["directReports"]?.arrayValue?.count ?? 0
            }
            let managed = list.filter { !($0["manager"]?.isNull ?? true) }.count
            #expect(reportCount == managed)
        }
    }
}

/// A fresh temporary data directory, removed afterwards.
func withTemporaryDataDirectory(_ body: (String) throws -> Void) throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("bindery-data-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    try body(path)
}
