/// A key path parsed and resolved against the model once, to be evaluated on many objects.
///
/// Compile with `ReadView.compile(_:for:)` (or `ObjectModel.compile(_:for:)`); evaluate with
/// `ReadView.value(of:at:)`. Undefined keys are found when compiling wherever the model knows the type (also beyond
/// a to-one that happens to be nil); below `any` attributes they are found when evaluating.
public struct CompiledKeyPath: Sendable, Hashable {
    /// The key path as written.
    public let keyPath: String
    /// The entity it starts from; nil for a path compiled for plain values.
    public let entity: String?
    let steps: [KeyStep]
    let resultType: StaticType

    init(keyPath: String, entity: String?, steps: [KeyStep], resultType: StaticType) {
        self.keyPath = keyPath
        self.entity = entity
        self.steps = steps
        self.resultType = resultType
    }

    /// Whether the path goes through a to-many relationship or a collection operator that makes a collection
    /// (its value is a collection).
    public var isCollection: Bool {
        if case .collection = resultType { return true }
        return false
    }
}
