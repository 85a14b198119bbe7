import Bindery
import BinderyHTTP
import Foundation
import HTTPTestSupport
import Testing

/// Requests with an `Idempotency-Key` are carried out once: a repeat (a browser resends a request whose connection
/// closed before its answer came) gets the first answer again.
struct IdempotencyTests {
    private func employeeCount(_ client: TestHTTPClient) throws -> Int {
        try client.request("GET", "/objects/Employee").json?["count"]?.integerValue.map(Int.init) ?? -1
    }

    private func checkRepeatsAreAnsweredOnce(_ client: TestHTTPClient) throws {
        let before = try employeeCount(client)
        let create = #"{"firstName": "Ada", "lastName": "Once", "department": {"$ref": "Department/1"}}"#
        let first = try client.request("POST", "/objects/Employee", headers: ["Idempotency-Key": "add-1"], json: create)
        #expect(first.status == 201)
        #expect(first.header("Idempotent-Replayed") == nil)
        let again = try client.request("POST", "/objects/Employee", headers: ["Idempotency-Key": "add-1"], json: create)
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.body == first.body)
        #expect(again.header("Location") == first.header("Location"))
        #expect(try employeeCount(client) == before + 1)
        // The same key for another request is refused; a new key is a new request.
        let other = try client.request(
            "POST", "/objects/Employee", headers: ["Idempotency-Key": "add-1"],
            json: #"{"firstName": "Bob", "lastName": "Other", "department": {"$ref": "Department/1"}}"#)
        #expect(other.status == 422)
        #expect(other.text.contains("idempotency-key-reused"))
        #expect(
            try client.request("POST", "/objects/Employee", headers: ["Idempotency-Key": "\"add-2\""], json: create)
                .status == 201)
        #expect(try employeeCount(client) == before + 2)
        // Undo, repeated with its key, undoes one group.
        let undo = try client.request("POST", "/actions/undo", headers: ["Idempotency-Key": "undo-1"])
        #expect(undo.status == 200)
        #expect(try client.request("POST", "/actions/undo", headers: ["Idempotency-Key": "undo-1"]).status == 200)
        #expect(try employeeCount(client) == before + 1)
        // An error answer is kept too: the repeat is not carried out either.
        let missing = try client.request(
            "PUT", "/objects/Employee/9999/lastName", headers: ["Idempotency-Key": "put-1"], json: #""X""#)
        #expect(missing.status == 404)
        let missingAgain = try client.request(
            "PUT", "/objects/Employee/9999/lastName", headers: ["Idempotency-Key": "put-1"], json: #""X""#)
        #expect(missingAgain.status == 404)
        #expect(missingAgain.header("Idempotent-Replayed") == "true")
    }

    @Test func aRepeatedRequestIsCarriedOutOnce() throws {
        try withService { client in try checkRepeatsAreAnsweredOnce(client) }
    }

    /// With a journal, a change is answered once durable (the connection suspended until its group commit): the
    /// answer kept is the one sent then.
    @Test func aRepeatedRequestIsCarriedOutOnceWhenAnsweredAfterItsGroupCommit() throws {
        let path = NSTemporaryDirectory() + "bindery-idempotency-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let document = try Document(
            fixtureDirectory: packageRoot + "/Fixtures/employees", dataDirectory: path,
            options: .init(fsync: .batch))
        defer { document.close() }
        try withService(document: document) { client in try checkRepeatsAreAnsweredOnce(client) }
    }

    /// What a key keeps is its answer (and a hash of its body): requests with large bodies and small answers do not
    /// push out the keys of others.
    @Test func largeBodiesDoNotPushOutOtherKeys() throws {
        try withService { client in
            let create = #"{"firstName": "Ada", "lastName": "Kept", "department": {"$ref": "Department/1"}}"#
            #expect(
                try client.request("POST", "/objects/Employee", headers: ["Idempotency-Key": "kept"], json: create)
                    .status == 201)
            let before = try employeeCount(client)
            let large = [UInt8](repeating: 0x20, count: (1 << 20) - 4)  // 1 MiB: JSON white space, then null
            for index in 0..<70 {
                let answer = try client.request(
                    "POST", "/actions/noSuchAction", headers: ["Idempotency-Key": "large-\(index)"],
                    body: large + Array("null".utf8))
                #expect(answer.status == 404)
            }
            let again = try client.request(
                "POST", "/objects/Employee", headers: ["Idempotency-Key": "kept"], json: create)
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect(try employeeCount(client) == before)
        }
    }

    @Test func aKeyMustBeVisibleASCII() throws {
        try withService { client in
            // A quoted key is the key within the quotes: two quotes alone are an empty one.
            for key in ["", "\"\"", "a b", String(repeating: "k", count: 256), "é"] {
                let response = try client.request("POST", "/actions/undo", headers: ["Idempotency-Key": key])
                #expect(response.status == 400, "\(key)")
                #expect(response.text.contains("bad-idempotency-key"))
            }
            // A key sent again with white space after it is the same key (RFC 9112 §5: not part of the value).
            let first = try client.request("POST", "/actions/undo", headers: ["Idempotency-Key": "k1"])
            let again = try client.request("POST", "/actions/undo", headers: ["Idempotency-Key": "k1 \t"])
            #expect(again.status == first.status && again.header("Idempotent-Replayed") == "true")
            // Reads ignore it.
            #expect(try client.request("GET", "/healthz", headers: ["Idempotency-Key": "a b"]).status == 200)
        }
    }

    /// A 5xx answer is not kept (README: "a 5xx answer is not kept (what it refused may be sent again)"): the same
    /// request sent again with its key is carried out. A save refused 500 while the data directory is away is made
    /// once it is back.
    @Test func aRequestAnswered500IsCarriedOutWhenSentAgainWithItsKey() throws {
        try withTemporaryDataDirectory { data in
            let document = try Document(
                fixtureDirectory: packageRoot + "/Fixtures/employees", dataDirectory: data,
                options: .init(fsync: .never))
            defer { document.close() }
            try withService(document: document) { client in
                #expect(try client.request("PUT", "/objects/Employee/4/salary", json: "4242").status == 200)
                try FileManager.default.moveItem(atPath: data, toPath: data + "-away")
                let refused = try client.request("POST", "/actions/save", headers: ["Idempotency-Key": "save-1"])
                try FileManager.default.moveItem(atPath: data + "-away", toPath: data)
                #expect(refused.status == 500)
                let again = try client.request("POST", "/actions/save", headers: ["Idempotency-Key": "save-1"])
                #expect(again.status == 200, "\(again.text)")
                #expect(again.header("Idempotent-Replayed") == nil)
            }
        }
    }
}
