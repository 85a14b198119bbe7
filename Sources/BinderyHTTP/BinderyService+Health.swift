import HTTPServer
import PropertyList

extension BinderyService {
    /// `{"status":"ok"}`, encoded once: the body never changes and health checks poll it often.
    private static let healthBody = PropertyListValue.dictionary(["status": "ok"]).jsonBytes()

    static func addHealthRoutes(to router: inout Router) {
        router.add("GET", "/healthz") { _ in
            .response(
                HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(healthBody)))
        }
    }
}
