/// What a key path gives, as the model tells before any object is read.
public enum KeyPathYield: Sendable, Hashable {
    /// Objects of one entity: one object (through to-ones) or a collection of them (`employees.manager`,
    /// `employees.@distinctUnionOfArrays.directReports`).
    case objects(entity: String)
    /// Values, or a collection of values (an attribute, `@count`, `employees.lastName`).
    case values
    /// A collection of collections (`employees.directReports`: one array per employee).
    case collections
    /// Nobody can tell (below an `any` attribute).
    case unknown
}

extension ObjectModel {
    /// What `keyPath` from an object of `entityName` gives; throws what compiling it throws (404 `undefined-key`).
    public func yield(of keyPath: String, from entityName: String) throws(ObjectGraphError) -> KeyPathYield {
        switch try compile(keyPath, for: entityName).resultType {
        case .entity(let index), .collection(.entity(let index)): .objects(entity: entities[index].name)
        case .scalar, .collection(.scalar): .values
        case .collection(.collection): .collections
        case .dynamic, .collection(.dynamic): .unknown
        }
    }
}
