/// A read-only key whose value is a key path from the object (`"headcount": "employees.@count"`).
///
/// The key path is checked against the model when it loads (undefined keys, misplaced operators, dependency
/// cycles); it may go through other derived keys.
public struct DerivedKeyDescription: Sendable, Hashable {
    public var name: String
    public var keyPath: String
    var steps: [KeyStep] = []
    var resultType: StaticType = .dynamic

    public init(name: String, keyPath: String) {
        self.name = name
        self.keyPath = keyPath
    }
}
