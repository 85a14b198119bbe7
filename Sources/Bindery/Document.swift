import Foundation
import ObjectGraph
import PropertyList

/// The document: the model and its object store, loaded from a fixture folder (API.md §0).
///
/// Until persistence lands, the store lives in memory and is seeded from the fixture's `data.json` at every start.
public final class Document: Sendable {
    public let store: ObjectStore
    public let fixtureDirectory: String

    /// Loads `model.json` (required) and seeds the store from `data.json` (optional).
    ///
    /// Errors name the file: a bad model names file, entity and key; a bad `data.json` names the file and the
    /// object or key at fault.
    public init(fixtureDirectory: String) throws(ObjectGraphError) {
        self.fixtureDirectory = fixtureDirectory
        let model = try ObjectModel.check(file: fixtureDirectory + "/model.json")
        store = ObjectStore(model: model)
        let dataPath = fixtureDirectory + "/data.json"
        if let data = FileManager.default.contents(atPath: dataPath) {
            do {
                try store.loadFixture(jsonBytes: data)
            } catch let error as ObjectGraphError {
                var failure = error
                failure.message = "\(dataPath): \(error.message)"
                throw failure
            } catch {
                throw ObjectGraphError(status: 500, code: "internal-error", message: "\(dataPath): \(error)")
            }
        }
    }
}
