import ObjectGraph
import PropertyList

/// Key-value coding on a controller: what `/observers` on `controllers/NAME` and the routes read.
extension Controller {
    /// The arranged objects, flat (a tree's nodes in depth-first order).
    var arrangedIDs: [ObjectID] {
        if let array = self as? ArrayController { return array.arranged }
        if let tree = self as? TreeController { return tree.flattened }
        return content
    }

    /// `value(forKeyPath:)` on the controller (see `ControllerRegistry.value(forKeyPath:controller:)`).
    func value(forKeyPath keyPath: String, in context: ControllerContext) throws -> PropertyListValue {
        let dot = keyPath.firstIndex(of: ".")
        let key = dot.map { String(keyPath[..<$0]) } ?? keyPath
        let rest = dot.map { String(keyPath[keyPath.index(after: $0)...]) }
        let view = context.view
        func kvc(_ objects: [ObjectID]) throws -> PropertyListValue {
            // The count is known: looking every object up (300,000 hash lookups) is not needed for it.
            if rest == "@count" { return .integer(Int64(objects.count)) }
            let collection = KeyValue.collection(objects.map(KeyValue.object))
            guard let rest else { return collection.json }
            return try view.value(forKeyPath: rest, of: collection).json
        }
        // Key-value coding goes on into the value, as on an object's value: a dictionary's key (`edits.lastName`),
        // an array's count (`sortDescriptors.@count`); a number or a boolean has no keys (404 `undefined-key`).
        func plain(_ value: PropertyListValue) throws -> PropertyListValue {
            guard let rest else { return value }
            return try view.value(forKeyPath: rest, of: .value(value)).json
        }
        switch key {
        case "arrangedObjects":
            if let tree = self as? TreeController, rest == nil {
                return try tree.arrangedJSON(view: view, objects: false)
            }
            return try kvc(arrangedIDs)
        case "selectedObjects": return try kvc(selectedObjects)
        case "content": return try kvc(content)
        case "selection":
            guard let rest else { return try selectionDictionary(in: view) }
            return try selectionValue(rest, in: view).json
        case "selectionIndex" where !(self is TreeController):
            // NSArrayController's: the first selected index, null for none (Cocoa's NSNotFound).
            return try plain(stateFields(in: context)["selectionIndexes"]?.arrayValue?.first ?? .null)
        case "isEditing": return try plain(.boolean(isEditing))
        case "canAdd": return try plain(.boolean(canAdd))
        case "canInsert": return try plain(.boolean(canInsert))
        case "canRemove": return try plain(.boolean(canRemove))
        case "canSelectNext": return try plain(.boolean(canSelectNext))
        case "canSelectPrevious": return try plain(.boolean(canSelectPrevious))
        case "edits":
            // An edit's key is a whole key path (`manager.lastName`): `edits.manager.lastName` reads that edit, null
            // when there is none (as a dictionary without the key; `GET .../edits/{keyPath}` says 404 then).
            guard let rest else { return editsJSON }
            return editsJSON[rest] ?? .null
        case "sortDescriptors": return try plain(.array(description.sortDescriptors.map(\.json)))
        case "filterPredicate": return try plain(description.filterPredicate.map { .string($0.description) } ?? .null)
        default:
            if let option = options[key] { return try plain(.boolean(option)) }
            if let field = stateFields(in: context)[key] { return try plain(field) }
            throw ObjectGraphError.undefinedKey(key, entity: "Controller \(name)")
        }
    }
}
