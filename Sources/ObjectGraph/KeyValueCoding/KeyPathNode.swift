import PropertyList

/// A value while a key path is evaluated: like `KeyValue`, with objects as handles (no id strings involved).
enum KeyPathNode: Hashable {
    case object(ObjectHandle)
    case value(PropertyListValue)
    case collection([KeyPathNode])

    static let null = KeyPathNode.value(.null)

    /// The node as `isEqual:` and `hash` see it (see `EqualityKey`): objects by identity.
    enum Equality: Hashable {
        case value(EqualityKey)
        case object(ObjectHandle)
        case collection([Equality])
    }

    var equality: Equality {
        switch self {
        case .value(let value): .value(value.equalityKey)
        case .object(let handle): .object(handle)
        case .collection(let elements): .collection(elements.map(\.equality))
        }
    }

    var isNull: Bool {
        if case .value(.null) = self { return true }
        return false
    }
}
