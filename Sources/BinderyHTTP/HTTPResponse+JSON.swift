import HTTPServer
import PropertyList

extension HTTPResponse {
    /// A JSON response.
    public static func json(_ value: PropertyListValue, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: .bytes(value.jsonBytes()))
    }

    /// The JSON rendering of an API error (API.md §2).
    public static func error(_ error: APIError) -> HTTPResponse {
        var response = HTTPResponse.json(error.body, status: error.status)
        response.headers.append(contentsOf: error.headers)
        return response
    }
}

extension RouteRequest {
    /// The body as a JSON value: 415 when it is declared as something other than JSON, 400 when it does not parse.
    public func jsonBody() throws(APIError) -> PropertyListValue {
        if let type = request.header("Content-Type")?.lowercased(), !type.isEmpty,
            !(type.hasPrefix("application/json") || type.contains("+json") || type.hasPrefix("text/plain"))
        {
            throw APIError(
                status: 415, code: "unsupported-media-type", message: "The body must be JSON, not \(type).")
        }
        if request.body.isEmpty {
            throw APIError(status: 400, code: "malformed-json", message: "The request needs a JSON body.")
        }
        do {
            return try PropertyListValue(jsonBytes: request.body)
        } catch {
            throw APIError.malformedJSON(error)
        }
    }
}
