/// The type of an attribute in the model file (API.md §3).
///
/// `any` holds any property-list value (arrays and dictionaries included) but never an object reference.
public enum AttributeType: String, Sendable, Hashable, CaseIterable {
    case string
    case integer
    case real
    case boolean
    case date
    case data
    case any
}
