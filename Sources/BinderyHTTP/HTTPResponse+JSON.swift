import Foundation
import HTTPServer
import PropertyList

extension HTTPResponse {
    /// A JSON response.
    public static func json(_ value: PropertyListValue, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: .bytes(value.jsonBytes()))
    }

    /// A JSON response that states the store seq its content reflects (and, given one, the ETag).
    public static func json(_ value: PropertyListValue, status: Int = 200, seq: Int64, etag: String? = nil)
        -> HTTPResponse
    {
        let type = ("Content-Type", "application/json")
        let seq = ("X-Store-Seq", String(seq))
        // Built at once: appending the ETag afterwards would grow the array.
        return HTTPResponse(
            status: status, headers: etag.map { [type, seq, ("ETag", $0)] } ?? [type, seq],
            body: .bytes(value.jsonBytes()))
    }

    /// The JSON rendering of an API error (API.md §2).
    public static func error(_ error: APIError) -> HTTPResponse {
        HTTPResponse(
            status: error.status, headers: [("Content-Type", "application/json")] + error.headers,
            body: .bytes(error.body.jsonBytes()))
    }
}

extension RouteRequest {
    /// Declared body types read as JSON: JSON, and what `curl -d` declares unless told otherwise. `text/plain` is
    /// not among them: a client that declares plain text has not sent JSON.
    private static let jsonMediaTypes = ["application/json", "application/x-www-form-urlencoded"]

    /// Charsets a body may declare: UTF-8, or ASCII, its subset.
    private static let charsets = ["utf-8", "utf8", "us-ascii"]

    /// 415 unless `declared` (lower-cased) is a type read as JSON, with no charset other than UTF-8; `alternative`
    /// names what else the route takes, for the message.
    static func checkJSONMediaType(_ declared: String, alternative: String? = nil) throws(APIError) {
        let parts = declared.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        let type = parts.first ?? ""
        guard jsonMediaTypes.contains(type) || type.hasSuffix("+json") else {
            let taken = alternative.map { "JSON or \($0)" } ?? "JSON"
            throw APIError(
                status: 415, code: "unsupported-media-type", message: "The body must be \(taken), not \(declared).")
        }
        try checkCharset(declared, of: "JSON")
    }

    /// 415 when `declared` (a lower-cased `Content-Type`) names a charset other than UTF-8; `kind` is what the body
    /// is read as.
    static func checkCharset(_ declared: String, of kind: String) throws(APIError) {
        let parameters = declared.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        for parameter in parameters where parameter.hasPrefix("charset=") {
            let charset = parameter.dropFirst("charset=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            guard charsets.contains(charset) else {
                throw APIError(
                    status: 415, code: "unsupported-media-type",
                    message: "The body must be UTF-8 \(kind), not \(charset).")
            }
        }
    }

    /// The body of a request that may go without one (the actions'): nil when none is sent or it is JSON `null`, as
    /// a client that serialises "no body" may send; otherwise as `jsonBody()`.
    public func optionalJSONBody() throws(APIError) -> PropertyListValue? {
        guard !request.body.isEmpty else { return nil }
        let body = try jsonBody()
        if body == .null { return Optional.none }  // `nil` alone would be `.null` (PropertyListValue takes it).
        return body
    }

    /// The body as a JSON value: 415 when it is declared as something other than JSON or in a charset other than
    /// UTF-8, 400 when it does not parse.
    ///
    /// `application/x-www-form-urlencoded` (what `curl -d` sends unless told otherwise) and `+json` types are read
    /// as JSON too; other declared types (`text/plain` among them) are refused.
    public func jsonBody(maximumDepth: Int = PropertyListValue.valueDepthLimit) throws(APIError) -> PropertyListValue {
        // `application/json` as it is (nearly every client) is checked without parsing: this runs on every write.
        if let declared = request.header("Content-Type"), !declared.isEmpty,
            !declared.utf8.elementsEqual("application/json".utf8)
        {
            try Self.checkJSONMediaType(declared.lowercased())
        }
        if request.body.isEmpty {
            throw APIError(
                status: 400, code: "malformed-json", message: "The request needs a JSON body.",
                fields: ["line": 1, "column": 1])
        }
        do {
            return try PropertyListValue(jsonBytes: request.body, maximumDepth: maximumDepth)
        } catch {
            throw APIError.malformedJSON(error)
        }
    }
}
