import Bindery
import Dispatch
import HTTPServer
import ObjectGraph
import PropertyList

/// `/objects`: key-value coding over REST (API.md §4).
///
/// Conditional requests: the ETag of an object is `"<version>"`, the seq of its last change (or of the last change
/// of an object its derived keys read, `ReadView.version(of:)`). `If-Match` on a
/// mutating request is checked inside the transaction, so the check and the change are one atomic step; a mismatch is
/// 412 `precondition-failed` with the current representation in `current` and the current `ETag` header.
extension BinderyService {
    static func addObjectRoutes(to router: inout Router, document: Document, slowAnswers: RequestLine) {
        router.add("GET", "/objects/:entity") { try listObjects($0, document: document, slowAnswers: slowAnswers) }
        router.add("POST", "/objects/:entity") { try insertObject($0, document: document) }
        router.add("GET", "/objects/:entity/:id") { try getObject($0, document: document) }
        router.add("PATCH", "/objects/:entity/:id") { try patchObject($0, document: document) }
        router.add("DELETE", "/objects/:entity/:id") { try deleteObject($0, document: document) }
        router.add("GET", "/objects/:entity/:id/*keyPath") {
            try getValue($0, document: document, slowAnswers: slowAnswers)
        }
        router.add("PUT", "/objects/:entity/:id/*keyPath") { try putValue($0, document: document) }
        router.add("POST", "/objects/:entity/:id/*keyPath") { try insertElement($0, document: document) }
        router.add("DELETE", "/objects/:entity/:id/*keyPath/#index") { try removeElement($0, document: document) }
    }

    // MARK: Entities

    private static func listObjects(
        _ request: RouteRequest, document: Document, slowAnswers: RequestLine
    ) throws -> HTTPHandlerResult {
        let entity = request.parameter("entity")
        let query = request.request
        // An empty `filter=` is no filter, as an empty `sort=` is no order.
        let filter = try query.filterValue("filter").map { try ObjectGraph.Predicate(format: $0) }
        let sort = try query.queryValue("sort").map { try SortDescriptor.descriptors(query: $0) } ?? []
        let offset = try nonNegativeInteger(query.queryValue("offset"), name: "offset") ?? 0
        let limit = try nonNegativeInteger(query.queryValue("limit"), name: "limit")
        let keys = query.queryValue("keys").map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: " ") }.filter { !$0.isEmpty }
        }
        let ordering = sort.isEmpty ? nil : SortOrdering(sort)
        // nil: stopped on a request thread by `requestThreadValues`.
        let list = { @Sendable (onRequestThread: Bool) throws -> (HTTPResponse, seq: Int64)? in
            guard
                let (objects, count, seq) = try listing(
                    entity, filter: filter, ordering: ordering, offset: offset, limit: limit, keys: keys,
                    onRequestThread: onRequestThread, document: document)
            else { return nil }
            return (.json(["objects": .array(objects), "count": .integer(Int64(count))], seq: seq), seq)
        }
        // A listing that reads many objects is made off the request threads, as an export is; so is one whose key
        // paths reach more than `requestThreadValues` values (`keys=department.employees.lastName`).
        let reads = try document.store.read { view throws(ObjectGraphError) in try view.count(of: entity) }
        if reads <= slowListingSize || (filter == nil && ordering == nil && (limit ?? Int.max) <= slowListingSize),
            let (response, seq) = try list(true)
        {
            return answer(response, whenDurable: seq, document: document)
        }
        return readOffRequestThreads(on: slowAnswers, document: document) {
            guard let answer = try list(false) else {
                throw APIError.internalError("A listing stopped short of its allowance.")
            }
            return answer
        }
    }

    /// Listings of entities with more objects than this (filtered, sorted, or answering this many) are made off the
    /// request threads.
    static let slowListingSize = 1_000
    /// The to-many values a request's key paths may reach on a request thread (about 10 ms); past them it is made off
    /// the request threads (a listing, where it may reach `KeyPathAllowance.listingTotal`; an object's or a
    /// controller's key path, `readingKeyPaths`).
    static let requestThreadValues = 100_000

    /// The objects of a listing, their count and the seq read; on a request thread, nil when its key paths reach more
    /// than `requestThreadValues` values.
    private static func listing(
        _ entity: String, filter: ObjectGraph.Predicate?, ordering: SortOrdering?, offset: Int, limit: Int?,
        keys: [String]?, onRequestThread: Bool, document: Document
    ) throws -> (objects: [PropertyListValue], count: Int, seq: Int64)? {
        try document.store.read { view throws -> ([PropertyListValue], Int, Int64)? in
            let make = { () throws -> ([PropertyListValue], Int, Int64) in
                if let keys { try view.checkKeys(keys, of: entity) }
                // By handle: the same filter and order as over `.object(id)` subjects, without hashing ids.
                let handles = try view.handles(of: entity, matching: filter, sortedBy: ordering)
                let start = min(offset, handles.count)
                // `limit` may be as large as Int allows: never add it to anything.
                let end = limit.map { start + min($0, handles.count - start) } ?? handles.count
                let objects = try handles[start..<end].map { try view.json(of: $0, keys: keys) }
                return (objects, handles.count, view.seq)
            }
            // The client's key paths (filter, sort keys, projected keys) are evaluated on every object: one that fans
            // out is refused at its first object rather than paid for on each, and all of them together are bounded
            // (`KeyPathAllowance`).
            let total = KeyPathAllowance.listingTotal(objectCount: view.objectCount)
            let perEvaluation = KeyPathAllowance.perEvaluation(objectCount: view.objectCount)
            guard onRequestThread else {
                return try KeyPathAllowance.withLimit(
                    total: total, perEvaluation: perEvaluation, cachingDerivedValues: true, make
                ).value
            }
            return try KeyPathAllowance.withinTotal(
                min(total, requestThreadValues), perEvaluation: perEvaluation, cachingDerivedValues: true, make)
        }
    }

    private static func insertObject(_ request: RouteRequest, document: Document) throws -> HTTPHandlerResult {
        let entity = request.parameter("entity")
        guard case .dictionary(let values) = try request.jsonBody() else {
            throw APIError(status: 422, code: "type-mismatch", message: "The body must be a JSON object of keys.")
        }
        // The target is the entity's collection, which has no entity tag: `If-Match` matches it only with `*`
        // (RFC 9110 §13.1.1); an unknown entity is still 404.
        if let condition = request.request.header("If-Match"), !matches(condition, version: nil),
            document.store.model.entity(named: entity) != nil
        {
            throw APIError(
                status: 412, code: "precondition-failed",
                message: "The \(entity) objects, a create's target, have no entity tag: If-Match: \(condition) fails.")
        }
        let createOnly = request.request.header("If-None-Match")?.trimmingCharacters(in: " ") == "*"
        let result = try document.transactionBeforeDurable { transaction throws -> (ObjectID, PropertyListValue) in
            if createOnly, let given = values["$id"], !given.isNull {
                let id = try requestedID(given, entity: entity)
                if transaction.view.contains(id) {
                    throw preconditionFailed(
                        id, version: try transaction.view.version(of: id), "If-None-Match: * (create only)",
                        current: try transaction.view.json(of: id))
                }
            }
            let id = try transaction.insert(entity, values: values)
            return (id, try transaction.view.json(of: id))
        }
        let (id, json) = result.value
        var response = HTTPResponse.json(json, status: 201, seq: result.seq, etag: etag(result.seq))
        response.headers.append(("Location", "/objects/\(id.entity)/\(id.id)"))
        return acknowledge(result, response, document: document)
    }

    // MARK: Objects

    private static func getObject(_ request: RouteRequest, document: Document) throws -> HTTPHandlerResult {
        let id = try objectID(request)
        let (json, version, seq) = try document.store.read { view throws -> (PropertyListValue, Int64, Int64) in
            (try view.json(of: id), try view.version(of: id), view.seq)
        }
        try checkIfMatchOnly(request, id: id, version: version) { json }
        if let condition = request.request.header("If-None-Match"), matches(condition, version: version, weak: true) {
            return answer(
                HTTPResponse(status: 304, headers: [("ETag", etag(version)), ("X-Store-Seq", String(seq))]),
                whenDurable: seq, document: document)
        }
        return answer(.json(json, seq: seq, etag: etag(version)), whenDurable: seq, document: document)
    }

    private static func patchObject(_ request: RouteRequest, document: Document) throws -> HTTPHandlerResult {
        let id = try objectID(request)
        guard case .dictionary(let values) = try request.jsonBody() else {
            throw APIError(status: 422, code: "type-mismatch", message: "The body must be a JSON object of keys.")
        }
        let result = try document.transactionBeforeDurable { transaction throws -> ChangeAnswer in
            let version = try checkIfMatch(request, id: id, in: transaction.view) { try $0.json(of: id) }
            try transaction.setValuesForKeys(values, of: id)
            return ChangeAnswer(try transaction.view.json(of: id), of: id, version: version, in: transaction)
        }
        return acknowledge(result, changed(result), document: document)
    }

    private static func deleteObject(_ request: RouteRequest, document: Document) throws -> HTTPHandlerResult {
        let id = try objectID(request)
        let result = try document.transactionBeforeDurable { transaction in
            _ = try checkIfMatch(request, id: id, in: transaction.view) { try $0.json(of: id) }
            try transaction.delete(id)
        }
        return acknowledge(
            result, HTTPResponse(status: 204, headers: [("X-Store-Seq", String(result.seq))]), document: document)
    }

    // MARK: Key paths

    private static func getValue(
        _ request: RouteRequest, document: Document, slowAnswers: RequestLine
    ) throws -> HTTPHandlerResult {
        let id = try objectID(request)
        let keyPath = request.keyPath("keyPath")
        return try readingKeyPaths(on: slowAnswers, document: document) {
            try document.store.read { view throws -> (PropertyListValue, Int64) in
                (try view.value(forKeyPath: keyPath, of: id).json, view.seq)
            }
        }
    }

    /// Answers `read` (a value and the seq it shows) made on this request thread while its key paths reach at most
    /// `requestThreadValues` to-many values; past that, made again off the request threads, with the usual limits: a
    /// key path that fans out (`department.employees.department.employees.lastName`, 18 MB over 1,400 employees)
    /// would otherwise hold a libmicrohttpd worker, and every connection it serves, for as long as it takes.
    static func readingKeyPaths(
        on slowAnswers: RequestLine, document: Document,
        _ read: @escaping @Sendable () throws -> (value: PropertyListValue, seq: Int64)
    ) throws -> HTTPHandlerResult {
        if let (value, seq) = try KeyPathAllowance.withinTotal(requestThreadValues, perEvaluation: .max, read) {
            return answer(.json(value, seq: seq), whenDurable: seq, document: document)
        }
        return readOffRequestThreads(on: slowAnswers, document: document) {
            let (value, seq) = try read()
            return (.json(value, seq: seq), seq)
        }
    }

    /// A read answered from `make` on the request thread, or off the request threads when `offRequestThreads` (one
    /// whose cost grows with the store: a large page or selection).
    static func reading(
        offRequestThreads: Bool, on slowAnswers: RequestLine, document: Document,
        _ make: @escaping @Sendable () throws -> (HTTPResponse, seq: Int64)
    ) throws -> HTTPHandlerResult {
        guard offRequestThreads else {
            let (response, seq) = try make()
            return answer(response, whenDurable: seq, document: document)
        }
        return readOffRequestThreads(on: slowAnswers, document: document, make)
    }

    /// `answeredOffRequestThreads` for a read: `make` answers the response and the seq it shows, which is sent once
    /// that seq is durable (an error, or a flush that fails, as §2's JSON).
    static func readOffRequestThreads(
        on slowAnswers: RequestLine, document: Document,
        _ make: @escaping @Sendable () throws -> (HTTPResponse, seq: Int64)
    ) -> HTTPHandlerResult {
        answeredOffRequestThreads(on: slowAnswers) {
            do {
                let (response, seq) = try make()
                try document.waitUntilDurable(seq)
                return response
            } catch {
                return errorResponse(error)
            }
        }
    }

    private static func putValue(_ request: RouteRequest, document: Document) throws -> HTTPHandlerResult {
        let id = try objectID(request)
        let keyPath = request.keyPath("keyPath")
        let value = try request.jsonBody()
        let result = try document.transactionBeforeDurable { transaction throws -> ChangeAnswer in
            let version = try checkIfMatch(request, id: id, in: transaction.view) {
                try $0.value(forKeyPath: keyPath, of: id).json
            }
            try transaction.setValue(value, forKeyPath: keyPath, of: id)
            return ChangeAnswer(
                try transaction.view.value(forKeyPath: keyPath, of: id).json, of: id, version: version, in: transaction)
        }
        return acknowledge(result, changed(result), document: document)
    }

    /// `POST /objects/{Entity}/{id}/{toManyKeyPath}?index=N` with a `{"$ref"}` body: answers the relationship's new
    /// value (read from its owner: the change may move the path's to-ones, see `Transaction.toManyOwner`).
    private static func insertElement(_ request: RouteRequest, document: Document) throws -> HTTPHandlerResult {
        let id = try objectID(request)
        let keyPath = request.keyPath("keyPath")
        let index = try nonNegativeInteger(request.request.queryValue("index"), name: "index")
        let body = try request.jsonBody()
        guard body.dictionaryValue?.count == 1, case .string(let reference)? = body["$ref"],
            let element = ObjectID(reference: reference)
        else {
            throw APIError(
                status: 422, code: "type-mismatch", message: "The body must be a reference: {\"$ref\": \"Entity/id\"}.")
        }
        let result = try document.transactionBeforeDurable { transaction throws -> ChangeAnswer in
            let version = try checkIfMatch(request, id: id, in: transaction.view) {
                try $0.value(forKeyPath: keyPath, of: id).json
            }
            let (owner, key) = try transaction.toManyOwner(keyPath, of: id)
            try transaction.insert(element, at: index, intoKeyPath: keyPath, of: id)
            return ChangeAnswer(
                try transaction.view.value(forKeyPath: key, of: owner).json, of: id, version: version, in: transaction)
        }
        return acknowledge(result, changed(result), document: document)
    }

    /// `DELETE /objects/{Entity}/{id}/{toManyKeyPath}/{index}`: answers the relationship's new value (from its owner).
    private static func removeElement(_ request: RouteRequest, document: Document) throws -> HTTPHandlerResult {
        let id = try objectID(request)
        let keyPath = request.keyPath("keyPath")
        guard let index = Int(request.parameter("index")) else {  // digits only: beyond 64 bits, as `?index=`
            throw APIError(
                status: 400, code: "bad-path", message: "index \(request.parameter("index")) is beyond 64 bits.")
        }
        let result = try document.transactionBeforeDurable { transaction throws -> ChangeAnswer in
            let version = try checkIfMatch(request, id: id, in: transaction.view) {
                try $0.value(forKeyPath: keyPath, of: id).json
            }
            let (owner, key) = try transaction.toManyOwner(keyPath, of: id)
            try transaction.remove(at: index, fromKeyPath: keyPath, of: id)
            return ChangeAnswer(
                try transaction.view.value(forKeyPath: key, of: owner).json, of: id, version: version, in: transaction)
        }
        return acknowledge(result, changed(result), document: document)
    }

    // MARK: Helpers

    /// The answer to a request still waiting for durability when the server stops.
    private static let notDurable = HTTPResponse.error(
        APIError(status: 503, code: "not-durable", message: "The change could not be made durable."))

    /// Sends `response` once the transaction's change is durable, without holding a thread meanwhile: the
    /// connection is suspended and the journal's flusher resumes it (so one fsync serves many requests). If the
    /// server stops first, the answer is `response` when the closed document made the change durable, else 503.
    /// A request that changed nothing waits too while others' changes it reflects (its seq) are not yet durable.
    static func acknowledge<T>(
        _ result: TransactionResult<T>, _ response: HTTPResponse, document: Document
    ) -> HTTPHandlerResult {
        answer(response, whenDurable: result.seq, document: document)
    }

    /// Sends `response`, which shows the store at `seq`, once that is durable (at once when it is), without holding
    /// a thread meanwhile; 503 when it cannot be made durable. With `batch` a commit is readable before its group is
    /// flushed: a read answered then could show a change that a crash loses, and its `X-Store-Seq` (at most what is
    /// durable) would be older than what it shows, so that a client going on from it (the re-read after a 410) would
    /// be sent that change again. A read waits for the rest of one group commit at most.
    static func answer(_ response: HTTPResponse, whenDurable seq: Int64, document: Document) -> HTTPHandlerResult {
        guard document.acknowledgedSeq(seq) < seq else { return .response(response) }
        return .suspend(
            HTTPSuspension(shutdownResponse: { document.acknowledgedSeq(seq) >= seq ? response : notDurable }) {
                connection in
                document.whenDurable(seq) { error in
                    connection.resume(with: error.map { .error(APIError($0)) } ?? response)
                }
            })
    }

    private static func objectID(_ request: RouteRequest) throws(ObjectGraphError) -> ObjectID {
        let id = request.parameter("id")
        guard ObjectID.isValidID(id) else { throw ObjectGraphError.badID(id) }
        return ObjectID(entity: request.parameter("entity"), id: id)
    }

    /// The id a create request asks for: `"42"` or `"Employee/42"`.
    private static func requestedID(_ value: PropertyListValue, entity: String) throws -> ObjectID {
        guard case .string(let text) = value else { throw ObjectGraphError.badID(value.jsonString()) }
        if text.contains("/") {
            guard let id = ObjectID(reference: text), id.entity == entity else { throw ObjectGraphError.badID(text) }
            return id
        }
        guard ObjectID.isValidID(text) else { throw ObjectGraphError.badID(text) }
        return ObjectID(entity: entity, id: text)
    }

    static func etag(_ version: Int64) -> String { "\"\(version)\"" }

    /// Whether an `If-Match` / `If-None-Match` list names this version (`*` names any; with no version, as a
    /// collection has none, only `*` matches). `If-Match` compares strongly (RFC 9110 §13.1.1: a weak tag `W/"7"`
    /// never matches), `If-None-Match` weakly (`weak`).
    static func matches(_ condition: String, version: Int64?, weak: Bool = false) -> Bool {
        condition.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: " \t")
            if weak, tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == "*" || version.map { tag == etag($0) } == true
        }
    }

    /// Checks `If-Match` and `If-None-Match` against the object's version inside a transaction (RFC 9110 §13.2.2: a
    /// matching `If-None-Match` on a change fails too); returns the version.
    private static func checkIfMatch(
        _ request: RouteRequest, id: ObjectID, in view: ReadView,
        current: (ReadView) throws -> PropertyListValue
    ) throws -> Int64 {
        let version = try view.version(of: id)
        if let condition = request.request.header("If-None-Match"), matches(condition, version: version, weak: true) {
            throw preconditionFailed(id, version: version, "If-None-Match: \(condition)", current: try current(view))
        }
        try checkIfMatchOnly(request, id: id, version: version) { try current(view) }
        return version
    }

    /// 412 when `If-Match` does not name `version` (on any method, RFC 9110 §13.1.1).
    private static func checkIfMatchOnly(
        _ request: RouteRequest, id: ObjectID, version: Int64, current: () throws -> PropertyListValue
    ) throws {
        if let condition = request.request.header("If-Match"), !matches(condition, version: version) {
            throw preconditionFailed(id, version: version, "If-Match: \(condition)", current: try current())
        }
    }

    private static func preconditionFailed(
        _ id: ObjectID, version: Int64, _ condition: String, current: PropertyListValue
    ) -> APIError {
        var error = APIError(
            status: 412, code: "precondition-failed", message: "\(id) is at version \(version); \(condition) fails.",
            fields: ["current": current, "etag": .string(etag(version))], headers: [("ETag", etag(version))])
        error.showsSeq = version
        return error
    }

    /// The body of the answer to a change of one object, and its ETag's version when the commit leaves it as it was.
    private struct ChangeAnswer: Sendable {
        var body: PropertyListValue
        /// nil when the commit moves the object's version to its seq.
        var unchangedVersion: Int64?

        /// Read inside the transaction: a change through a key path to another object can move this object's
        /// version too (a derived key reads it), so the record's list of updated objects does not tell.
        init(_ body: PropertyListValue, of id: ObjectID, version: Int64, in transaction: Transaction) {
            self.body = body
            self.unchangedVersion = transaction.changesVersion(of: id) ? nil : version
        }
    }

    /// The 200 answer to a change of one object, with the ETag the object has after it.
    private static func changed(_ result: TransactionResult<ChangeAnswer>) -> HTTPResponse {
        .json(result.value.body, seq: result.seq, etag: etag(result.value.unchangedVersion ?? result.seq))
    }

    /// A query parameter that must be a non-negative integer (`offset`, `limit`, `index`); 400 `bad-query` else.
    /// Digits beyond 64 bits are refused, as such integers are in JSON (API.md §1).
    static func nonNegativeInteger(_ text: String?, name: String) throws(APIError) -> Int? {
        guard let text else { return nil }
        guard let value = Int(text), value >= 0 else {
            throw APIError.badQuery("\(name) must be a non-negative integer, not \"\(text)\".")
        }
        return value
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        String(drop(while: { set.contains($0) }).reversed().drop(while: { set.contains($0) }).reversed())
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        String(self).trimmingCharacters(in: set)
    }
}
