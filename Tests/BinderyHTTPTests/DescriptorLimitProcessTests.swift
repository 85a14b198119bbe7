import Foundation
import HTTPTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The real executable with a low limit on open files (README: connections and descriptors).
@Suite(.enabled(if: binderyBinary != nil, "needs the bindery executable in the build folder"), .serialized)
struct DescriptorLimitProcessTests {
    /// A server limited to 128 open files on `data`, a client of it (2 s timeout), and the sockets `body` holds, closed
    /// after it.
    static func withLimitedServer(
        _ data: String, arguments: [String] = [], _ body: (TestHTTPClient, inout [Int32]) throws -> Void
    ) throws {
        let (started, status, message) = try ServerProcess.start(data: data, openFiles: 128, arguments: arguments)
        let server = try #require(started, "exit \(status): \(message)")
        defer { _ = server.terminate() }
        var client = server.client
        client.timeout = 2
        var held: [Int32] = []
        defer { for socket in held { close(socket) } }
        try body(client, &held)
    }

    /// Kept-alive connections, each answered once and then idle, until the server closes the next at once (kept in
    /// `held` too); the caller closes them. Whether one was refused (else 200 were taken).
    static func holdConnectionsUntilRefused(_ client: TestHTTPClient, _ held: inout [Int32]) -> Bool {
        while held.count < 200, let socket = try? client.connect() {
            held.append(socket)
            guard (try? client.send(client.keptAliveRequest("GET", "/healthz"), on: socket)) != nil,
                client.receiveResponse(on: socket)?.status == 200
            else { return true }
        }
        return false
    }

    /// Idle kept-alive clients holding every descriptor left for connections do not keep new clients out until
    /// their idle timeout (60 s): a refused connection sheds those that waited longest, and the next one gets in.
    @Test func idleClientsAtTheDescriptorLimitMakeRoomForNewOnes() throws {
        try withTemporaryDataDirectory { data in
            try Self.withLimitedServer(data) { client, held in
                #expect(Self.holdConnectionsUntilRefused(client, &held), "\(held.count) connections held")
                #expect(held.count > 60)
                usleep(1_200_000)  // the held ones have waited a second for their next request
                // The first new client is refused and makes room; the next, a moment later, gets in (the acceptor waited
                // on a descriptor it took before the shed connections closed, and takes a lower one now free).
                #expect((try? client.request("GET", "/healthz"))?.status != 200)
                usleep(300_000)
                #expect((try? client.request("GET", "/healthz"))?.status == 200, "a new client was kept out")
            }
        }
    }

    /// With every descriptor taken (idle connections up to the ceiling, then clients that do not read the large files
    /// they asked for, each holding one open), a file that is there is `503 server-busy`, not `404`, and a change that
    /// needs a file (a save) is `503 storage-error` with `Retry-After`: both pass once descriptors are free again.
    @Test func filesThatCannotBeOpenedForWantOfDescriptorsAre503() throws {
        try withTemporaryDataDirectory { data in
            let folder = data + "-public"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            try Data("small".utf8).write(to: URL(fileURLWithPath: folder + "/small.txt"))
            let big = open(folder + "/big.bin", O_CREAT | O_WRONLY, 0o644)
            #expect(ftruncate(big, 64 << 20) == 0)  // larger than what the sockets' buffers take
            close(big)
            try Self.withLimitedServer(data, arguments: ["--public", folder]) { client, held in
                // Connections first, each answered once, until the server refuses the next: they hold every descriptor
                // below the 32 kept for files. Then each asks for the large file and reads none of it.
                #expect(Self.holdConnectionsUntilRefused(client, &held))
                for socket in held { _ = try? client.send(client.keptAliveRequest("GET", "/big.bin"), on: socket) }
                // The status line of each answer, left unread (MSG_PEEK).
                let statuses = held.map { socket -> String in
                    var buffer = [UInt8](repeating: 0, count: 12)
                    let count = buffer.withUnsafeMutableBytes {
                        recv(socket, $0.baseAddress, $0.count, Int32(MSG_WAITALL | MSG_PEEK))
                    }
                    return count == 12 ? String(decoding: buffer[9..<12], as: UTF8.self) : "none"
                }
                #expect(!statuses.contains("404"), "\(statuses)")
                #expect(statuses.filter { $0 == "200" }.count <= 40, "\(statuses)")
                // A connection answered 503 goes on: another file, and a save, while the descriptors are still held.
                let index = try #require(statuses.firstIndex(of: "503"), "\(statuses)")
                let probe = held[index]
                #expect(client.receiveResponse(on: probe)?.header("Retry-After") == "1")
                try client.send(client.keptAliveRequest("GET", "/small.txt"), on: probe)
                let small = client.receiveResponse(on: probe)
                #expect(small?.status == 503)
                #expect(small?.header("Retry-After") == "1")
                try client.send(client.keptAliveRequest("POST", "/actions/save"), on: probe)
                let save = client.receiveResponse(on: probe)
                #expect(save?.status == 503, "\(save.map { String(decoding: $0.body, as: UTF8.self) } ?? "")")
                #expect(save?.header("Retry-After") == "1")
                // The metrics still tell the resident size (its /proc file was opened per request, and went missing).
                try client.send(client.keptAliveRequest("GET", "/metrics"), on: probe)
                let metrics = client.receiveResponse(on: probe).map { String(decoding: $0.body, as: UTF8.self) }
                #expect(metrics?.contains("process_resident_memory_bytes ") == true)
                for socket in held { close(socket) }
                held = []
                var saved = false
                let deadline = Date().addingTimeInterval(5)
                while !saved && Date() < deadline {
                    saved = (try? client.request("POST", "/actions/save"))?.status == 200
                    if !saved { usleep(100_000) }
                }
                #expect(saved)
                #expect(try client.request("GET", "/small.txt").status == 200)
            }
        }
    }
}
