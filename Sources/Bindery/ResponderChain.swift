import ObjectGraph
import PropertyList

/// The document as a responder: `save`, `revertToSaved`, `undo`, `redo` (NSDocument's actions). As NSDocument's
/// `saveDocument:` and `revertDocumentToSaved:` do, `save` first commits the editors' pending edits (so that what is
/// saved is what the user sees) and `revertToSaved` discards them (so that none is applied over the saved state).
struct DocumentResponder: Responder {
    let document: Document

    var name: String { "document" }
    var actions: [String] { ["undo", "redo", "save", "revertToSaved"] }

    func validate(action: String) -> Bool? {
        switch action {
        case "undo": document.undoManager.canUndo
        case "redo": document.undoManager.canRedo
        case "save": true
        case "revertToSaved":
            document.hasChangesSinceSave || document.editors.withLock({ $0 })?.hasPendingEdits() == true
        default: nil
        }
    }

    func perform(action: String, sender: PropertyListValue) throws -> PropertyListValue {
        let seq: Int64
        switch action {
        case "undo": seq = try document.undo()
        case "redo": seq = try document.redo()
        case "save":
            try document.editors.withLock { $0 }?.commit()
            seq = try document.save()
        case "revertToSaved":
            document.editors.withLock { $0 }?.discard()
            seq = try document.revertToSaved()
        default: throw ObjectGraphError.noResponder(action)
        }
        return ["action": .string(action), "responder": .string(name), "seq": .integer(seq)]
    }
}

/// The application, last in the chain: it handles no action yet.
struct ApplicationResponder: Responder {
    var name: String { "application" }
    var actions: [String] { [] }
    func validate(action: String) -> Bool? { nil }
    func perform(action: String, sender: PropertyListValue) throws -> PropertyListValue {
        throw ObjectGraphError.noResponder(action)
    }
}

/// Sending actions along the responder chain (API.md §9).
extension Document {
    /// The responders an action travels, in order.
    ///
    /// With a `target` (`"document"`, `"application"`, `"controllers/NAME"`, or a controller's bare `NAME` as
    /// `X-First-Responder` takes it), only that responder; else the controller named by `firstResponder` (404
    /// `no-such-controller` when unknown), the document, the application.
    public func responderChain(target: String?, firstResponder: String?) throws(ObjectGraphError) -> [any Responder] {
        if let target {
            switch target {
            case "document": return [DocumentResponder(document: self)]
            case "application": return [ApplicationResponder()]
            default: return [try controller(named: target)]
            }
        }
        var chain: [any Responder] = []
        if let firstResponder, !firstResponder.isEmpty { chain.append(try controller(named: firstResponder)) }
        chain.append(DocumentResponder(document: self))
        chain.append(ApplicationResponder())
        return chain
    }

    /// The controller named `controllers/NAME` or a bare `NAME` (404 `no-such-controller`, also for an empty NAME).
    private func controller(named reference: String) throws(ObjectGraphError) -> any Responder {
        let name = reference.hasPrefix("controllers/") ? String(reference.dropFirst("controllers/".count)) : reference
        guard let controller = responders.responder(named: name) else { throw .noSuchController(name) }
        return controller
    }

    /// Sends `action` to the first responder in the chain that handles it (NSApplication's `sendAction`); returns
    /// what it answered. 404 `no-responder` when none does, 409 `action-disabled` when the one that does has it
    /// disabled.
    public func sendAction(
        _ action: String, target: String?, firstResponder: String?, sender: PropertyListValue = .null
    ) throws -> PropertyListValue {
        for responder in try responderChain(target: target, firstResponder: firstResponder) {
            guard let enabled = responder.validate(action: action) else { continue }
            guard enabled else { throw ObjectGraphError.actionDisabled(action, responder: responder.name) }
            return try responder.perform(action: action, sender: sender)
        }
        throw ObjectGraphError.noResponder(action)
    }

    /// The actions the chain would handle now, each validated; an action handled by several responders is listed
    /// once, for the first.
    public func validActions(target: String?, firstResponder: String?) throws(ObjectGraphError) -> [ActionValidation] {
        var listed: Set<String> = []
        var validations: [ActionValidation] = []
        for responder in try responderChain(target: target, firstResponder: firstResponder) {
            for action in responder.actions where !listed.contains(action) {
                guard let enabled = responder.validate(action: action) else { continue }
                listed.insert(action)
                validations.append(ActionValidation(action: action, responder: responder.name, enabled: enabled))
            }
        }
        return validations
    }
}
