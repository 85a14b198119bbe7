import Bindery
import Controllers
import Dispatch
import HTTPServer
import ObjectGraph
import PropertyList

/// `/controllers`: mediating controllers over REST (API.md §5).
///
/// Writes answer the new value of what they set (`selectionIndexes`, `sortDescriptors`, `selection/{keyPath}`, ...);
/// actions and creation answer the controller's state. Controllers declared in the fixture's `controllers.json`
/// cannot be removed (409 `conflict`); run-time ones can.
extension BinderyService {
    static func addControllerRoutes(
        to router: inout Router, controllers: ControllerRegistry, document: Document, slowAnswers: RequestLine
    ) {
        router.add("GET", "/controllers") { _ in
            let (states, seq) = controllers.states()
            return answer(.json(["controllers": .array(states)], seq: seq), whenDurable: seq, document: document)
        }
        router.add("POST", "/controllers") { request in
            let state = try controllers.create(json: try request.jsonBody())
            let name = state["name"]?.stringValue ?? ""
            var response = HTTPResponse.json(state, status: 201)
            response.headers.append(("Location", "/controllers/\(name)"))
            return .response(response)
        }
        router.add("GET", "/controllers/:name") { request in
            let (state, seq) = try controllers.state(of: request.parameter("name"))
            return answer(.json(state, seq: seq), whenDurable: seq, document: document)
        }
        router.add("DELETE", "/controllers/:name") { request in
            try controllers.remove(named: request.parameter("name"))
            return .response(HTTPResponse(status: 204))
        }
        router.add("GET", "/controllers/:name/arrangedObjects") { request in
            let offset = try nonNegativeInteger(request.request.queryValue("offset"), name: "offset") ?? 0
            let limit = try nonNegativeInteger(request.request.queryValue("limit"), name: "limit")
            let name = request.parameter("name")
            let make = { @Sendable () throws -> (HTTPResponse, seq: Int64) in
                let (objects, count, seq) = try controllers.arrangedObjects(
                    controller: name, offset: offset, limit: limit)
                var response = HTTPResponse.json(objects, seq: seq)
                response.headers.append(("X-Total-Count", String(count)))
                return (response, seq)
            }
            // A page of more than `slowListingSize` objects (every employee of a large store: 300,000 objects, 60 MB
            // of JSON, about a second to build and encode) is made off the request threads, as such a listing is:
            // on a libmicrohttpd worker it held every connection that worker serves, `/healthz` included.
            let page = try controllers.arrangedPageSize(controller: name, offset: offset, limit: limit)
            return try reading(
                offRequestThreads: page > slowListingSize, on: slowAnswers, document: document, make)
        }
        router.add("GET", "/controllers/:name/selectedObjects") { request in
            let name = request.parameter("name")
            let make = { @Sendable () throws -> (HTTPResponse, seq: Int64) in
                let (objects, seq) = try controllers.selectedObjects(controller: name)
                return (.json(objects, seq: seq), seq)
            }
            // Every selected object in its JSON form (a select-all of 300,000: 63 MB): off the request threads.
            let selected = try controllers.selectionCount(controller: name)
            return try reading(
                offRequestThreads: selected > slowListingSize, on: slowAnswers, document: document, make)
        }
        router.add("PUT", "/controllers/:name/selectedObjects") { request in
            let name = request.parameter("name")
            // The same representation as the GET (the objects, not references).
            let (objects, seq) = try controllers.setSelectedObjects(
                try references(try request.jsonBody()), controller: name)
            return answer(.json(objects, seq: seq), whenDurable: seq, document: document)
        }
        router.add("PUT", "/controllers/:name/selection/*keyPath") { request in
            let (value, seq) = try controllers.setSelectionValue(
                try request.jsonBody(), forKeyPath: request.keyPath("keyPath"),
                controller: request.parameter("name"))
            return .response(seq.map { .json(value, seq: $0) } ?? .json(value))
        }
        router.add("PUT", "/controllers/:name/selectionIndexes") { request in
            let name = request.parameter("name")
            let (value, seq) = try controllers.setSelectionIndexes(
                try indexes(try request.jsonBody()), controller: name)
            return answer(.json(value, seq: seq), whenDurable: seq, document: document)
        }
        // NSArrayController's `setSelectionIndex:`: one index, or null (Cocoa's NSNotFound) for none; answers the
        // first selected index after it (another may be selected: `avoidsEmptySelection`, an index out of range).
        router.add("PUT", "/controllers/:name/selectionIndex") { request in
            let body = try request.jsonBody()
            guard body.isNull || (body.integerValue ?? -1) >= 0 else {
                throw typeMismatch("selectionIndex", "a non-negative integer, or null for no selection")
            }
            let (value, seq) = try controllers.setSelectionIndexes(
                body.integerValue.map { [Int($0)] } ?? [], controller: request.parameter("name"), key: "selectionIndex")
            return answer(.json(value.arrayValue?.first ?? .null, seq: seq), whenDurable: seq, document: document)
        }
        router.add("PUT", "/controllers/:name/selectionIndexPaths") { request in
            let name = request.parameter("name")
            guard case .array(let paths) = try request.jsonBody(), paths.allSatisfy({ $0.arrayValue != nil }) else {
                throw typeMismatch("selectionIndexPaths", "an array of index paths, such as [[0], [0, 1]]")
            }
            let (value, seq) = try controllers.setSelectionIndexPaths(
                try paths.map { path throws(APIError) in try indexes(path, key: "selectionIndexPaths") },
                controller: name)
            return answer(.json(value, seq: seq), whenDurable: seq, document: document)
        }
        router.add("PUT", "/controllers/:name/sortDescriptors") { request in
            let name = request.parameter("name")
            let descriptors: [SortDescriptor]
            do {
                descriptors = try SortDescriptor.descriptors(json: try request.jsonBody())
            } catch let error as ObjectGraphError where error.code == "bad-query" {
                // A malformed key in it is unparsable (400 `bad-key-path`); a body that parsed but is no list of
                // sort descriptors is an invalid value (API.md §2), as for the other controller keys.
                if error.fields["keyPath"] != nil {
                    throw APIError(status: 400, code: "bad-key-path", message: error.message, fields: error.fields)
                }
                throw APIError(
                    status: 422, code: "type-mismatch", message: error.message,
                    fields: error.fields.merging(["keyPath": "sortDescriptors"]) { $1 })
            }
            do {
                let (value, seq) = try controllers.setSortDescriptors(descriptors, controller: name)
                return answer(.json(value, seq: seq), whenDurable: seq, document: document)
            } catch let error as ObjectGraphError where error.code == "bad-query" {
                // A key the model cannot sort by (a to-many, an object) is a well-formed descriptor of the wrong type.
                throw APIError(status: 422, code: "type-mismatch", message: error.message, fields: error.fields)
            }
        }
        router.add("PUT", "/controllers/:name/filterPredicate") { request in
            let name = request.parameter("name")
            let predicate: ObjectGraph.Predicate?
            switch try request.jsonBody() {
            case .null: predicate = nil
            case .string(let format): predicate = try ObjectGraph.Predicate(format: format)
            default: throw typeMismatch("filterPredicate", "a predicate string or null")
            }
            let (value, seq) = try controllers.setFilterPredicate(predicate, controller: name)
            return answer(.json(value, seq: seq), whenDurable: seq, document: document)
        }
        router.add("GET", "/controllers/:name/edits") { request in
            .response(.json(try controllers.edits(controller: request.parameter("name"))))
        }
        router.add("GET", "/controllers/:name/edits/*keyPath") { request in
            let keyPath = request.keyPath("keyPath")
            let name = request.parameter("name")
            guard let value = try controllers.edits(controller: name)[keyPath] else {
                throw APIError(
                    status: 404, code: "not-found",
                    message: "The controller \"\(name)\" has no pending edit of \(keyPath).",
                    fields: ["keyPath": .string(keyPath)])
            }
            return .response(.json(value))
        }
        router.add("PUT", "/controllers/:name/edits/*keyPath") { request in
            let edits = try controllers.setPendingEdit(
                try request.jsonBody(), forKeyPath: request.keyPath("keyPath"),
                controller: request.parameter("name"))
            return .response(.json(edits))
        }
        // Only the actions' names: a POST to a read-only key (`arrangedObjects`) is 405 with `Allow`, and an action of
        // another kind of controller is 404 listing this one's.
        router.add("POST", "/controllers/:name/:action(\(ControllerRegistry.actions.joined(separator: "|")))") {
            request in
            let action = request.parameter("action")
            let keys = ControllerRegistry.bodyKeys(of: action)
            // Not a ternary: with `nil` as one branch it would make `.null` (PropertyListValue takes a nil literal).
            var body: PropertyListValue? = nil
            if let json = try request.optionalJSONBody() {
                let allowed = keys.isEmpty ? "no keys" : keys.sorted().map { "\"\($0)\"" }.joined(separator: " and ")
                guard case .dictionary(let fields) = json else {
                    throw APIError(
                        status: 422, code: "type-mismatch",
                        message: "The body of \(action) is a JSON object with \(allowed), not \(json.typeName).")
                }
                try APIError.checkBodyKeys(fields, allowed: keys) {
                    "The body of \(action) has \(allowed), not \"\($0)\"."
                }
                body = json
            }
            // `insert` and `insertChild` take their index in the body or, as the object routes do, the query.
            if keys.contains("index"), let text = request.request.queryValue("index") {
                guard let index = Int64(text), index >= 0 else {
                    throw APIError.badQuery("index must be a non-negative integer, not \"\(text)\".")
                }
                if case .dictionary(var fields) = body ?? [:] {
                    if let given = fields["index"], given != .integer(index) {
                        throw APIError.queryDisagreesWithBody("index", query: text, body: given)
                    }
                    fields["index"] = .integer(index)
                    body = .dictionary(fields)
                }
            }
            let (state, seq) = try controllers.performAction(action, controller: request.parameter("name"), body: body)
            return answer(.json(state, seq: seq), whenDurable: seq, document: document)
        }
        // Not an action's name: those paths are the actions' (POST), and Allow says so.
        router.add("GET", "/controllers/:name/*keyPath(!\(ControllerRegistry.actions.joined(separator: "|")))") {
            request in
            try read(
                request.keyPath("keyPath"), of: request.parameter("name"), controllers, document: document,
                slowAnswers: slowAnswers)
        }
    }

    /// A request that no route takes on `/controllers/{name}/{word}` (a `POST`, `PUT` or `DELETE`), where `word` is
    /// not a key the controller reads either: there is nothing there, as a `GET` says (404 `undefined-key`; for a
    /// `POST`, where actions go, an action it does not have: 404 `not-found` listing its actions, as for another
    /// kind's action), where a key it reads (`arrangedObjects`) and an action it has (`add`) are 405 with `Allow`.
    /// A `GET` of another kind's action (`addChild` on an array controller) is 404 too: no key, and not its action.
    /// Nil for every other request.
    static func missingControllerKey(
        _ method: String, segments: [String], _ controllers: ControllerRegistry
    ) -> (any Error)? {
        guard segments.count == 3, segments[0] == "controllers",
            controllers.validate(segments[2], controller: segments[1]) == nil
        else { return nil }
        guard (method != "GET" && method != "HEAD") || ControllerRegistry.actions.contains(segments[2]) else {
            return nil
        }
        do {
            _ = try controllers.valueAndSeq(forKeyPath: segments[2], controller: segments[1])
            return nil
        } catch let error as ObjectGraphError where error.code == "undefined-key" {
            guard method == "POST" else { return error }
            do {
                try controllers.perform(segments[2], controller: segments[1])
                return nil
            } catch {
                return error
            }
        } catch {
            return nil
        }
    }

    /// A controller's key path; one that reaches more than `requestThreadValues` to-many values
    /// (`arrangedObjects/department.employees.lastName`) is read again off the request threads, as such a listing is.
    private static func read(
        _ keyPath: String, of name: String, _ controllers: ControllerRegistry, document: Document,
        slowAnswers: RequestLine
    ) throws -> HTTPHandlerResult {
        let read = { @Sendable () throws -> (value: PropertyListValue, seq: Int64) in
            try controllers.valueAndSeq(forKeyPath: keyPath, controller: name)
        }
        // KVC over the arranged objects of a large controller (`arrangedObjects.lastName` over 300,000 employees)
        // reads a value of each: off the request threads too, as a large page of them is (`@count` is cheap).
        let manyArranged =
            keyPath.hasPrefix("arrangedObjects.") && keyPath != "arrangedObjects.@count"
            ? try controllers.arrangedPageSize(controller: name) > slowListingSize : false
        // The selection's dictionary of every key reads each key of each selected object (a select-all: 300,000).
        let manySelected =
            keyPath == "selection" ? try controllers.selectionCount(controller: name) > slowListingSize : false
        if manyArranged || manySelected {
            return readOffRequestThreads(on: slowAnswers, document: document) {
                let (value, seq) = try read()
                return (.json(value, seq: seq), seq)
            }
        }
        return try readingKeyPaths(on: slowAnswers, document: document, read)
    }

    private static func indexes(_ json: PropertyListValue, key: String = "selectionIndexes") throws(APIError) -> [Int] {
        guard case .array(let elements) = json else {
            throw typeMismatch(key, "an array of indexes, such as [0, 2]")
        }
        return try elements.map { element throws(APIError) in
            // However large, an index is out of range (dropped), not malformed.
            guard let index = element.integerValue, index >= 0 else {
                throw typeMismatch(key, "an array of non-negative integers")
            }
            return Int(index)
        }
    }

    private static func references(_ json: PropertyListValue) throws -> [ObjectID] {
        guard case .array(let elements) = json else {
            throw typeMismatch("selectedObjects", "an array of references [{\"$ref\": \"Entity/id\"}]")
        }
        return try elements.map { element in
            // A reference is `{"$ref"}` alone (API.md §1: no other `$` key, and nothing else beside it).
            let reference = element.dictionaryValue?.count == 1 ? element["$ref"]?.stringValue : element.stringValue
            guard let text = reference, let id = ObjectID(reference: text) else {
                throw typeMismatch("selectedObjects", "an array of references [{\"$ref\": \"Entity/id\"}]")
            }
            return id
        }
    }

    private static func typeMismatch(_ keyPath: String, _ expected: String) -> APIError {
        APIError(
            status: 422, code: "type-mismatch", message: "\(keyPath) must be \(expected).",
            fields: ["keyPath": .string(keyPath)])
    }

}
