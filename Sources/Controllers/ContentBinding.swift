import ObjectGraph
import PropertyList

/// What a controller's `content` is bound to (API.md §5), parsed from its binding string.
///
/// - `Employee`: every object of an entity (entity mode);
/// - `Employee/42`: one object; `Department/1.employees`: a key path from one object;
/// - `@departments.selection.employees`: a key path from another controller's selection (`@employees.selection`
///   alone is the selection itself); master–detail chains of any depth.
public enum ContentBinding: Sendable, Hashable, CustomStringConvertible {
    case entity(String)
    /// An object, or a key path from it when `keyPath` is not nil.
    case object(ObjectID, keyPath: String?)
    /// A controller's selection, or a key path from it when `keyPath` is not nil.
    case selection(controller: String, keyPath: String?)

    /// Parses a binding string; 400 `bad-binding` naming what is wrong.
    public init(_ text: String) throws(ObjectGraphError) {
        func bad(_ reason: String) -> ObjectGraphError {
            ObjectGraphError(
                status: 400, code: "bad-binding", message: "Content binding \"\(text)\": \(reason)",
                fields: ["content": .string(text)])
        }
        func keyPath(_ rest: Substring) throws(ObjectGraphError) -> String? {
            if rest.isEmpty { return nil }
            guard rest.split(separator: ".", omittingEmptySubsequences: false).allSatisfy(Self.isKey) else {
                throw bad("\"\(rest)\" is not a key path.")
            }
            return String(rest)
        }
        if text.hasPrefix("@") {
            let parts = text.dropFirst().split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, !parts[0].isEmpty, parts[1] == "selection" else {
                throw bad("a controller binding is \"@name.selection\" or \"@name.selection.keyPath\".")
            }
            self = .selection(controller: String(parts[0]), keyPath: try keyPath(parts.count > 2 ? parts[2] : ""))
            return
        }
        if let slash = text.firstIndex(of: "/") {
            let afterSlash = text[text.index(after: slash)...]
            let dot = afterSlash.firstIndex(of: ".")
            let reference = dot.map { String(text[..<$0]) } ?? text
            guard let object = ObjectID(reference: reference) else {
                throw bad("\"\(reference)\" is not an object reference Entity/id.")
            }
            self = .object(object, keyPath: try keyPath(dot.map { afterSlash[afterSlash.index(after: $0)...] } ?? ""))
            return
        }
        guard Self.isKey(Substring(text)) else {
            throw bad("expected an entity, Entity/id[.keyPath] or @controller.selection.")
        }
        self = .entity(text)
    }

    /// The binding string.
    public var description: String {
        switch self {
        case .entity(let entity): entity
        case .object(let object, let keyPath): object.description + (keyPath.map { "." + $0 } ?? "")
        case .selection(let controller, let keyPath): "@\(controller).selection" + (keyPath.map { "." + $0 } ?? "")
        }
    }

    /// The controller this binding follows, if any.
    public var master: String? {
        if case .selection(let controller, _) = self { return controller }
        return nil
    }

    private static func isKey(_ key: Substring) -> Bool {
        !key.isEmpty && key.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "@" }
    }
}
