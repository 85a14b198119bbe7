import Bindery
import Controllers
import Foundation
import ObjectGraph
import PropertyList

/// Making the controllers and the user defaults of a document: the fixture's `controllers.json` and `defaults.json`,
/// the commit capture, and the saved defaults in the document's data directory (`defaults.json` there).
extension BinderyService {
    /// The registry over the document's store, following its commits, with the fixture's controllers.
    static func makeControllers(document: Document, limit: Int) -> (ControllerRegistry, ObjectGraphError?) {
        // The document holds the registry (through its commit capture), so the registry holds it weakly.
        let controllers = ControllerRegistry(store: document.store, runtimeControllerLimit: limit) {
            [weak document] body in
            guard let document else {
                throw ObjectGraphError(status: 503, code: "document-closed", message: "The document is closed.")
            }
            return try document.transaction(body).record
        }
        // Queued under the store's lock, right after each commit: a session, which reads the store under that lock,
        // then always finds every record its view holds (a commit observer is told later, outside the lock, and a
        // session in between would read objects the controllers do not know are gone).
        document.addCommitCapture { record, _ in controllers.storeDidCommit(record) }
        document.addRollBackObserver { controllers.storeWasRestored() }
        let path = document.fixtureDirectory + "/controllers.json"
        // A missing file declares no controllers; one that cannot be read stops the server (the error names it).
        let contents: [UInt8]?
        do { contents = try FileIO.readIfPresent(path) } catch { return (controllers, error) }
        guard let bytes = contents else { return (controllers, nil) }
        do {
            try controllers.loadDeclarations(json: try PropertyListValue(jsonBytes: bytes))
            return (controllers, nil)
        } catch {
            return (controllers, fixtureError(path, error))
        }
    }

    /// The user defaults controller: initial values from the fixture's `defaults.json`, saved values in
    /// `<data directory>/defaults.json`.
    static func makeDefaults(document: Document) -> (UserDefaultsController, ObjectGraphError?) {
        let fixturePath = document.fixtureDirectory + "/defaults.json"
        let savedPath = document.dataDirectory + "/defaults.json"
        var configuration = UserDefaultsController.Configuration()
        var failure: ObjectGraphError?
        var contents: [UInt8]?
        do { contents = try FileIO.readIfPresent(fixturePath) } catch { failure = error }
        if let bytes = contents {
            do {
                configuration = try UserDefaultsController.Configuration(json: try PropertyListValue(jsonBytes: bytes))
            } catch {
                failure = fixtureError(fixturePath, error)
            }
        }
        do {
            return (
                try UserDefaultsController(
                    configuration: configuration, path: savedPath,
                    checkBeforeWriting: { [weak document] () throws(ObjectGraphError) in
                        try document?.checkDataDirectoryInPlace()
                    }),
                failure
            )
        } catch {
            return (UserDefaultsController(configuration: configuration), failure ?? error)
        }
    }

    private static func fixtureError(_ path: String, _ error: any Error) -> ObjectGraphError {
        switch error {
        case let error as ObjectGraphError:
            var failure = error
            failure.message = "\(path): \(error.message)"
            return failure
        case let error as JSONDecodingError:
            return ObjectGraphError(status: 400, code: "malformed-json", message: "\(path): \(error.description)")
        default:
            return ObjectGraphError(status: 500, code: "internal-error", message: "\(path): \(error)")
        }
    }
}

/// A controller in the responder chain (`POST /actions/{action}` with `X-First-Responder: NAME` or the target
/// `controllers/NAME`): its target-action methods, validated as `POST /controllers/{name}/{action}` does them.
struct ControllerResponder: Responder {
    let name: String
    let controllers: ControllerRegistry

    var actions: [String] {
        ControllerRegistry.actions.filter { controllers.validate($0, controller: name) != nil }
    }

    func validate(action: String) -> Bool? {
        controllers.validate(action, controller: name)
    }

    /// `sender` is passed as the action's body (`{"object": {...}}` for `add`).
    func perform(action: String, sender: PropertyListValue) throws -> PropertyListValue {
        try controllers.perform(action, controller: name, body: sender.isNull ? nil : sender)
    }
}
