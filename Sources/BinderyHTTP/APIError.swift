import ObjectGraph
import PropertyList

/// An error a client sees: rendered as `{"error": {"code", "message", ...fields}}` with `status` (API.md §2).
public struct APIError: Error, Sendable {
    public var status: Int
    /// Kebab-case, stable: clients branch on it.
    public var code: String
    /// A human sentence.
    public var message: String
    /// Extra members of the error object (`keyPath`, `line`, `column`, `allowed`, ...).
    public var fields: [String: PropertyListValue]
    /// Extra response headers (`Allow`, `Retry-After`, ...).
    public var headers: [(name: String, value: String)]
    /// The store seq whose state the error shows (a 412's `current` and `ETag`): it is answered once that is
    /// durable, as a read is.
    public var showsSeq: Int64?

    public init(
        status: Int, code: String, message: String, fields: [String: PropertyListValue] = [:],
        headers: [(name: String, value: String)] = []
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields
        self.headers = headers
    }

    /// The error's JSON body.
    public var body: PropertyListValue {
        var error = fields
        error["code"] = .string(code)
        error["message"] = .string(message)
        return ["error": .dictionary(error)]
    }

    /// An object-graph error, as it is; a 503 that passes (a full disk, a journal segment being replaced, a server
    /// stopping, which a supervisor restarts) with `Retry-After`.
    public init(_ error: ObjectGraphError) {
        self.init(status: error.status, code: error.code, message: error.message, fields: error.fields)
        if status == 503, Self.transient.contains(code) { headers = [("Retry-After", "1")] }
    }

    private static let transient: Set = ["storage-error", "journal-segment-removed", "document-closed"]

    public static func notFound(_ message: String = "There is nothing at this path.") -> APIError {
        APIError(status: 404, code: "not-found", message: message)
    }

    /// 405 with `Allow` (and `allowed`): `allowed` and `OPTIONS`, which every path answers (CORS preflights).
    public static func methodNotAllowed(_ method: String, allowed: [String]) -> APIError {
        let allowed = allowed.contains("OPTIONS") ? allowed : allowed + ["OPTIONS"]
        return APIError(
            status: 405, code: "method-not-allowed", message: "\(method) is not allowed here.",
            fields: ["allowed": .array(allowed.map { .string($0) })],
            headers: [("Allow", allowed.joined(separator: ", "))])
    }

    public static func badRequest(_ code: String, _ message: String) -> APIError {
        APIError(status: 400, code: code, message: message)
    }

    /// Throws 422 `undefined-key` (with `keyPath`) for the first key of a request body, in order, that is not one of
    /// `allowed`; `message` says it for that key.
    static func checkBodyKeys(
        _ body: [String: PropertyListValue], allowed: Set<String>, message: (String) -> String
    ) throws(APIError) {
        guard let unknown = body.keys.sorted().first(where: { !allowed.contains($0) }) else { return }
        throw APIError(
            status: 422, code: "undefined-key", message: message(unknown), fields: ["keyPath": .string(unknown)])
    }

    /// 400 for a parameter given in the query and in the body with different values.
    static func queryDisagreesWithBody(_ name: String, query: String, body: PropertyListValue) -> APIError {
        .badQuery("\(name) is \(query) in the query but \(body.jsonString()) in the body.")
    }

    public static func badQuery(_ message: String) -> APIError {
        APIError(status: 400, code: "bad-query", message: message)
    }

    /// 503 `server-busy` with `Retry-After: 1`: the server cannot take the request now, and a retry may succeed.
    public static func serverBusy(_ message: String) -> APIError {
        APIError(status: 503, code: "server-busy", message: message, headers: [("Retry-After", "1")])
    }

    public static func bodyTooLarge(limit: Int) -> APIError {
        APIError(
            status: 413, code: "body-too-large", message: "The request body is larger than \(limit) bytes.",
            fields: ["limit": .integer(Int64(limit))])
    }

    /// The 400 for a body that is not JSON, with the place of the fault.
    public static func malformedJSON(_ error: JSONDecodingError) -> APIError {
        APIError(
            status: 400, code: "malformed-json", message: error.description,
            fields: placeFields(line: error.line, column: error.column))
    }

    /// The 400 for a body that is not an XML property list, with the place of the fault.
    public static func malformedPlist(_ error: XMLPropertyListError) -> APIError {
        APIError(
            status: 400, code: "malformed-plist", message: "The body is not an XML property list: \(error).",
            fields: placeFields(line: error.line, column: error.column))
    }

    private static func placeFields(line: Int?, column: Int?) -> [String: PropertyListValue] {
        var fields: [String: PropertyListValue] = [:]
        if let line { fields["line"] = .integer(Int64(line)) }
        if let column { fields["column"] = .integer(Int64(column)) }
        return fields
    }

    public static func internalError(_ message: String) -> APIError {
        APIError(status: 500, code: "internal-error", message: message)
    }
}
