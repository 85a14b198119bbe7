import ObjectGraph
import PropertyList
import Synchronization

/// Something in the responder chain (NSResponder): it handles actions sent by `POST /actions/{action}` (API.md §9).
///
/// The chain is the controller named by `X-First-Responder` (if any) → the document → the application. A responder
/// answers `validate` with nil for an action it does not handle (the action travels on), else whether it is
/// enabled now (NSUserInterfaceValidations). `perform` runs only after `validate` answered true; what it returns is
/// the response body. Controllers are found through `Document.responders`.
public protocol Responder: Sendable {
    /// The name used in `X-First-Responder` and in targets (`controllers/NAME`); the document is `document`.
    var name: String { get }
    /// The actions this responder handles, for `GET /actions`, in the order to list them.
    var actions: [String] { get }
    /// nil: not handled here; true: handled and enabled; false: handled but disabled.
    func validate(action: String) -> Bool?
    /// Performs an enabled action; `sender` is the request's `sender` (null when absent).
    func perform(action: String, sender: PropertyListValue) throws -> PropertyListValue
}

/// The responders a document knows by name (controllers), for `X-First-Responder` and explicit targets.
///
/// Found by asking the owner of the named responders at each lookup (`setResolver`), not kept in a map of their
/// own: a map updated beside the controllers' own, outside their lock, could disagree with them after a create and
/// a delete of one name at once (a controller there but 404 as a responder, or a responder for one gone).
public final class ResponderRegistry: Sendable {
    private let resolver = Mutex<(@Sendable (String) -> (any Responder)?)?>(nil)

    public init() {}

    /// Sets how a name is looked up (nil: no responder of that name).
    public func setResolver(_ resolver: @escaping @Sendable (String) -> (any Responder)?) {
        self.resolver.withLock { $0 = resolver }
    }

    public func responder(named name: String) -> (any Responder)? {
        resolver.withLock { $0 }?(name)
    }
}

/// One action a responder chain would handle now (`GET /actions`).
public struct ActionValidation: Sendable, Hashable {
    public var action: String
    public var responder: String
    public var enabled: Bool

    public var json: PropertyListValue {
        ["action": .string(action), "responder": .string(responder), "enabled": .boolean(enabled)]
    }
}

/// Errors of the responder chain (API.md §2, §9).
extension ObjectGraphError {
    static func noResponder(_ action: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 404, code: "no-responder", message: "No responder handles the action \"\(action)\".",
            fields: ["action": .string(action)])
    }

    static func actionDisabled(_ action: String, responder: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 409, code: "action-disabled",
            message: "The action \"\(action)\" is disabled in \(responder) now.",
            fields: ["action": .string(action), "responder": .string(responder)])
    }
}
