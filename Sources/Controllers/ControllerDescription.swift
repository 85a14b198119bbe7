import ObjectGraph
import PropertyList

/// A controller's declaration: a `POST /controllers` body or an entry of `controllers.json` (API.md §5).
public struct ControllerDescription: Sendable, Hashable {
    /// The three kinds of mediating controller.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case object, array, tree
    }

    public var name: String
    public var kind: Kind
    public var content: ContentBinding
    public var sortDescriptors: [SortDescriptor] = []
    public var filterPredicate: ObjectGraph.Predicate?
    public var options = ControllerOptions()
    /// Tree controllers: the to-many key path of a node's children (required for `tree`).
    public var childrenKeyPath: String?
    /// Tree controllers: a boolean key path telling that a node is a leaf (has no children).
    public var leafKeyPath: String?
    /// Tree controllers: a key path giving a node's number of children.
    public var countKeyPath: String?
    /// Seconds after which a controller created at run time that no request has named is removed (nil: never).
    public var idleTimeout: Double?

    public init(name: String, kind: Kind, content: ContentBinding) {
        self.name = name
        self.kind = kind
        self.content = content
    }

    /// Reads a declaration; Cocoa's defaults for omitted options.
    ///
    /// Errors: 400 `bad-controller` for a missing or malformed field or an unknown one (naming it in `field`),
    /// 400 `bad-binding`, `bad-predicate`, `bad-query` (sort descriptors) from the parsers.
    public init(json: PropertyListValue) throws {
        guard case .dictionary(let fields) = json else {
            throw Self.bad("A controller is a JSON object {\"name\", \"kind\", \"content\", ...}.", field: nil)
        }
        let known =
            ["name", "kind", "content", "sortDescriptors", "filterPredicate", "childrenKeyPath", "leafKeyPath"]
            + ["countKeyPath", "idleTimeout"] + ControllerOptions.names
        for key in fields.keys where !known.contains(key) {
            throw Self.bad("Unknown controller field \"\(key)\".", field: key)
        }
        guard case .string(let name)? = fields["name"], Self.isValidName(name) else {
            throw Self.bad("A controller needs a \"name\" of letters, digits, _ and - (at most 64).", field: "name")
        }
        guard case .string(let kindName)? = fields["kind"], let kind = Kind(rawValue: kindName) else {
            throw Self.bad("\"kind\" is \"object\", \"array\" or \"tree\".", field: "kind")
        }
        guard case .string(let content)? = fields["content"] else {
            throw Self.bad("A controller needs a \"content\" binding string.", field: "content")
        }
        self.init(name: name, kind: kind, content: try ContentBinding(content))
        sortDescriptors = try SortDescriptor.descriptors(json: fields["sortDescriptors"] ?? .null)
        switch fields["filterPredicate"] ?? .null {
        case .null: break
        case .string(let format): filterPredicate = try ObjectGraph.Predicate(format: format)
        default: throw Self.bad("\"filterPredicate\" is a predicate string or null.", field: "filterPredicate")
        }
        for option in ControllerOptions.names {
            switch fields[option] ?? .null {
            case .null: break
            case .boolean(let value): options[option] = value
            default: throw Self.bad("\"\(option)\" is true or false.", field: option)
            }
        }
        for (key, path) in [("childrenKeyPath", \Self.childrenKeyPath), ("leafKeyPath", \.leafKeyPath)]
            + [("countKeyPath", \Self.countKeyPath)]
        {
            switch fields[key] ?? .null {
            case .null: break
            case .string(let value) where !value.isEmpty: self[keyPath: path] = value
            default: throw Self.bad("\"\(key)\" is a key path string.", field: key)
            }
        }
        if let value = fields["idleTimeout"], !value.isNull {
            guard let seconds = value.doubleValue, seconds > 0, seconds <= Self.longestIdleTimeout else {
                throw Self.bad(
                    "\"idleTimeout\" is a number of seconds above 0 and at most \(Int(Self.longestIdleTimeout)), or null.",
                    field: "idleTimeout")
            }
            idleTimeout = seconds
        }
        if kind == .tree, childrenKeyPath == nil {
            throw Self.bad("A tree controller needs a \"childrenKeyPath\".", field: "childrenKeyPath")
        }
        if kind == .object, !sortDescriptors.isEmpty || filterPredicate != nil {
            throw Self.bad("An object controller has no sortDescriptors or filterPredicate.", field: "kind")
        }
    }

    /// The declaration as JSON (every option spelled out).
    public var json: PropertyListValue {
        var fields: [String: PropertyListValue] = [
            "name": .string(name), "kind": .string(kind.rawValue), "content": .string(content.description),
        ]
        // Every kind lists them (API.md §5's state); an object controller's are always empty.
        fields["sortDescriptors"] = .array(sortDescriptors.map(\.json))
        fields["filterPredicate"] = filterPredicate.map { .string($0.description) } ?? .null
        for option in ControllerOptions.names { fields[option] = options[option].map { .boolean($0) } }
        if kind == .tree {
            fields["childrenKeyPath"] = childrenKeyPath.map { .string($0) } ?? .null
            fields["leafKeyPath"] = leafKeyPath.map { .string($0) } ?? .null
            fields["countKeyPath"] = countKeyPath.map { .string($0) } ?? .null
        }
        if let idleTimeout { fields["idleTimeout"] = .real(idleTimeout) }
        return .dictionary(fields)
    }

    /// The longest `idleTimeout`: a year.
    static let longestIdleTimeout = 365.0 * 86_400

    /// Whether `name` can name a controller (it appears in URLs and in `@name` bindings).
    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy {
                ($0.properties.isAlphabetic && $0.isASCII) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
            }
    }

    static func bad(_ message: String, field: String?) -> ObjectGraphError {
        ObjectGraphError(
            status: 400, code: "bad-controller", message: message, fields: field.map { ["field": .string($0)] } ?? [:])
    }
}
