import Bindery
import HTTPServer
import ObjectGraph
import PropertyList

/// `/observers`, `/changes` and `/notifications`: KVO and notifications over long-poll (API.md §7–8).
///
/// A poll with nothing to answer suspends its connection (no thread waits); the observation center resumes it
/// when something arrives or its timeout passes.
extension BinderyService {
    static let defaultPollTimeout = 30.0
    static let maxPollTimeout = 300.0

    static func addObservingRoutes(to router: inout Router, center: ObservationCenter, model: ObjectModel) {
        router.add("POST", "/observers") { request in
            // Well-formed JSON that is not a registration is 422 (API.md §2), naming the key at fault, as for
            // `POST /notifications`; an empty key path is 400 `bad-key-path`.
            guard case .dictionary(let body) = try request.jsonBody() else {
                throw APIError(status: 422, code: "type-mismatch", message: "The body must be a JSON object.")
            }
            try checkKeys(of: body, allowed: observerKeys, in: "An observer")
            guard case .string(let target)? = body["target"] else {
                throw typeMismatch(
                    "target", "\"target\" is required: \"Entity/id\", \"controllers/NAME\" or \"defaults\".")
            }
            guard case .string(let keyPath)? = body["keyPath"] else {
                throw typeMismatch("keyPath", "\"keyPath\" is required: a key path (a string).")
            }
            guard !keyPath.isEmpty else { throw APIError.badRequest("bad-key-path", "\"keyPath\" is empty.") }
            var options: [String] = []
            let badOptions = typeMismatch("options", "\"options\" must be an array of strings.")
            switch body["options"] {
            case nil, .null?: break
            case .array(let values)?:
                for value in values {
                    guard case .string(let option) = value else { throw badOptions }
                    options.append(option)
                }
            default: throw badOptions
            }
            let (id, since) = try center.addObserver(target: target, keyPath: keyPath, options: options)
            // No seq of its own: `since` may not be durable yet, and the common header tells only what is.
            var response = HTTPResponse.json(["id": .string(id), "since": .integer(since)], status: 201)
            response.headers.append(("Location", "/observers/\(id)"))
            return .response(response)
        }
        router.add("GET", "/observers/:id/changes") { request in
            try poll(request, source: .observer(request.parameter("id")), center: center)
        }
        router.add("GET", "/observers/:id") { request in
            let id = request.parameter("id")
            guard let description = center.observerDescription(id) else { throw noSuchObserver(id) }
            return .response(.json(description))
        }
        router.add("DELETE", "/observers/:id") { request in
            let id = request.parameter("id")
            guard center.removeObserver(id) else { throw noSuchObserver(id) }
            return .response(HTTPResponse(status: 204))
        }
        router.add("GET", "/changes") { request in
            // API.md §7 writes the query as `entity=`: an empty value, like an absent one, filters nothing (as the
            // notification feed's `name=` and `object=`).
            let entity = request.request.filterValue("entity")
            if let entity, model.entity(named: entity) == nil { throw APIError(ObjectGraphError.noSuchEntity(entity)) }
            return try poll(request, source: .store(entity: entity), center: center)
        }
        router.add("GET", "/notifications") { request in
            // API.md §8 writes the query as `name=&object=`: an empty value, like an absent one, filters nothing.
            let query = request.request
            let source = PollRequest.Source.notifications(
                name: query.filterValue("name"), object: query.filterValue("object"))
            return try poll(request, source: source, center: center)
        }
        router.add("POST", "/notifications") { request in
            // Well-formed JSON that is not a notification is 422 (API.md §2), naming the key at fault.
            let invalid = typeMismatch
            guard case .dictionary(let body) = try request.jsonBody() else {
                throw APIError(status: 422, code: "type-mismatch", message: "The body must be a JSON object.")
            }
            try checkKeys(of: body, allowed: notificationKeys, in: "A notification")
            let name: String
            switch body["name"] {
            case .string(let text)? where !text.isEmpty: name = text
            case nil, .null?: throw invalid("name", "\"name\" is required.")
            case let other?: throw invalid("name", "\"name\" must be a non-empty string, not \(other.jsonString()).")
            }
            // The values of `postingStyle` and `coalesce` are the notification center's to check.
            var style = "now"
            if let given = body["postingStyle"], !given.isNull {
                guard case .string(let text) = given else {
                    throw invalid(
                        "postingStyle", "\"postingStyle\" must be now, asap or whenIdle, not \(given.jsonString()).")
                }
                style = text
            }
            let badCoalesce = invalid("coalesce", "\"coalesce\" must be an array of \"name\" and \"sender\".")
            // Omitted: on name and sender, as NSNotificationQueue's `enqueueNotification:postingStyle:` does.
            var coalesce = ["name", "sender"]
            switch body["coalesce"] ?? .null {
            case .null: break
            case .array(let values):
                coalesce = try values.map { value throws(APIError) -> String in
                    guard case .string(let key) = value else { throw badCoalesce }
                    return key
                }
            default: throw badCoalesce
            }
            // NSNotification's userInfo is a dictionary or nil; a reference (`{"$ref": ...}`) is an object.
            let userInfo = body["userInfo"] ?? .null
            let isReference = userInfo.dictionaryValue?.keys.contains("$ref") == true
            guard userInfo.isNull || (userInfo.dictionaryValue != nil && !isReference) else {
                let type = isReference ? "a reference" : userInfo.typeName
                throw invalid("userInfo", "\"userInfo\" must be a JSON object or null, not \(type).")
            }
            let outcome = try center.post(
                name: name, object: body["object"] ?? .null, userInfo: userInfo, style: style,
                coalesce: coalesce)
            if let seq = outcome.seq {
                return .response(.json(["seq": .integer(seq), "posted": true], status: 201))
            }
            return .response(
                .json(
                    ["posted": false, "queued": .string(style), "coalesced": .boolean(outcome == .coalesced)],
                    status: 202))
        }
    }

    /// A long-poll's `timeout` query: seconds (default 30), at most 300 (API.md §7; a longer one is taken as 300).
    static func pollTimeout(_ text: String?) throws(APIError) -> Double {
        guard let text else { return defaultPollTimeout }
        // Decimal digits only: Double(_:) would also read "0x10", "1e2" and "nan".
        guard text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let value = Double(text), value >= 0,
            value.isFinite
        else {
            throw APIError.badQuery("timeout must be seconds in decimal digits (such as 0, 2 or 0.5), not \"\(text)\".")
        }
        return min(value, maxPollTimeout)
    }

    /// A long-poll: `since` (default: now), `timeout` seconds (default 30, at most 300).
    private static func poll(
        _ request: RouteRequest, source: PollRequest.Source, center: ObservationCenter
    ) throws -> HTTPHandlerResult {
        let query = request.request
        var since: Int64?
        if let text = query.queryValue("since") {
            guard let value = Int64(text), value >= 0 else {
                throw APIError.badQuery("since must be a non-negative integer, not \"\(text)\".")
            }
            since = value
        }
        let timeout = try pollTimeout(query.queryValue("timeout"))
        // A stream when the client names it, and not below JSON: a client that prefers JSON (a generated one sends
        // `application/json,text/event-stream;q=0.9`) gets the long-poll's answer, which ends.
        if query.prefersToJSON(["text/event-stream"]) {
            // Optional white space around a field value is not part of it (RFC 9110 §5.5).
            if let text = query.header("Last-Event-ID")?.trimmingCharacters(in: .whitespaces) {
                // The ids this service sends are seqs: any other would resume from an unknown place, silently.
                guard let lastEventID = Int64(text), lastEventID >= 0 else {
                    throw APIError.badQuery(
                        "Last-Event-ID must be a seq this stream sent (a non-negative integer), not \"\(text)\".")
                }
                since = lastEventID
            }
            let streamRequest = PollRequest(source: source, since: since, timeout: 0)
            if let refusal = center.refusal(of: streamRequest) { return .response(render(refusal, of: source)) }
            guard query.method != "HEAD" else {
                // The stream's header only: nothing is subscribed (the server ends the answer with its header).
                let stream = HTTPStream()
                stream.finish()
                return .response(HTTPResponse(status: 200, headers: eventStreamHeaders, body: .stream(stream)))
            }
            return .response(eventStream(streamRequest, center: center))
        }
        let pollRequest = PollRequest(source: source, since: since, timeout: timeout)
        // A poll still waiting when the server stops (one that came after the waiters were answered): with `since`
        // nothing came after it; without, its `last` (the current seq) cannot be read off the observation queue, and
        // no made-up one (0 would send the client back to the start): it retries.
        let emptyKey = if case .notifications = source { "notifications" } else { "changes" }
        let shutdown = since.map { HTTPResponse.json([emptyKey: [], "last": .integer($0)]) } ?? shuttingDown
        return .suspend(
            HTTPSuspension(shutdownResponse: shutdown) { connection in
                center.poll(pollRequest, isAbandoned: { connection.peerHasClosed }) { answer in
                    connection.resume(with: render(answer, of: source))
                }
            })
    }

    /// Unsent bytes a client may leave behind on an event stream before the stream ends with `client-too-slow` (the
    /// client reconnects with `Last-Event-ID`); a single event larger than this is still sent when nothing waits.
    /// All streams and large answers together are held to `--max-unsent` the same way (`HTTPStream`).
    static let maxUnsentEventBytes = 4 << 20

    /// The same feed as server-sent events: `id:` is the seq, `event: change` (notifications too), a heartbeat
    /// comment when idle, `event: error` before the stream ends when it cannot go on.
    private static func eventStream(_ request: PollRequest, center: ObservationCenter) -> HTTPResponse {
        let stream = HTTPStream()
        let id = center.subscribe(
            request, isAbandoned: { stream.peerHasClosed },
            send: { events, whenSent in
                func tooSlow(_ unsent: Int) -> Bool {
                    let error: PropertyListValue = [
                        "error": [
                            "code": "client-too-slow",
                            "message": .string(
                                "\(unsent) bytes of events were not read yet; reconnect with Last-Event-ID."),
                        ]
                    ]
                    stream.write(Array("event: error\ndata: \(error.jsonString())\n\n".utf8))
                    return false
                }
                // A client that has not read what it was sent while the server is over its limit already: not even
                // rendered (a change is rendered for every stream).
                let unsent = stream.bufferedCount
                if unsent > 0 && stream.wouldPassServerUnsentLimit(adding: 0) { return tooSlow(unsent) }
                // Parts: an item's JSON is shared by every stream of its feed, not copied; the framing goes between.
                var parts: [[UInt8]] = []
                var framing: [UInt8] = []
                for event in events {
                    switch event {
                    case .item(let id, let json):
                        if let id { framing += Array("id: \(id)\n".utf8) }
                        framing += Array("event: change\ndata: ".utf8)
                        parts += [framing, json]
                        framing = Array("\n\n".utf8)
                    case .error(let body): framing += Array("event: error\ndata: \(body.jsonString())\n\n".utf8)
                    case .heartbeat(let lastEventID):
                        framing += Array((": heartbeat\n" + (lastEventID.map { "id: \($0)\n" } ?? "") + "\n").utf8)
                    }
                }
                parts.append(framing)
                let count = parts.reduce(0) { $0 + $1.count }
                if unsent > 0 && unsent + count > maxUnsentEventBytes
                    || stream.wouldPassServerUnsentLimit(adding: count)
                {
                    return tooSlow(unsent)
                }
                return stream.write(parts: parts, whenSent: whenSent)
            },
            close: { stream.finish() })
        stream.onClose { center.unsubscribe(id) }
        return HTTPResponse(status: 200, headers: eventStreamHeaders, body: .stream(stream))
    }

    private static let eventStreamHeaders = [
        ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no"),
        ("Vary", "Accept"),
    ]

    /// The keys of a `POST /notifications` body.
    private static let notificationKeys: Set = ["name", "object", "userInfo", "postingStyle", "coalesce"]
    /// The keys of a `POST /observers` body.
    private static let observerKeys: Set = ["target", "keyPath", "options"]

    /// 422 `type-mismatch` naming the body's key at fault.
    private static func typeMismatch(_ key: String, _ message: String) -> APIError {
        APIError(status: 422, code: "type-mismatch", message: message, fields: ["keyPath": .string(key)])
    }

    /// 422 `undefined-key` for a body key other than `allowed`, naming those it has.
    private static func checkKeys(
        of body: [String: PropertyListValue], allowed: Set<String>, in what: String
    ) throws(APIError) {
        try APIError.checkBodyKeys(body, allowed: allowed) {
            "\(what) has no key \"\($0)\"; it has \(allowed.sorted().joined(separator: ", "))."
        }
    }

    /// The answer to a poll of `source`. Notifications are numbered apart from the store's changes (API.md §8), so
    /// their seq is `last` only, and `X-Store-Seq` stays the store's, as on every other answer.
    private static func render(_ answer: PollAnswer, of source: PollRequest.Source) -> HTTPResponse {
        switch answer {
        case .items(let items, let seq):
            // `Vary`: the same URL streams with `Accept: text/event-stream`.
            var headers = [("Content-Type", "application/json"), ("Vary", "Accept")]
            if case .notifications = source {} else { headers.append(("X-Store-Seq", String(seq))) }
            return HTTPResponse(status: 200, headers: headers, body: .bytes(items.bytes))
        case .compacted(let oldest, let current):
            let resume =
                switch source {
                case .store: "re-read (GET /store), then go on from the current seq"
                case .observer: "re-read, then register again with initial"
                case .notifications: "go on from the current seq (notifications are numbered apart from the store)"
                }
            return .error(
                APIError(
                    status: 410, code: "history-compacted",
                    message: "Only what came after \(oldest) is retained, and the newest seq is \(current): \(resume).",
                    fields: ["oldest": .integer(oldest), "current": .integer(current)]))
        case .noSuchObserver(let id):
            return .error(noSuchObserver(id))
        case .tooManyWaiters(let retryAfter):
            return .error(
                APIError(
                    status: 503, code: "too-many-waiters", message: "Too many clients are waiting; retry shortly.",
                    headers: [("Retry-After", String(retryAfter))]))
        }
    }

    private static func noSuchObserver(_ id: String) -> APIError {
        APIError(
            status: 404, code: "no-such-observer", message: "There is no observer \(id) (it may have expired).")
    }
}
