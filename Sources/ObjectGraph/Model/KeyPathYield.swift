/// What a key path gives, as the model tells before any object is read.
public enum KeyPathYield: Sendable, Hashable {
    /// Objects of one entity: one object (through to-ones) or a collection of them (`employees.manager`,
    /// `employees.@distinctUnionOfArrays.directReports`).
    case objects(entity: String)
    /// Values, or collections of values: an attribute (an `any` one too, which never holds a reference), `@count`,
    /// `employees.lastName`, `employees.directReports.lastName`.
    case values
    /// Collections of objects per object (`employees.directReports`: one array per employee).
    case collections
}

extension ObjectModel {
    /// What `keyPath` from an object of `entityName` gives; throws what compiling it throws (404 `undefined-key`).
    public func yield(of keyPath: String, from entityName: String) throws(ObjectGraphError) -> KeyPathYield {
        func innermost(_ type: StaticType) -> StaticType {
            if case .collection(let element) = type { return innermost(element) }
            return type
        }
        let type = try compile(keyPath, for: entityName).resultType
        switch (type, innermost(type)) {
        case (.entity(let index), _), (.collection(.entity(let index)), _):
            return .objects(entity: entities[index].name)
        case (.collection(.collection), .entity): return .collections
        default: return .values
        }
    }
}
