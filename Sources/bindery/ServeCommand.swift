import ArgumentParser
import Bindery
import BinderyHTTP
import Dispatch
import Foundation
import HTTPServer

/// `bindery serve`: runs the service until SIGINT, SIGTERM or SIGHUP.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Serve a fixture's model over HTTP.")

    @Option(help: "The fixture folder: model.json (required), data.json, controllers.json, defaults.json.")
    var fixture = "Fixtures/employees"

    @Option(help: "Where the store lives; created if missing.")
    var data = "./data"

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    // Numbers are parsed unconditionally, so that `--port -1` is an invalid value, not a missing one.
    @Option(parsing: .unconditional, help: "The port to listen on (0 picks a free one and prints it).")
    var port: UInt16 = 8080

    @Option(name: .customLong("public"), help: "The folder of static files.")
    var publicDirectory = "Public"

    @Option(help: "Journal durability: always (fsync per commit), batch (group commit) or never.")
    var fsync: FsyncPolicy = .batch

    @Option(parsing: .unconditional, help: "Undo groups kept (0 turns undo off); the undo history lasts until restart.")
    var undoDepth = 100

    @Option(parsing: .unconditional, help: "Changes retained for long-poll clients (older `since` gets 410).")
    var history = 100_000

    @Option(
        parsing: .unconditional,
        help: "About how many bytes of changes are retained for long-poll clients (older `since` gets 410).")
    var historyBytes = 256 << 20

    @Option(parsing: .unconditional, help: "The request body limit in bytes (413 beyond).")
    var maxBody = 1_048_576

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Bytes of large answers and event streams held for clients that have not read them; beyond, a GET gets "
                + "503 server-busy and a stream with unread bytes ends."))
    var maxUnsent = 1 << 30

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Bytes of request bodies being received at once, beyond the first 16 KiB of each; a body that would pass "
                + "it is answered 503 server-busy."))
    var maxReceiving = 256 << 20

    @Option(parsing: .unconditional, help: "Seconds after which an unpolled observer expires.")
    var observerTtl = 300

    @Option(
        parsing: .unconditional,
        help: "Long-polls and event streams waiting at once, together; beyond, 503 too-many-waiters.")
    var maxWaiters = 16_000

    @Option(parsing: .unconditional, help: "Observers at once; beyond, 503 too-many-observers.")
    var maxObservers = 10_000

    @Option(
        parsing: .unconditional,
        help: "Controllers created at run time at once (0: none); beyond, 503 too-many-controllers.")
    var maxControllers = 1_000

    @Option(parsing: .unconditional, help: "HTTP worker threads (default: one per core).")
    var threads: Int?

    @Option(help: "The Access-Control-Allow-Origin header.")
    var cors = "*"

    func validate() throws {
        guard !data.isEmpty else { throw ValidationError("--data must name a folder") }
        guard !fixture.isEmpty else { throw ValidationError("--fixture must name a folder") }
        guard maxBody > 0 else { throw ValidationError("--max-body must be positive") }
        guard maxUnsent > 0 else { throw ValidationError("--max-unsent must be positive") }
        guard maxReceiving > 0 else { throw ValidationError("--max-receiving must be positive") }
        guard undoDepth >= 0 else { throw ValidationError("--undo-depth must not be negative") }
        guard (1...4096).contains(threads ?? 1) else { throw ValidationError("--threads must be from 1 to 4096") }
        guard history > 0 else { throw ValidationError("--history must be positive") }
        guard historyBytes > 0 else { throw ValidationError("--history-bytes must be positive") }
        guard observerTtl > 0 else { throw ValidationError("--observer-ttl must be positive") }
        guard maxWaiters > 0 else { throw ValidationError("--max-waiters must be positive") }
        guard maxObservers > 0 else { throw ValidationError("--max-observers must be positive") }
        guard maxControllers >= 0 else { throw ValidationError("--max-controllers must not be negative") }
        // Sent as a header value: empty, it allowed no page while naming none; with a line break, it split headers.
        guard !cors.isEmpty, cors.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw ValidationError("--cors must be * or an origin such as https://example.com (no spaces)")
        }
    }

    /// The start's refusals for a store that cannot be read as it is (damage, or files of another version or model),
    /// which the operator resolves by moving the directory aside.
    static let unreadableStoreCodes: Set = ["bad-snapshot", "journal-corrupt", "journal-gap", "journal-replay-failed"]

    func run() throws {
        let document: Document
        do {
            document = try Document(
                fixtureDirectory: fixture, dataDirectory: data,
                options: .init(fsync: fsync, undoDepth: undoDepth))
        } catch {
            var text = "bindery: \(error.message)\n"
            if Self.unreadableStoreCodes.contains(error.code) {
                text +=
                    "bindery: the data directory \(data) is left as it is. To serve again, move it aside (keep it: "
                    + "what it holds may still be recovered from it) and start with --data naming a copy of a backup, "
                    + "or an empty folder, which is seeded from the fixture.\n"
            }
            FileHandle.standardError.write(Data(text.utf8))
            throw ExitCode.failure
        }
        let observations = ObservationCenter(
            document: document, queue: .main,
            configuration: .init(
                historyCapacity: history, historyBytes: historyBytes, observerTTL: Double(observerTtl),
                maxWaiters: maxWaiters,
                maxObservers: maxObservers))
        let service = BinderyService(
            configuration: .init(publicDirectory: publicDirectory, corsOrigin: cors, maxControllers: maxControllers),
            document: document,
            observations: observations)
        if let error = service.setupError {
            FileHandle.standardError.write(Data("bindery: \(error.message)\n".utf8))
            document.closeUnserved()
            throw ExitCode.failure
        }
        if StaticFiles(root: publicDirectory) == nil {
            FileHandle.standardError.write(
                Data("bindery: warning: --public \(publicDirectory) is not a folder; no static files are served\n".utf8)
            )
        }
        var configuration = HTTPServerConfiguration(
            host: host, port: port, threads: threads ?? HTTPServerConfiguration.processorCount,
            maxBodySize: maxBody, maxUnsentBytes: maxUnsent)
        configuration.maxReceivingBytes = maxReceiving
        let server = HTTPServer(configuration: configuration, responder: service)
        MemoryTrim.start()
        // A start refused from here on served nothing: a directory it seeded is left as it was found.
        do {
            // Before the server starts (a stop before then finds no server to stop).
            try ShutdownSignal.install {
                // On the signal's own thread, never on the main queue: the main queue is the observation queue,
                // request threads wait on it (`ObservationCenter` answers them synchronously there), and stopping
                // the server joins those threads, so a stop run on it would wait for ever for a request waiting for
                // it.
                observations.answerAllWaiters()
                // No new connections from here, and every answer closes its connection: a client then learns of the
                // stop from an answer (a write after the close is refused 503 document-closed) rather than from a
                // reset connection.
                server.beginDraining()
                // The document first: closing flushes the journal and answers the writes waiting for their flush
                // with their real outcome; stopping the server first would answer them 503 although they are
                // applied and made durable by the close. Writes after this are refused (503 document-closed).
                let clean = document.close()
                server.stop()
                Foundation.exit(clean ? 0 : 1)
            }
            try server.start()
        } catch {
            document.closeUnserved()
            throw error
        }
        let shownHost = host.contains(":") ? "[\(host)]" : host
        FileHandle.standardOutput.write(Data("bindery listening on http://\(shownHost):\(server.port ?? port)\n".utf8))
        dispatchMain()
    }
}

/// `--fsync always|batch|never`, by the policy's own names.
extension FsyncPolicy: ExpressibleByArgument {}
