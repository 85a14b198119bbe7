import HTTPServer
import PropertyList

extension BinderyService {
    /// `{"status":"ok"}`, encoded once and sent without a copy: the body never changes and health checks poll it
    /// often.
    private static let healthBody = PersistentBytes(PropertyListValue.dictionary(["status": "ok"]).jsonBytes())

    private static let healthHeaders = [(name: "Content-Type", value: "application/json")]

    static func addHealthRoutes(to router: inout Router) {
        router.add("GET", "/healthz") { _ in
            .response(HTTPResponse(status: 200, headers: healthHeaders, body: .persistent(healthBody)))
        }
    }
}
