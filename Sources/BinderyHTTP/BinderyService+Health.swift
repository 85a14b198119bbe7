import Bindery
import HTTPServer
import PropertyList

extension BinderyService {
    /// `{"status":"ok"}`, encoded once and sent without a copy: the body never changes and health checks poll it
    /// often.
    private static let healthBody = PersistentBytes(PropertyListValue.dictionary(["status": "ok"]).jsonBytes())

    private static let healthHeaders = [(name: "Content-Type", value: "application/json")]

    /// `GET /healthz`: 200 `{"status": "ok"}`, or 503 `{"status": "journal-failed", "error": {"code", "message"}}`
    /// (an API.md §2 error with the status beside it) while the journal refuses every change (until restart), so
    /// that a supervisor's health check restarts the service; `storage-error` likewise while journal writes fail
    /// (`--fsync always` and `never`: until one succeeds).
    static func addHealthRoutes(to router: inout Router, document: Document) {
        router.add("GET", "/healthz") { _ in
            if let failure = document.journalFailure ?? document.journalWriteFailure {
                var body = APIError(failure).body.dictionaryValue ?? [:]
                body["status"] = .string(failure.code)
                return .response(.json(.dictionary(body), status: 503))
            }
            return .response(HTTPResponse(status: 200, headers: healthHeaders, body: .persistent(healthBody)))
        }
    }
}
