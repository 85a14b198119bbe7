import Foundation
import ObjectGraph
import PropertyList
import Synchronization

/// The document: the model, its object store, and what runs around every commit (API.md §0, §9).
///
/// Every mutating request goes through `transaction(_:)`, the one place where later layers hook in: the journal
/// (durability before the answer), undo groups, and the commit observers that feed KVO and the change feeds.
/// Until persistence lands, the store lives in memory and is seeded from the fixture's `data.json` at every start.
public final class Document: Sendable {
    public let store: ObjectStore
    public let fixtureDirectory: String
    private let commitHooks: CommitHooks

    /// Loads `model.json` (required) and seeds the store from `data.json` (optional).
    ///
    /// Errors name the file: a bad model names file, entity and key; a bad `data.json` names the file and the
    /// object or key at fault.
    public init(fixtureDirectory: String) throws(ObjectGraphError) {
        self.fixtureDirectory = fixtureDirectory
        let model = try ObjectModel.check(file: fixtureDirectory + "/model.json")
        let hooks = CommitHooks()
        commitHooks = hooks
        store = ObjectStore(
            model: model,
            hooks: ObjectStoreHooks(
                willCommit: { record in try hooks.willCommit(record) },
                didCommit: { record in hooks.didCommit(record) }))
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

    /// Runs one mutating request (or commit) as one transaction: all or nothing.
    @discardableResult
    public func transaction<T: Sendable>(_ body: (Transaction) throws -> T) throws -> TransactionResult<T> {
        try store.transaction(body)
    }

    /// Adds code run after every commit, outside the store's lock, once per record, in seq order, never
    /// concurrently with itself (see `ObjectStoreHooks.didCommit`).
    public func addCommitObserver(_ observer: @escaping @Sendable (ChangeRecord) -> Void) {
        commitHooks.observers.withLock { $0.append(observer) }
    }
}

/// The store's hooks, fanned out to what the document registers after the store exists.
private final class CommitHooks: Sendable {
    let observers = Mutex<[@Sendable (ChangeRecord) -> Void]>([])
    let journal = Mutex<(@Sendable (ChangeRecord) throws -> Void)?>(nil)

    func willCommit(_ record: ChangeRecord) throws {
        try journal.withLock { $0 }?(record)
    }

    func didCommit(_ record: ChangeRecord) {
        for observer in observers.withLock({ $0 }) { observer(record) }
    }
}
