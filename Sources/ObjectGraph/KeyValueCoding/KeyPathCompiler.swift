/// Parses key paths and resolves them against the model (static checks + per-entity property lookups).
struct KeyPathCompiler {
    let entities: [EntityDescription]
    /// The type a derived key gives: `(entity index, derived index)`.
    let derivedType: (Int, Int) throws(ObjectGraphError) -> StaticType

    /// Whether `keyPath` is one key (not empty, no dot).
    static func isSingleKey(_ keyPath: String) -> Bool {
        !keyPath.isEmpty && !keyPath.utf8.contains(UInt8(ascii: "."))
    }

    /// The most keys a key path may have (compiling and evaluating recurse once per to-many step).
    static let maximumKeys = 100

    /// Splits `keyPath` on dots; 400 `bad-key-path` for an empty path, an empty key, or more than `maximumKeys`.
    static func keys(of keyPath: String) throws(ObjectGraphError) -> [String] {
        if isSingleKey(keyPath) { return [keyPath] }
        let keys = keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !keyPath.isEmpty, !keys.contains(where: \.isEmpty) else {
            throw .badKeyPath(keyPath, "keys may not be empty.")
        }
        guard keys.count <= maximumKeys else {
            let start = keys.prefix(3).joined(separator: ".")
            throw .badKeyPath("\(start)...", "it has \(keys.count) keys; at most \(maximumKeys) are allowed.")
        }
        return keys
    }

    func compile(_ keyPath: String, from type: StaticType) throws(ObjectGraphError) -> ([KeyStep], StaticType) {
        try compile(Self.keys(of: keyPath)[...], from: type, keyPath: keyPath)
    }

    func compile(
        _ keys: ArraySlice<String>, from type: StaticType, keyPath: String
    ) throws(ObjectGraphError) -> ([KeyStep], StaticType) {
        var steps: [KeyStep] = []
        var current = type
        var index = keys.startIndex
        while index < keys.endIndex {
            let key = keys[index]
            index += 1
            if key == "self" {
                steps.append(.this)
                continue
            }
            guard key.hasPrefix("@") else {
                current = try self.type(of: key, on: current)
                steps.append(.key(lookup(key)))
                continue
            }
            guard let op = CollectionOperator(rawValue: key) else {
                throw .badKeyPath(keyPath, "\(key) is not a collection operator.")
            }
            let element: StaticType
            switch current {
            case .collection(let type): element = type
            case .dynamic: element = .dynamic
            case .entity(let entity): throw .undefinedKey(key, entity: entities[entity].name)
            case .scalar(let type): throw .undefinedKey(key, entity: type.rawValue)
            }
            if op == .count {
                steps.append(.collectionOperator(.count, rest: []))
                return (steps, .scalar(.integer))
            }
            // Every operator but @count needs the key path of what it collects (the KVC guide); `self` is the values.
            let rest = keys[index...]
            guard !rest.isEmpty else { throw .operatorWithoutKeyPath(key, in: keyPath) }
            let (restSteps, restType) = try compile(rest, from: element, keyPath: keyPath)
            try checkOperand(of: op, restType)
            steps.append(.collectionOperator(op, rest: restSteps))
            switch op {
            case .count: return (steps, .scalar(.integer))
            case .sum, .avg: return (steps, .scalar(.real))
            case .min, .max: return (steps, restType)
            case .unionOfObjects, .distinctUnionOfObjects: return (steps, .collection(restType))
            case .unionOfArrays, .distinctUnionOfArrays:
                switch restType {
                case .collection(let inner): return (steps, .collection(inner))
                case .dynamic: return (steps, .dynamic)
                default: throw .badKeyPath(keyPath, "\(key) needs a collection of collections.")
                }
            }
        }
        return (steps, current)
    }

    /// Refuses, as evaluation does for every collection but an empty one, an operator whose operand's type it cannot
    /// take: `@sum` and `@avg` take numbers (booleans count as 0 and 1), `@min` and `@max` values (not objects or
    /// collections). A model's derived key so made is a bad model, found at start rather than at every read.
    private func checkOperand(of op: CollectionOperator, _ type: StaticType) throws(ObjectGraphError) {
        let numeric = op == .sum || op == .avg
        guard numeric || op == .min || op == .max else { return }
        let found: String
        switch type {
        case .dynamic: return
        case .scalar(let attributeType):
            guard numeric, ![.integer, .real, .boolean].contains(attributeType) else { return }
            found = attributeType.rawValue
        case .entity(let entity): found = "objects (\(entities[entity].name))"
        case .collection: found = "collections"
        }
        throw .typeMismatch(
            op.rawValue, of: nil, "\(op.rawValue) needs \(numeric ? "numbers" : "values"), not \(found).")
    }

    func type(of key: String, on type: StaticType) throws(ObjectGraphError) -> StaticType {
        switch type {
        case .entity(let entityIndex):
            let entity = entities[entityIndex]
            guard let property = entity.properties[key] else { throw .undefinedKey(key, entity: entity.name) }
            switch property {
            case .attribute(let index):
                let attributeType = entity.attributes[index].type
                return attributeType == .any ? .dynamic : .scalar(attributeType)
            case .relationship(let index):
                let relationship = entity.relationships[index]
                let destination = StaticType.entity(relationship.destinationIndex)
                return relationship.isToMany ? .collection(destination) : destination
            case .derived(let index):
                return try derivedType(entityIndex, index)
            }
        case .collection(let element): return .collection(try self.type(of: key, on: element))
        case .dynamic: return .dynamic
        case .scalar(let attributeType): throw .undefinedKey(key, entity: attributeType.rawValue)
        }
    }

    func lookup(_ key: String) -> KeyLookup {
        KeyLookup(key: key, properties: entities.map { $0.properties[key] })
    }
}
