import HTTPServer
import ObjectGraph

extension BinderyService {
    /// `GET /model` and `GET /model/{Entity}` (API.md §3).
    static func addModelRoutes(to router: inout Router, store: ObjectStore) {
        router.add("GET", "/model") { _ in
            .response(.json(store.model.json))
        }
        router.add("GET", "/model/:entity") { request in
            let name = request.parameter("entity")
            guard let entity = store.model.entity(named: name) else { throw ObjectGraphError.noSuchEntity(name) }
            return .response(.json(entity.json))
        }
    }
}
