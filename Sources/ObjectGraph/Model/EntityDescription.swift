/// An entity of the model: its attributes, relationships and derived keys, each list sorted by name.
public struct EntityDescription: Sendable, Hashable {
    public var name: String
    public var attributes: [AttributeDescription]
    public var relationships: [RelationshipDescription]
    public var derivedKeys: [DerivedKeyDescription]
    /// Index in `ObjectModel.entities`.
    public internal(set) var index: Int
    var properties: [String: Property] = [:]
    var toOneCount = 0
    var toManyCount = 0
    /// Walks back to the objects whose derived keys read a property of an object of this entity (`DerivedKeyReaders`).
    var derivedKeyReaders: [Property: [[Int]]] = [:]

    init(
        name: String, index: Int, attributes: [AttributeDescription], relationships: [RelationshipDescription],
        derivedKeys: [DerivedKeyDescription]
    ) {
        self.name = name
        self.index = index
        self.attributes = attributes.sorted { $0.name < $1.name }
        self.relationships = relationships.sorted { $0.name < $1.name }
        self.derivedKeys = derivedKeys.sorted { $0.name < $1.name }
        for i in self.attributes.indices {
            self.attributes[i].slot = i
            properties[self.attributes[i].name] = .attribute(i)
        }
        for i in self.relationships.indices {
            if self.relationships[i].isToMany {
                self.relationships[i].slot = toManyCount
                toManyCount += 1
            } else {
                self.relationships[i].slot = toOneCount
                toOneCount += 1
            }
            properties[self.relationships[i].name] = .relationship(i)
        }
        for i in self.derivedKeys.indices {
            properties[self.derivedKeys[i].name] = .derived(i)
        }
    }

    public func attribute(named name: String) -> AttributeDescription? {
        if case .attribute(let i) = properties[name] { return attributes[i] }
        return nil
    }

    public func relationship(named name: String) -> RelationshipDescription? {
        if case .relationship(let i) = properties[name] { return relationships[i] }
        return nil
    }

    public func derivedKey(named name: String) -> DerivedKeyDescription? {
        if case .derived(let i) = properties[name] { return derivedKeys[i] }
        return nil
    }

    /// Whether `name` is an attribute, relationship or derived key of the entity.
    public func hasKey(_ name: String) -> Bool { properties[name] != nil }
}
