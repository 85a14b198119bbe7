import PropertyList

/// A value while a key path is evaluated: like `KeyValue`, with objects as handles (no id strings involved).
enum KeyPathNode: Hashable {
    case object(ObjectHandle)
    case value(PropertyListValue)
    case collection([KeyPathNode])

    static let null = KeyPathNode.value(.null)

    /// See `PropertyListValue.numbersByValue`.
    var numbersByValue: KeyPathNode {
        switch self {
        case .value(let value): .value(value.numbersByValue)
        case .object: self
        case .collection(let elements): .collection(elements.map(\.numbersByValue))
        }
    }

    var isNull: Bool {
        if case .value(.null) = self { return true }
        return false
    }
}
