import Bindery
import Controllers
import Dispatch
import HTTPServer
import ObjectGraph
import PropertyList

/// The REST layer of API.md: the `HTTPResponder` that routes requests, renders errors and serves `Public/`.
///
/// Every response carries `X-Store-Seq` (the store's sequence number when the answer was made) and the CORS header.
/// Unmatched GETs fall through to the static files; anything else unmatched is a 404 JSON error.
public final class BinderyService: HTTPResponder {
    /// What the service needs beyond its routes.
    public struct Configuration: Sendable {
        public var publicDirectory: String
        public var corsOrigin: String
        /// Controllers created at run time at once (`--max-controllers`); beyond, 503 too-many-controllers.
        public var maxControllers: Int
        /// Seconds a request may wait for its turn off the request threads before its line takes no more while it
        /// is that long (`RequestLine`).
        public var turnPatience: Double

        public init(
            publicDirectory: String = "Public", corsOrigin: String = "*", maxControllers: Int = 1_000,
            turnPatience: Double = 30
        ) {
            self.publicDirectory = publicDirectory
            self.corsOrigin = corsOrigin
            self.maxControllers = maxControllers
            self.turnPatience = turnPatience
        }
    }

    public let configuration: Configuration
    public let document: Document
    /// Change history, KVO observers, notifications and waiting long-polls.
    public let observations: ObservationCenter
    /// The mediating controllers (`/controllers`), following the document's commits.
    public let controllers: ControllerRegistry
    /// The user defaults controller (`/defaults`), saved in the document's data directory.
    public let defaults: UserDefaultsController
    /// What was wrong with the fixture's `controllers.json` or `defaults.json` (the serve command stops on it).
    public let setupError: ObjectGraphError?
    /// The queue answers that take long to make are made on, one at a time, off the request threads (exports, large
    /// listings, reads whose key paths reach many values); one per service, so that one store's exports never wait
    /// for another's (tests run several servers).
    public let slowAnswers: RequestLine
    /// The queue requests that take the controllers' lock are carried out on, in turn, off the request threads
    /// (`answeredInTurn`) once the store or a controller is large (`waitsInTurn`): re-arranging a large controller
    /// holds that lock long. In a small store they are answered on the request threads (the hop to the queue and
    /// back would cost more than their work).
    public let controllerRequests: RequestLine
    private let router: Router
    private let counters = ResponseCounters()
    /// Answers kept for requests with an `Idempotency-Key`.
    private let idempotentRequests = IdempotentRequests()
    private let staticFiles: StaticFiles?

    /// - Parameter observations: the observation center (the server passes one on the main queue); by default, one
    ///   on a queue of its own.
    public init(configuration: Configuration, document: Document, observations: ObservationCenter? = nil) {
        self.configuration = configuration
        self.document = document
        let observations =
            observations ?? ObservationCenter(document: document, queue: DispatchQueue(label: "bindery.observation"))
        self.observations = observations
        self.slowAnswers = RequestLine(label: "bindery.slow-answers", patience: configuration.turnPatience)
        self.controllerRequests = RequestLine(
            label: "bindery.controller-requests", patience: configuration.turnPatience)
        self.staticFiles = StaticFiles(root: configuration.publicDirectory)
        let (controllers, controllersError) = Self.makeControllers(
            document: document, limit: configuration.maxControllers)
        let (defaults, defaultsError) = Self.makeDefaults(document: document)
        (self.controllers, self.defaults, self.setupError) = (controllers, defaults, controllersError ?? defaultsError)
        Self.connect(observations, to: document, controllers: controllers, defaults: defaults)
        var router = Router()
        Self.addHealthRoutes(to: &router, document: document)
        Self.addModelRoutes(to: &router, store: document.store)
        Self.addObjectRoutes(to: &router, document: document, slowAnswers: slowAnswers)
        Self.addStoreRoutes(to: &router, document: document, slowAnswers: slowAnswers)
        Self.addActionRoutes(to: &router, document: document)
        Self.addObservingRoutes(to: &router, center: observations, model: document.store.model)
        Self.addControllerRoutes(to: &router, controllers: controllers, document: document, slowAnswers: slowAnswers)
        Self.addDefaultsRoutes(to: &router, defaults: defaults)
        Self.addMetricsRoutes(
            to: &router, document: document, observations: observations, controllers: controllers, counters: counters,
            requestLines: [("controller-requests", controllerRequests), ("slow-answers", slowAnswers)])
        self.router = router
    }

    /// Makes controllers and defaults observable (`/observers` targets `controllers/NAME` and `defaults`) and routes
    /// the notifications of the document, the controllers and the defaults to the notification center.
    private static func connect(
        _ observations: ObservationCenter, to document: Document, controllers: ControllerRegistry,
        defaults: UserDefaultsController
    ) {
        // A default named `path`, else a key path into a dictionary default (`window.width`: the default `window`,
        // then its key `width`), as a binding through NSUserDefaultsController's `values` follows it; null when
        // there is none.
        @Sendable func value(at path: Substring, in snapshot: UserDefaultsController.Snapshot) -> PropertyListValue {
            if let value = snapshot.value(forKey: String(path)) { return value }
            let keys = path.split(separator: ".", omittingEmptySubsequences: false)
            guard keys.count > 1, var value = snapshot.value(forKey: String(keys[0])) else { return .null }
            for key in keys.dropFirst() {
                guard case .dictionary(let fields) = value, let next = fields[String(key)] else { return .null }
                value = next
            }
            return value
        }
        // The defaults are read from the snapshot each change leaves, so that observers see every value; controllers
        // (whose key paths may cover the whole store) as they are when the observation queue reads them.
        @Sendable func state(of snapshot: UserDefaultsController.Snapshot) -> ObservationCenter.ExternalState {
            .init(generation: snapshot.generation) { keyPath in
                // As a binding to NSUserDefaultsController: `values.KEY` is a default (also one named
                // `hasUnappliedChanges`), `hasUnappliedChanges` the controller's flag; a bare key is a default too.
                // A path no default can begin (empty, `$x`) is refused as `PUT /defaults/{key}` refuses the name.
                if keyPath == "hasUnappliedChanges" { return .boolean(snapshot.hasUnappliedChanges) }
                let path = keyPath.hasPrefix("values.") ? keyPath.dropFirst(7) : keyPath[...]
                try UserDefaultsController.checkName(String(path))
                return value(at: path, in: snapshot)
            }
        }
        observations.setExternalReader { target in
            guard target.hasPrefix("controllers/") else { return state(of: defaults.snapshot) }
            let name = String(target.dropFirst("controllers/".count))
            return .init(generation: nil) { try controllers.value(forKeyPath: $0, controller: name) }
        }
        // A poll of an observer or of notifications first lets the controllers apply the commits so far and report
        // what they changed and posted.
        observations.setExternalReportsFlusher { [weak controllers] in
            controllers?.synchronize()
            controllers?.waitUntilDelivered()
        }
        // The controllers that exist now are the responders by name (weakly: the document may outlive this service).
        document.responders.setResolver { [weak controllers] name in
            guard let controllers, controllers.contains(name) else { return nil }
            return ControllerResponder(name: name, controllers: controllers)
        }
        _ = controllers.addObserver { change in
            observations.externalTargetDidChange("controllers/\(change.controller)")
        }
        defaults.addObserver { change in
            observations.externalTargetDidChange("defaults", state: state(of: change.snapshot))
        }
        let post: @Sendable (String, String?, PropertyListValue) -> Void = { name, object, userInfo in
            observations.postNow(name: name, object: object.map { .string($0) } ?? .null, userInfo: userInfo)
        }
        controllers.onNotification = post
        defaults.onNotification = post
        document.setEditors(
            commit: { try controllers.commitEditingOfAll() }, discard: { controllers.discardEditingOfAll() },
            hasPendingEdits: { controllers.hasPendingEdits })
        document.setNotificationHandler { notification in
            observations.postNow(name: notification.name, object: notification.object, userInfo: notification.userInfo)
        }
    }

    /// Every route's method and pattern (the OpenAPI document is checked against it).
    public var routePatterns: [(method: String, pattern: String)] {
        router.patterns
    }

    /// The methods some route takes; any other is 501 (RFC 9110 §9.1), not 405, wherever it is sent.
    static let implementedMethods: Set = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    public func respond(to request: consuming HTTPRequest) -> HTTPHandlerResult {
        guard Self.implementedMethods.contains(request.method) else {
            return .response(
                .error(
                    APIError(
                        status: 501, code: "not-implemented",
                        message: "The method \(request.method) is not implemented (methods are case-sensitive).")))
        }
        guard let segments = request.pathSegments else {
            return .response(
                .error(.badRequest("bad-path", "The path is not valid percent-encoded UTF-8, or holds a NUL byte.")))
        }
        guard request.queryDecodes else {
            return .response(.error(.badQuery("The query is not valid percent-encoded UTF-8.")))
        }
        // Bodies are read as sent: a compressed one would be read as JSON and fail confusingly (or, by chance, not).
        // A request without a body has nothing encoded.
        if !request.body.isEmpty, let coding = request.header("Content-Encoding"),
            coding.split(separator: ",").contains(where: {
                $0.trimmingCharacters(in: .whitespaces).lowercased() != "identity"
            })
        {
            return .response(
                .error(
                    APIError(
                        status: 415, code: "unsupported-media-type",
                        message: "Content-Encoding \(coding) is not taken: send the body as it is.",
                        headers: [("Accept-Encoding", "identity")])))
        }
        if request.method == "OPTIONS" {
            return .response(preflight(request, segments: segments))
        }
        if let refusal = crossOriginWriteRefusal(request) { return .response(.error(refusal)) }
        if waitsInTurn(request, segments: segments) {
            // A repeat of a request already answered does no work: answered at once, never kept waiting or refused.
            if let key = Self.idempotencyKey(of: request),
                let answer = idempotentRequests.keptAnswer(key: key, fingerprint: .init(request))
            {
                return .response(answer)
            }
            let request = request
            var whileWaiting: (begins: @Sendable () -> Void, ends: @Sendable () -> Void)?
            if segments.count == 3, segments[0] == "observers" {
                // A poll waiting for its turn keeps its observer in use (`--observer-ttl`), as one waiting for changes.
                let id = segments[1]
                whileWaiting = (
                    { [observations] in observations.pollWillWait(observer: id) },
                    { [observations] in observations.pollStoppedWaiting(observer: id) }
                )
            }
            return Self.answeredInTurn(on: controllerRequests, whileWaiting: whileWaiting) {
                self.carryOut(request, segments: segments)
            }
        }
        return carryOut(request, segments: segments)
    }

    /// Whether a request is carried out in turn on `controllerRequests` (`answeredInTurn`): one that takes the
    /// controllers' lock (a request on `/controllers` or `/actions`, a poll of notifications or of an observer of a
    /// controller or the defaults, which first lets the controllers apply the commits so far, a new observer, which
    /// may read a controller), once the store or a controller holds more than `slowListingSize` objects (a request
    /// may fill a controller with any of them: a master's new selection its detail), and every creation of a
    /// controller.
    private func waitsInTurn(_ request: borrowing HTTPRequest, segments: [String]) -> Bool {
        let reads = request.method == "GET" || request.method == "HEAD"
        switch segments.first {
        case "controllers" where segments.count == 1 && request.method == "POST": return true
        case "controllers", "actions": break
        case "notifications" where reads && !controllers.isEmpty: break
        case "observers" where request.method == "POST" && !controllers.isEmpty: break
        case "observers" where reads && segments.count == 3 && observations.observesExternalTarget(segments[1]): break
        default: return false
        }
        return document.store.objectCount > Self.slowListingSize
            || controllers.largestControllerSize > Self.slowListingSize
    }

    private func carryOut(_ request: consuming HTTPRequest, segments: [String]) -> HTTPHandlerResult {
        // Under a controller that does not exist there is nothing, whatever the method or the body (a malformed body,
        // a method its paths do not take, would otherwise be answered first).
        if segments.count >= 2, segments[0] == "controllers", !controllers.contains(segments[1]) {
            return .response(.error(APIError(ObjectGraphError.noSuchController(segments[1]))))
        }
        if let key = Self.idempotencyKey(of: request) {
            return respondOnce(to: request, segments: segments, key: key)
        }
        return route(request, segments: segments)
    }

    /// The `Idempotency-Key` of a request that may change something (not a `GET` or `HEAD`), unquoted: the draft's
    /// sf-string is quoted; a bare token is taken too.
    private static func idempotencyKey(of request: borrowing HTTPRequest) -> String? {
        guard request.method != "GET", request.method != "HEAD", let key = request.header("Idempotency-Key") else {
            return nil
        }
        return key.count >= 2 && key.hasPrefix("\"") && key.hasSuffix("\"") ? String(key.dropFirst().dropLast()) : key
    }

    /// `respond(to:)` for a request with an `Idempotency-Key` (`IdempotentRequests`): carried out only the first time.
    private func respondOnce(to request: consuming HTTPRequest, segments: [String], key: String) -> HTTPHandlerResult {
        guard IdempotentRequests.isValid(key) else {
            return .response(
                .error(
                    .badRequest(
                        "bad-idempotency-key",
                        "An Idempotency-Key is 1 to \(IdempotentRequests.maxKeyLength) visible ASCII characters.")))
        }
        let requests = idempotentRequests
        switch requests.start(key: key, fingerprint: .init(request)) {
        case .mismatch:
            return .response(
                .error(
                    APIError(
                        status: 422, code: "idempotency-key-reused",
                        message: "The Idempotency-Key \(key) was sent with another request (method, path or body); "
                            + "use a new key for a new request.")))
        case .replay(let answer):
            return .response(answer)
        case .wait:
            return .suspend(
                HTTPSuspension(shutdownResponse: Self.stoppingBeforeAnswer) { connection in
                    requests.waitForAnswer(key: key, connection: connection)
                })
        case .first:
            switch route(request, segments: segments) {
            case .response(let answer):
                requests.finish(key: key, answer: answer)
                return .response(answer)
            case .suspend(let suspension):
                return .suspend(
                    HTTPSuspension(shutdownResponse: suspension.shutdownResponse) { connection in
                        connection.onResume { requests.finish(key: key, answer: $0) }
                        suspension.register(connection)
                    })
            }
        }
    }

    /// The answer to a repeated request still waiting for the first one's answer when the server stops.
    private static let stoppingBeforeAnswer = HTTPResponse.error(
        APIError(
            status: 503, code: "document-closed",
            message: "The server stopped before the first request with this Idempotency-Key was answered."))

    private func route(_ request: consuming HTTPRequest, segments: [String]) -> HTTPHandlerResult {
        switch router.route(request.method, segments: segments) {
        case .found(let handler, let bindings):
            do {
                return try handler(RouteRequest(request: request, segments: segments, bindings: bindings))
            } catch let error as APIError where error.showsSeq != nil {
                return Self.answer(.error(error), whenDurable: error.showsSeq ?? 0, document: document)
            } catch {
                return .response(Self.errorResponse(error))
            }
        case .methodNotAllowed(let allowed):
            if let missing = Self.missingControllerKey(request.method, segments: segments, controllers) {
                return .response(Self.errorResponse(missing))
            }
            return .response(.error(.methodNotAllowed(request.method, allowed: allowed)))
        case .notFound:
            if request.method == "GET" || request.method == "HEAD" {
                do {
                    if let file = try staticFiles?.response(
                        for: segments, path: request.rawPath, query: request.rawQuery,
                        ifNoneMatch: request.header("If-None-Match"))
                    {
                        return .response(file)
                    }
                } catch {
                    return .response(
                        .error(.serverBusy("\(request.rawPath) cannot be read now (\(error.reason)); try again.")))
                }
            } else if staticFiles?.hasFile(at: segments) == true {
                return .response(.error(.methodNotAllowed(request.method, allowed: ["GET", "HEAD"])))
            }
            return .response(.error(.notFound("There is nothing at \(request.rawPath).")))
        }
    }

    public func respondToOversizedBody(_ request: HTTPRequest, limit: Int) -> HTTPResponse {
        .error(.bodyTooLarge(limit: limit))
    }

    public func respondToMalformedRequest(_ request: HTTPRequest, status: Int, reason: String) -> HTTPResponse {
        let code =
            switch status {
            case 501: "not-implemented"
            case 431: "header-too-large"
            default: "bad-request"
            }
        return .error(APIError(status: status, code: code, message: reason))
    }

    /// The §2 error answer for what a handler threw.
    static func errorResponse(_ error: any Error) -> HTTPResponse {
        switch error {
        case let error as APIError: .error(error)
        case let error as ObjectGraphError: .error(APIError(error))
        default: .error(.internalError("\(error)"))
        }
    }

    /// Makes `answer` on `slowAnswers`, the service's queue for answers that take long to make (exports, long
    /// listings), one at a time: on a request thread many of them would keep every other request (`/healthz`, a
    /// write) waiting for a thread; there they leave the request threads free and take one core at most. A client that has closed its connection by the answer's turn (one that gave
    /// up waiting, or a burst of clients that never read) is not worked for: it is answered `499 client-gone`
    /// without the work, which it does not read. 499 is nginx's "client closed request": the outcome was the
    /// client's, so `/metrics` counts it with the 4xx, not as a server error that would set off a 5xx alert. One
    /// still waiting when the server stops is answered `503 shutting-down` with `Retry-After` rather than made its
    /// answer: a few dozen exports queued one after another would hold the stop far past a supervisor's patience
    /// (Docker's 10 s).
    static func answeredOffRequestThreads(
        on slowAnswers: RequestLine, _ answer: @escaping @Sendable () -> HTTPResponse
    ) -> HTTPHandlerResult {
        if let refusal = slowAnswers.refusal() { return .response(refusal) }
        let arrived = DispatchTime.now()
        return .suspend(
            HTTPSuspension(shutdownResponse: shuttingDown) { connection in
                slowAnswers.enqueue(arrived: arrived) {
                    _ = connection.resume(with: connection.peerHasClosed ? clientGone : answer())
                }
            })
    }

    /// The answer to a client that closed its connection before its request's turn came (see
    /// `answeredOffRequestThreads`).
    static let clientGone = HTTPResponse.error(
        APIError(
            status: 499, code: "client-gone", message: "The connection was closed before its answer was made."))

    static let shuttingDown = HTTPResponse.error(
        APIError(
            status: 503, code: "shutting-down",
            message: "The server is stopping; this answer was not made. Retry once it is back.",
            headers: [("Retry-After", "1")]))

    public func respondToUnsentLimit(limit: Int, held: Int) -> HTTPResponse {
        .error(
            .serverBusy(
                "The server holds \(held) bytes of answers that clients have not read yet, and this answer would take "
                    + "it past its limit of \(limit); retry shortly."))
    }

    public func respondToReceivingLimit(_ request: HTTPRequest, limit: Int) -> HTTPResponse {
        .error(
            .serverBusy(
                "The server is receiving other request bodies, and this one would take them past the limit of "
                    + "\(limit) bytes (--max-receiving); nothing was changed, retry shortly."))
    }

    /// Counts the response and adds the headers every response carries: `X-Store-Seq` (a handler that knows the
    /// seq its answer reflects sets it itself, else the store's current seq is used, no further than is durable:
    /// `Document.acknowledgedSeq`) and
    /// `Access-Control-Allow-Origin`; a cross-origin request (one with `Origin`) also gets
    /// `Access-Control-Expose-Headers`, which only such requests read.
    public func addCommonHeaders(
        to response: HTTPResponse, requestHeader: (String) -> String?, _ add: (_ name: String, _ value: String) -> Void
    ) {
        counters.count(status: response.status)
        // Handlers spell the header exactly so; a case-blind search would lower-case every name of every response.
        if !response.headers.contains(where: { $0.name == "X-Store-Seq" }) {
            add("X-Store-Seq", String(document.acknowledgedSeq(document.store.seq)))
        }
        add("Access-Control-Allow-Origin", configuration.corsOrigin)
        if requestHeader("Origin") != nil {
            add(
                "Access-Control-Expose-Headers",
                "ETag, Location, X-Store-Seq, X-Total-Count, Retry-After, Idempotent-Replayed")
        }
    }

    /// With `--cors` naming an origin, a write sent from a page of another origin is refused (403): a browser sends a
    /// form's POST (read as JSON, as `curl -d` sends it) to any site without a preflight, so the header alone would
    /// only keep that page from reading the answer (cross-site request forgery). A request without `Origin` (curl, a
    /// server) and a page of the server's own origin (its `Host`, as the demo page) write as before.
    private func crossOriginWriteRefusal(_ request: borrowing HTTPRequest) -> APIError? {
        guard configuration.corsOrigin != "*", request.method != "GET", request.method != "HEAD",
            let origin = request.header("Origin"), origin != configuration.corsOrigin
        else { return nil }
        if let page = Self.normalizedOrigin(origin) {
            if page == Self.normalizedOrigin(configuration.corsOrigin) { return nil }
            let scheme = page.prefix { $0 != ":" }
            if let host = request.header("Host"), page == Self.normalizedOrigin("\(scheme)://\(host)") { return nil }
        }
        return APIError(
            status: 403, code: "forbidden-origin",
            message: "A page of \(origin) may not write here: --cors allows \(configuration.corsOrigin).",
            fields: ["origin": .string(origin)])
    }

    /// `scheme://host[:port]` in lower case, without the scheme's default port (browsers leave it out of `Origin`, a
    /// proxy may write it in `Host`); nil for an origin without a scheme (`null`).
    static func normalizedOrigin(_ origin: String) -> String? {
        guard let separator = origin.firstRange(of: "://") else { return nil }
        let scheme = origin[..<separator.lowerBound].lowercased()
        var authority = origin[separator.upperBound...].lowercased()
        let defaultPort = ["http": ":80", "https": ":443"][scheme]
        if let defaultPort, authority.hasSuffix(defaultPort) { authority.removeLast(defaultPort.count) }
        return scheme + "://" + authority
    }

    private func preflight(_ request: HTTPRequest, segments: [String]) -> HTTPResponse {
        // Every method of the path, whatever the preflight asks about (RFC 9110's Allow; a browser checks the
        // asked method against the list); a static file, or nothing, answers GET and HEAD.
        var allowed = router.methods(for: segments)
        if allowed.isEmpty { allowed = ["GET", "HEAD"] }
        allowed.append("OPTIONS")
        return HTTPResponse(
            status: 204,
            headers: [
                ("Allow", allowed.joined(separator: ", ")),
                ("Access-Control-Allow-Methods", allowed.joined(separator: ", ")),
                (
                    "Access-Control-Allow-Headers",
                    "Content-Type, If-Match, If-None-Match, X-First-Responder, Last-Event-ID, Accept, "
                        + "Idempotency-Key"
                ),
                ("Access-Control-Max-Age", "600"),
            ])
    }
}
