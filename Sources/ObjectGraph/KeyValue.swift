import PropertyList

/// A value as key-value coding sees it: a property-list value, an object, or a collection of either.
///
/// `value(forKeyPath:)` through a to-one gives the destination (`.object`) or `.value(.null)` when it is nil; through
/// a to-many it gives a `.collection` (in the relationship's order); collection operators give values. The JSON form
/// (`json`) writes objects as `{"$ref": "Entity/id"}` and collections as arrays.
///
/// Not `indirect`: the collection case's array already holds its elements out of line, so a value or an id is
/// stored inline and making one allocates nothing (predicates and sorting make one per object and key path).
public enum KeyValue: Sendable, Hashable {
    case value(PropertyListValue)
    case object(ObjectID)
    case collection([KeyValue])

    public static let null = KeyValue.value(.null)

    public var isNull: Bool {
        if case .value(.null) = self { return true }
        return false
    }

    /// Whether the two are equal as `isEqual:` compares them (see `EqualityKey`: numbers by value, text code point for
    /// code point); objects by id, collections element by element.
    public func isEqualByValue(to other: KeyValue) -> Bool {
        switch (self, other) {
        case (.value(let a), .value(let b)): a.equalityKey == b.equalityKey
        case (.object(let a), .object(let b)): a == b
        case (.collection(let a), .collection(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.isEqualByValue(to: $1) }
        default: false
        }
    }

    /// The JSON-ready form: objects become `{"$ref": ...}` dictionaries, collections arrays.
    public var json: PropertyListValue {
        switch self {
        case .value(let value): value
        case .object(let id): ["$ref": .string(id.description)]
        case .collection(let elements): .array(elements.map(\.json))
        }
    }
}
