import Bindery
import BinderyHTTP
import Foundation
import HTTPServer
import HTTPTestSupport
import PropertyList
import Testing

/// `/defaults` through a real server: the fixture's defaults.json (appliesImmediately), and a copy of the fixture
/// whose defaults are applied only on save.
struct DefaultsRoutesTests {
    /// Runs a server over `fixture` with its data in `data`; the document is closed before returning.
    func withServer(fixture: String, data: String, _ body: (TestHTTPClient) throws -> Void) throws {
        let document = try Document(fixtureDirectory: fixture, dataDirectory: data, options: .init(fsync: .never))
        defer { document.close() }
        let service = BinderyService(
            configuration: .init(publicDirectory: packageRoot + "/Public", corsOrigin: "*"), document: document)
        #expect(service.setupError == nil)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2, maxBodySize: 1 << 20),
            responder: service)
        try server.start()
        defer { server.stop() }
        try body(TestHTTPClient(port: try #require(server.port)))
    }

    func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bindery-defaults-\(UUID())").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func appliesImmediately_putSavesAndPersistsAcrossRestart() throws {
        let data = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let fixture = packageRoot + "/Fixtures/employees"
        try withServer(fixture: fixture, data: data) { client in
            let all = try client.request("GET", "/defaults")
            #expect(all.json?["values"] == ["pageSize": 25, "theme": "light", "showInactive": true])
            #expect(all.json?["hasUnappliedChanges"] == false)
            #expect(all.json?["appliesImmediately"] == true)
            #expect(try client.request("GET", "/defaults/pageSize").json == 25)
            let put = try client.request("PUT", "/defaults/theme", json: #""dark""#)
            #expect(put.json == "dark")
            #expect(try client.request("GET", "/defaults").json?["hasUnappliedChanges"] == false)
            let missing = try client.request("GET", "/defaults/nope")
            #expect(missing.status == 404)
            #expect(missing.errorCode == "undefined-key")
            // API.md §1: a dictionary key may not start with $ (a default holds no references either).
            for value in [#"{"$ref": "Employee/1"}"#, #"[{"a": {"$x": 1}}]"#] {
                let reserved = try client.request("PUT", "/defaults/theme", json: value)
                #expect(reserved.status == 422, "\(value)")
                #expect(reserved.errorCode == "type-mismatch")
            }
            #expect(try client.request("GET", "/defaults/theme").json == "dark")
        }
        #expect(FileManager.default.fileExists(atPath: data + "/defaults.json"))
        try withServer(fixture: fixture, data: data) { client in
            #expect(try client.request("GET", "/defaults/theme").json == "dark")
            let reverted = try client.request("POST", "/defaults/revertToInitialValues")
            #expect(reverted.json?["values"]?["theme"] == "light")
            // Null (or DELETE) removes the saved value: the initial value shows again, and nothing null is saved.
            for removal in [("PUT", Optional("null")), ("DELETE", nil)] {
                _ = try client.request("PUT", "/defaults/theme", json: #""dark""#)
                _ = try client.request(removal.0, "/defaults/theme", body: removal.1.map { Array($0.utf8) } ?? [])
                #expect(try client.request("GET", "/defaults/theme").json == "light", "\(removal.0)")
                #expect(try client.request("GET", "/defaults").json?["values"]?["theme"] == "light")
            }
        }
        try withServer(fixture: fixture, data: data) { client in
            let theme = try client.request("GET", "/defaults/theme")
            #expect(theme.json == "light")
        }
    }

    /// A default has no entity tag (RFC 9110 §13.1.1): `If-Match` with a tag fails (412, nothing changed), `*` matches
    /// a key that has a value; `If-None-Match: *` makes a `PUT` create-only.
    @Test func preconditionsOnADefaultAreHonoured() throws {
        let data = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        try withServer(fixture: packageRoot + "/Fixtures/employees", data: data) { client in
            func put(_ key: String, _ value: String, _ headers: [String: String]) throws -> TestResponse {
                try client.request("PUT", "/defaults/\(key)", headers: headers, json: value)
            }
            for (key, headers) in [
                ("theme", ["If-Match": #""1""#]), ("theme", ["If-None-Match": "*"]), ("fresh", ["If-Match": "*"]),
            ] {
                let refused = try put(key, #""dark""#, headers)
                #expect(refused.status == 412 && refused.errorCode == "precondition-failed", "\(key) \(headers)")
            }
            let deleted = try client.request("DELETE", "/defaults/theme", headers: ["If-Match": #""7""#])
            #expect(deleted.status == 412)
            #expect(try client.request("GET", "/defaults/theme").json == "light")
            #expect(try client.request("GET", "/defaults/fresh").status == 404)
            #expect(try put("theme", #""dark""#, ["If-Match": "*"]).status == 200)
            #expect(try put("fresh", "1", ["If-None-Match": "*"]).status == 200)
            #expect(try put("fresh", "2", ["If-None-Match": "*"]).status == 412)
            #expect(try client.request("GET", "/defaults/fresh").json == 1)
            #expect(try client.request("GET", "/defaults/theme", headers: ["If-Match": #""1""#]).status == 412)
        }
    }

    @Test func theDeepestValueAcceptedIsReadBackAfterARestart() throws {
        let data = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let fixture = packageRoot + "/Fixtures/employees"
        let limit = PropertyListValue.valueDepthLimit
        func nested(_ depth: Int) -> [UInt8] {
            Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
        }
        try withServer(fixture: fixture, data: data) { client in
            let tooDeep = try client.request("PUT", "/defaults/deep", body: nested(limit + 1))
            #expect(tooDeep.status == 400)
            #expect(tooDeep.errorCode == "malformed-json")
            #expect(tooDeep.json?["error"]?["column"] == .integer(Int64(limit + 1)))
            #expect(try client.request("PUT", "/defaults/deep", body: nested(limit)).status == 200)
        }
        // Saved inside {"values": {...}}: two levels more, still readable.
        try withServer(fixture: fixture, data: data) { client in
            let deep = try client.request("GET", "/defaults/deep")
            #expect(deep.status == 200)
            #expect(deep.body == nested(limit))
        }
    }

    @Test func notAppliesImmediately_pendingUntilSave_revertDrops() throws {
        let fixture = try temporaryDirectory()
        let data = try temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: fixture)
            try? FileManager.default.removeItem(atPath: data)
        }
        try FileManager.default.copyItem(
            atPath: packageRoot + "/Fixtures/employees/model.json", toPath: fixture + "/model.json")
        try Data(#"{"appliesImmediately": false, "initialValues": {"pageSize": 25}}"#.utf8)
            .write(to: URL(fileURLWithPath: fixture + "/defaults.json"))
        try withServer(fixture: fixture, data: data) { client in
            _ = try client.request("PUT", "/defaults/pageSize", json: "50")
            let pending = try client.request("GET", "/defaults")
            #expect(pending.json?["hasUnappliedChanges"] == true)
            #expect(pending.json?["values"]?["pageSize"] == 50)
            let reverted = try client.request("POST", "/defaults/revert")
            #expect(reverted.json?["values"]?["pageSize"] == 25)
            #expect(reverted.json?["hasUnappliedChanges"] == false)
            _ = try client.request("PUT", "/defaults/pageSize", json: "75")
            // No body is taken: a bad one is refused, and changes nothing.
            for action in ["save", "revert", "revertToInitialValues"] {
                for (body, code) in [("{", "malformed-json"), ("5", "type-mismatch"), (#"{"x": 1}"#, "undefined-key")] {
                    let refused = try client.request("POST", "/defaults/\(action)", json: body)
                    #expect(refused.errorCode == code, "\(action) \(body)")
                }
                let plain = try client.request(
                    "POST", "/defaults/\(action)", headers: ["Content-Type": "text/plain"], json: "{}")
                #expect(plain.status == 415)
            }
            #expect(try client.request("GET", "/defaults").json?["hasUnappliedChanges"] == true)
            let saved = try client.request("POST", "/defaults/save", json: "{}")
            #expect(saved.json?["hasUnappliedChanges"] == false)
            #expect(saved.json?["values"]?["pageSize"] == 75)
            let initial = try client.request("POST", "/defaults/revertToInitialValues")
            #expect(initial.json?["hasUnappliedChanges"] == true)
            #expect(initial.json?["values"]?["pageSize"] == 25)
        }
    }
}
