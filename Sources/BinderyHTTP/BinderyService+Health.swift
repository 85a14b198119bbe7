import HTTPServer

extension BinderyService {
    static func addHealthRoutes(to router: inout Router) {
        router.add("GET", "/healthz") { _ in
            .response(.json(["status": "ok"]))
        }
    }
}
