/// Key-value coding as predicates and sort descriptors need it: `value(forKeyPath:)` of a subject.
///
/// The subject is an object (`.object`), a plain value (`SELF` of a string array), or a collection. Through a
/// to-many the answer is a `.collection`; collection operators (`employees.@count`, `@sum.salary`) give values.
/// An undefined key throws `ObjectGraphError.undefinedKey`. The store's read view conforms; it is used while the
/// store's lock is held, so implementations must not call out.
public protocol KeyPathResolving {
    func value(forKeyPath keyPath: String, of subject: KeyValue) throws -> KeyValue
}
