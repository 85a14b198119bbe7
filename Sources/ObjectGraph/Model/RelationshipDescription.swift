/// A relationship of an entity: to-one or ordered to-many, with its inverse, cardinality and delete rule.
///
/// Every relationship has an inverse (checked when the model loads), which the store keeps in step. `minCount` and
/// `maxCount` bound a to-many (`required` on a to-many means at least one); `isRequired` on a to-one forbids nil.
public struct RelationshipDescription: Sendable, Hashable {
    public var name: String
    public var destination: String
    public var isToMany: Bool
    public var inverse: String
    public var isRequired: Bool
    public var minCount: Int?
    public var maxCount: Int?
    public var deleteRule: DeleteRule
    /// Index of the destination entity in `ObjectModel.entities`.
    public internal(set) var destinationIndex: Int = 0
    /// Index of the inverse in the destination's `relationships`.
    public internal(set) var inverseIndex: Int = 0
    /// Position in the entity's to-one or to-many storage.
    var slot: Int = 0

    public init(
        name: String, destination: String, isToMany: Bool = false, inverse: String, isRequired: Bool = false,
        minCount: Int? = nil, maxCount: Int? = nil, deleteRule: DeleteRule = .nullify
    ) {
        self.name = name
        self.destination = destination
        self.isToMany = isToMany
        self.inverse = inverse
        self.isRequired = isRequired
        self.minCount = minCount
        self.maxCount = maxCount
        self.deleteRule = deleteRule
    }

    /// The least number of destinations a to-many needs (`min`, or 1 when `required`).
    public var effectiveMinCount: Int {
        max(minCount ?? 0, isRequired ? 1 : 0)
    }
}
