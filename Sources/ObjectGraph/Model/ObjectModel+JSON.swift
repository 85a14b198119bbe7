import PropertyList

extension ObjectModel {
    /// The model in the form of the model file (`GET /model`): `{"entities": {Name: {...}}}`.
    public var json: PropertyListValue {
        .dictionary(["entities": .dictionary(Dictionary(uniqueKeysWithValues: entities.map { ($0.name, $0.json) }))])
    }
}

extension EntityDescription {
    /// The entity in the form of the model file (`GET /model/{Entity}`).
    public var json: PropertyListValue {
        var attributes: [String: PropertyListValue] = [:]
        for attribute in self.attributes {
            var spec: [String: PropertyListValue] = ["type": .string(attribute.type.rawValue)]
            if attribute.isRequired { spec["required"] = true }
            if !attribute.defaultValue.isNull { spec["default"] = attribute.defaultValue }
            spec["min"] = attribute.minimum
            spec["max"] = attribute.maximum
            spec["minLength"] = attribute.minLength.map { .integer(Int64($0)) }
            spec["maxLength"] = attribute.maxLength.map { .integer(Int64($0)) }
            spec["pattern"] = attribute.pattern.map { .string($0.pattern) }
            spec["enum"] = attribute.allowedValues.map { .array($0) }
            attributes[attribute.name] = .dictionary(spec)
        }
        var relationships: [String: PropertyListValue] = [:]
        for relationship in self.relationships {
            var spec: [String: PropertyListValue] = [
                "destination": .string(relationship.destination), "inverse": .string(relationship.inverse),
                "toMany": .boolean(relationship.isToMany), "deleteRule": .string(relationship.deleteRule.rawValue),
            ]
            if relationship.isRequired { spec["required"] = true }
            spec["min"] = relationship.minCount.map { .integer(Int64($0)) }
            spec["max"] = relationship.maxCount.map { .integer(Int64($0)) }
            relationships[relationship.name] = .dictionary(spec)
        }
        let derived = Dictionary(
            uniqueKeysWithValues: derivedKeys.map { ($0.name, PropertyListValue.string($0.keyPath)) })
        return [
            "attributes": .dictionary(attributes), "relationships": .dictionary(relationships),
            "derived": .dictionary(derived),
        ]
    }
}
