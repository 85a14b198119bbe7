/// A property of an entity as a key resolves to it.
enum Property: Sendable, Hashable {
    /// Index in `EntityDescription.attributes` (which is also the attribute's storage slot).
    case attribute(Int)
    /// Index in `EntityDescription.relationships`.
    case relationship(Int)
    /// Index in `EntityDescription.derivedKeys`.
    case derived(Int)
}

/// One key of a compiled key path, resolved for every entity of the model at once.
///
/// `properties[entityIndex]` is what the key means on an object of that entity (nil: undefined there), so
/// evaluating it on an object is an array index, not a string lookup.
struct KeyLookup: Sendable, Hashable {
    let key: String
    let properties: [Property?]
}

/// A step of a compiled key path.
indirect enum KeyStep: Sendable, Hashable {
    case key(KeyLookup)
    /// `self`: the value itself (`@max.self`).
    case this
    /// A collection operator; `rest` is the key path to its right, applied to each element.
    case collectionOperator(CollectionOperator, rest: [KeyStep])
}

/// What the model knows, before any object is seen, about the value a key path gives.
indirect enum StaticType: Sendable, Hashable {
    case entity(Int)
    case scalar(AttributeType)
    case collection(StaticType)
    /// A value of an `any` attribute, or anything below it: keys are looked up at run time.
    case dynamic
}
