import PropertyList

/// One side of a comparison (NSExpression): a constant, `SELF`, a key path, or an array literal with key paths in it.
indirect enum PredicateExpression: Sendable, Hashable {
    /// A literal; an array literal of literals is one constant array.
    case constant(PropertyListValue)
    /// `SELF`: the object being evaluated.
    case evaluatedObject
    /// A key path from the evaluated object (`department.name`, `employees.@avg.salary`).
    case keyPath(String)
    /// An array literal with at least one element that is not constant.
    case aggregate([PredicateExpression])

    /// The value for `subject`; key paths are read through it (its errors propagate).
    func value(of subject: some PredicateSubject) throws -> KeyValue {
        switch self {
        case .constant(let value): return .value(value)
        case .evaluatedObject: return subject.evaluatedObject
        case .keyPath(let keyPath): return try subject.value(forKeyPath: keyPath)
        case .aggregate(let elements):
            return .collection(try elements.map { try $0.value(of: subject) })
        }
    }

    /// The key paths this expression reads, in order of appearance.
    func collectKeyPaths(into keyPaths: inout [String]) {
        switch self {
        case .constant, .evaluatedObject: break
        case .keyPath(let keyPath): if !keyPaths.contains(keyPath) { keyPaths.append(keyPath) }
        case .aggregate(let elements): for element in elements { element.collectKeyPaths(into: &keyPaths) }
        }
    }
}
