import Bindery
import HTTPServer
import ObjectGraph
import PropertyList

/// `/actions`: target-action along the responder chain (API.md §9).
///
/// `POST /actions/{action}` with an optional body `{"target": "document" | "controllers/NAME" | null, "sender": ...}`
/// sends the action to the target, or with no target along the chain: the controller named in `X-First-Responder`,
/// the document, the application. `GET /actions` lists what that chain would handle now, validated; `?target=`
/// narrows it to one responder.
extension BinderyService {
    static func addActionRoutes(to router: inout Router, document: Document) {
        router.add("GET", "/actions") { try listActions($0, document: document) }
        router.add("POST", "/actions/:action") { try sendAction($0, document: document) }
    }

    private static func firstResponder(_ request: RouteRequest) -> String? {
        guard let header = request.request.header("X-First-Responder") else { return nil }
        let name = String(header.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
        return name.isEmpty ? nil : name
    }

    private static func listActions(_ request: RouteRequest, document: Document) throws -> HTTPHandlerResult {
        let validations = try document.validActions(
            target: request.request.queryValue("target"), firstResponder: firstResponder(request))
        return .response(.json(["actions": .array(validations.map(\.json))]))
    }

    /// `POST /actions/{action}`: the body's `target` (or, without one, the query's, as `GET /actions` takes it) and
    /// `sender`, any value (for `add` and `insert`, `{"object": {...}}` gives the new object's values).
    private static func sendAction(_ request: RouteRequest, document: Document) throws -> HTTPHandlerResult {
        let action = request.parameter("action")
        var target = request.request.queryValue("target")
        var sender = PropertyListValue.null
        if let json = try request.optionalJSONBody() {
            guard case .dictionary(let body) = json else {
                throw APIError(
                    status: 422, code: "type-mismatch", message: "The body must be {\"target\": ..., \"sender\": ...}.")
            }
            try APIError.checkBodyKeys(body, allowed: ["target", "sender"]) {
                "An action's body has \"target\" and \"sender\", not \"\($0)\"."
            }
            if let given = body["target"], let query = target, given != .string(query) {
                throw APIError.queryDisagreesWithBody("target", query: query, body: given)
            }
            switch body["target"] {
            case nil: break
            case .null?: target = nil
            case .string(let name)?: target = name
            case let other?:
                throw APIError(
                    status: 422, code: "type-mismatch",
                    message: "target must be a string or null, not \(other.typeName).")
            }
            sender = body["sender"] ?? .null
            // API.md §1's reserved keys, but the new object's own `$id` (as the controller route takes it).
            var checked = sender
            if case .dictionary(var fields) = sender, case .dictionary(var object)? = fields["object"] {
                object.removeValue(forKey: "$id")
                fields["object"] = .dictionary(object)
                checked = .dictionary(fields)
            }
            if let reserved = checked.reservedKey(allowingReferences: ObjectID.isReference) {
                throw APIError(
                    status: 422, code: "type-mismatch",
                    message: "sender may not hold a dictionary key \"\(reserved)\" starting with $ (a reference is "
                        + "{\"$ref\": \"Entity/id\"}).",
                    fields: ["keyPath": "sender"])
            }
        }
        let answer = try document.sendAction(
            action, target: target, firstResponder: firstResponder(request), sender: sender)
        // The document's actions answer the seq they committed (or saved): the answer reflects that, not a commit
        // another request made meanwhile.
        if let seq = answer["seq"]?.integerValue { return .response(.json(answer, seq: seq)) }
        return .response(.json(answer))
    }
}
