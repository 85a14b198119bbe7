import ObjectGraph
import PropertyList

/// What a controller sees while the registry's lock and the store's read lock are held: the store, the other
/// controllers (masters), and the outbox of changes and notifications to deliver once the locks are released.
///
/// Lives only inside one `ControllerRegistry` lock session; not `Sendable`.
final class ControllerContext {
    let view: ReadView
    let controllers: [String: Controller]
    /// The seq of the record being processed; nil for a change the controller made itself.
    var seq: Int64?
    /// The view is the state right after the record being applied: false for all but the last of a batch of records
    /// applied with one view (which is then ahead of them), so that a controller that follows records one by one
    /// can wait for the last.
    var recordIsLatest = true
    /// The registry's clock when the session began: a controller named by a request is used then.
    var now = 0.0
    private(set) var changes: [ControllerChange] = []
    private(set) var notifications: [ControllerNotification] = []
    /// `changes` as a set: a session that applies a batch of records emits a few for each record.
    private var emitted: Set<ControllerChange> = []

    init(view: ReadView, controllers: [String: Controller], seq: Int64?) {
        self.view = view
        self.controllers = controllers
        self.seq = seq
    }

    var model: ObjectModel { view.model }

    /// The controller called `name`, or 404 `no-such-controller`.
    func controller(_ name: String) throws(ObjectGraphError) -> Controller {
        guard let controller = controllers[name] else { throw .noSuchController(name) }
        controller.lastUsed = now
        return controller
    }

    /// Queues a change report, once.
    func emit(_ controller: Controller, _ key: ControllerChange.Key) {
        let change = ControllerChange(controller: controller.name, key: key, seq: seq)
        if emitted.insert(change).inserted { changes.append(change) }
    }

    func post(_ notification: ControllerNotification) {
        notifications.append(notification)
    }
}

/// A notification a controller posts (`ControllerDidCommitEditing`), delivered through `onNotification`.
public struct ControllerNotification: Sendable, Hashable {
    public var name: String
    /// The poster, `controllers/NAME`.
    public var object: String?
    public var userInfo: PropertyListValue

    public init(name: String, object: String?, userInfo: PropertyListValue) {
        self.name = name
        self.object = object
        self.userInfo = userInfo
    }
}

extension ObjectGraphError {
    /// 409 `action-disabled`: the action is not enabled now (nothing selected to remove, no next object, ...).
    static func actionDisabled(_ action: String, of controller: String, _ reason: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 409, code: "action-disabled", message: "\(controller): \(action) is disabled: \(reason)",
            fields: ["action": .string(action), "controller": .string(controller)])
    }

    /// A 422 that lists no `errors` with itself as the one entry of `errors` (`commitEditing` always lists them);
    /// any other error as it is.
    var listingItself: ObjectGraphError {
        guard status == 422, fields["errors"] == nil else { return self }
        var error = self
        error.fields["errors"] = [listEntry]
        return error
    }

    /// 409 `not-editable`: the controller is not editable.
    static func notEditable(_ controller: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 409, code: "not-editable", message: "The controller \"\(controller)\" is not editable.",
            fields: ["controller": .string(controller)])
    }

    /// 422 `validation-failed` listing several errors in `errors`; one error as it is.
    static func gathering(_ errors: [ObjectGraphError]) -> ObjectGraphError {
        if errors.count == 1 { return errors[0] }
        let list = errors.map(\.listEntry)
        var fields: [String: PropertyListValue] = ["errors": .array(list)]
        fields["keyPath"] = errors.first?.fields["keyPath"]
        return ObjectGraphError(
            status: 422, code: "validation-failed",
            message: "\(errors.count) values are invalid: " + errors.prefix(3).map(\.message).joined(separator: " "),
            fields: fields)
    }
}
