import PropertyList

/// An attribute of an entity: its type and its constraints (API.md §3).
///
/// Constraints apply to non-null values; `isRequired` forbids null. `minimum`/`maximum` bound numbers and dates,
/// `minLength`/`maxLength` count characters of a string or bytes of data, `pattern` must match the whole string,
/// `allowedValues` (the model's `enum`) lists the only values accepted.
public struct AttributeDescription: Sendable, Hashable {
    public var name: String
    public var type: AttributeType
    public var isRequired: Bool
    /// The value a new object gets when the insert does not give one; `.null` when the model has no `default`.
    public var defaultValue: PropertyListValue
    public var minimum: PropertyListValue?
    public var maximum: PropertyListValue?
    public var minLength: Int?
    public var maxLength: Int?
    public var pattern: RegularExpression?
    public var allowedValues: [PropertyListValue]?
    /// The attribute's position in its entity's attribute storage (its index in `EntityDescription.attributes`).
    public internal(set) var slot: Int

    public init(
        name: String, type: AttributeType, isRequired: Bool = false, defaultValue: PropertyListValue = .null,
        minimum: PropertyListValue? = nil, maximum: PropertyListValue? = nil, minLength: Int? = nil,
        maxLength: Int? = nil, pattern: RegularExpression? = nil, allowedValues: [PropertyListValue]? = nil,
        slot: Int = 0
    ) {
        self.name = name
        self.type = type
        self.isRequired = isRequired
        self.defaultValue = defaultValue
        self.minimum = minimum
        self.maximum = maximum
        self.minLength = minLength
        self.maxLength = maxLength
        self.pattern = pattern
        self.allowedValues = allowedValues
        self.slot = slot
    }
}
