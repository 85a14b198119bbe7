import Controllers
import HTTPServer
import ObjectGraph
import PropertyList

/// `/defaults`: the user defaults controller over REST (API.md §5).
///
/// `GET /defaults` answers `{"values", "appliesImmediately", "hasUnappliedChanges", "pending", "initialValues"}`;
/// `GET /defaults/{key}` the raw value (404 `undefined-key` for a key no layer has); `PUT /defaults/{key}` sets it
/// (pending until `save` when not `appliesImmediately`) and answers the key's value; `DELETE /defaults/{key}` removes
/// the saved value; `POST /defaults/save|revert|revertToInitialValues` answer the whole state.
extension BinderyService {
    /// The defaults' actions take no body: one that is sent must be JSON (400, or 415 for another type) and `{}` or
    /// null (an object with keys is 422 `undefined-key`, anything else 422 `type-mismatch`).
    private static func checkNoBody(_ request: RouteRequest, action: String) throws(APIError) {
        switch try request.optionalJSONBody() {
        case nil: return
        case .dictionary(let fields)?:
            try APIError.checkBodyKeys(fields, allowed: []) { "POST /defaults/\(action) takes no keys, not \"\($0)\"." }
        case let other?:
            throw APIError(
                status: 422, code: "type-mismatch",
                message: "POST /defaults/\(action) takes no body (or {}), not \(other.typeName).")
        }
    }

    static func addDefaultsRoutes(to router: inout Router, defaults: UserDefaultsController) {
        router.add("GET", "/defaults") { _ in .response(.json(defaults.json)) }
        // Each change answers the state it left, not one read after it (which another change may have moved).
        router.add("POST", "/defaults/save") { request in
            try checkNoBody(request, action: "save")
            return .response(.json(try defaults.save().json))
        }
        router.add("POST", "/defaults/revert") { request in
            try checkNoBody(request, action: "revert")
            return .response(.json(defaults.revert().json))
        }
        router.add("POST", "/defaults/revertToInitialValues") { request in
            try checkNoBody(request, action: "revertToInitialValues")
            return .response(.json(try defaults.revertToInitialValues().json))
        }
        router.add("GET", "/defaults/:key") { request in
            let key = request.parameter("key")
            guard let value = defaults.value(forKey: key) else { throw undefinedDefault(key) }
            _ = try presence(required: request, key: key)
            return .response(.json(value))
        }
        router.add("PUT", "/defaults/:key") { request in
            let key = request.parameter("key")
            let present = try presence(required: request, key: key)
            let value = try request.jsonBody()
            return .response(
                .json(try defaults.setValue(value, forKey: key, onlyIfPresent: present).value(forKey: key) ?? .null))
        }
        router.add("DELETE", "/defaults/:key") { request in
            let key = request.parameter("key")
            try defaults.setValue(.null, forKey: key, onlyIfPresent: try presence(required: request, key: key))
            return .response(HTTPResponse(status: 204))
        }
    }

    /// What a request's preconditions ask of a default, which has no entity tag (RFC 9110 §13.1.1): `If-Match`
    /// with a tag fails at once (412); `If-Match: *` asks for a value (true), `If-None-Match: *` for none (false).
    private static func presence(required request: RouteRequest, key: String) throws(APIError) -> Bool? {
        var present: Bool?
        if let condition = request.request.header("If-Match") {
            guard matches(condition, version: nil) else {
                throw APIError(
                    status: 412, code: "precondition-failed",
                    message: "A default has no entity tag: If-Match: \(condition) fails.",
                    fields: ["keyPath": .string(key)])
            }
            present = true
        }
        if let condition = request.request.header("If-None-Match"), matches(condition, version: nil) {
            guard present == nil else {
                throw APIError(
                    status: 412, code: "precondition-failed",
                    message: "If-Match: * and If-None-Match: * cannot both hold.", fields: ["keyPath": .string(key)])
            }
            present = false
        }
        return present
    }

    private static func undefinedDefault(_ key: String) -> APIError {
        APIError(
            status: 404, code: "undefined-key", message: "There is no default \"\(key)\".",
            fields: ["keyPath": .string(key)])
    }
}
