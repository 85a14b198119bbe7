import PropertyList

/// Turns the JSON of a model file into an `ObjectModel`, with error messages naming file, entity and key.
struct ModelLoader {
    let file: String
    private var entity: String?
    private var key: String?

    init(file: String) {
        self.file = file
    }

    private func fail(_ reason: String) -> ObjectGraphError {
        .invalidModel(file: file, entity: entity, key: key, reason)
    }

    mutating func load(_ json: PropertyListValue) throws(ObjectGraphError) -> ObjectModel {
        guard let root = json.dictionaryValue else { throw fail("the model must be a JSON object.") }
        try expectOnly(["entities"], in: root, what: "the model")
        guard let entitiesJSON = root["entities"]?.dictionaryValue, !entitiesJSON.isEmpty else {
            throw fail("\"entities\" must be a non-empty object.")
        }
        let names = entitiesJSON.keys.sorted()
        var entities: [EntityDescription] = []
        for (index, name) in names.enumerated() {
            entity = name
            key = nil
            guard Self.isIdentifier(name) else {
                throw fail("an entity name must be an identifier ([A-Za-z_][A-Za-z0-9_]*).")
            }
            entities.append(try loadEntity(entitiesJSON[name]!, name: name, index: index, names: Set(names)))
        }
        try resolveRelationships(&entities)
        try compileDerivedKeys(&entities)
        DerivedKeyReaders.index(&entities)
        return ObjectModel(entities: entities)
    }

    private mutating func loadEntity(
        _ json: PropertyListValue, name: String, index: Int, names: Set<String>
    ) throws(ObjectGraphError) -> EntityDescription {
        guard let dictionary = json.dictionaryValue else { throw fail("an entity must be a JSON object.") }
        try expectOnly(["attributes", "relationships", "derived"], in: dictionary, what: "an entity")
        var seen: Set<String> = []
        var attributes: [AttributeDescription] = []
        for (name, spec) in try section("attributes", of: dictionary) {
            key = name
            try checkKeyName(name, seen: &seen)
            attributes.append(try loadAttribute(spec, name: name))
        }
        var relationships: [RelationshipDescription] = []
        for (name, spec) in try section("relationships", of: dictionary) {
            key = name
            try checkKeyName(name, seen: &seen)
            relationships.append(try loadRelationship(spec, name: name, entities: names))
        }
        var derived: [DerivedKeyDescription] = []
        for (name, spec) in try section("derived", of: dictionary) {
            key = name
            try checkKeyName(name, seen: &seen)
            guard case .string(let keyPath) = spec else { throw fail("a derived key must be a key path string.") }
            derived.append(DerivedKeyDescription(name: name, keyPath: keyPath))
        }
        key = nil
        return EntityDescription(
            name: name, index: index, attributes: attributes, relationships: relationships, derivedKeys: derived)
    }

    private func section(
        _ name: String, of dictionary: [String: PropertyListValue]
    ) throws(ObjectGraphError) -> [(String, PropertyListValue)] {
        guard let value = dictionary[name] else { return [] }
        guard let section = value.dictionaryValue else { throw fail("\"\(name)\" must be a JSON object.") }
        return section.sorted { $0.key < $1.key }
    }

    private func checkKeyName(_ name: String, seen: inout Set<String>) throws(ObjectGraphError) {
        guard Self.isIdentifier(name), name != "self" else {
            throw fail("a key must be an identifier ([A-Za-z_][A-Za-z0-9_]*) other than \"self\".")
        }
        guard seen.insert(name).inserted else {
            throw fail("the key is defined twice (attributes, relationships and derived keys share one namespace).")
        }
    }

    private func loadAttribute(_ json: PropertyListValue, name: String) throws(ObjectGraphError) -> AttributeDescription
    {
        guard let spec = json.dictionaryValue else { throw fail("an attribute must be a JSON object.") }
        try expectOnly(
            ["type", "required", "default", "min", "max", "minLength", "maxLength", "pattern", "enum"], in: spec,
            what: "an attribute")
        guard let typeName = spec["type"]?.stringValue, let type = AttributeType(rawValue: typeName) else {
            let allowed = AttributeType.allCases.map(\.rawValue).joined(separator: ", ")
            throw fail("\"type\" must be one of \(allowed).")
        }
        var attribute = AttributeDescription(name: name, type: type)
        attribute.isRequired = try bool("required", in: spec)
        for bound in ["min", "max"] {
            guard let value = spec[bound] else { continue }
            let converted: PropertyListValue
            switch type {
            case .integer, .real:
                guard value.doubleValue != nil else { throw fail("\"\(bound)\" must be a number.") }
                converted = value
            case .date:
                guard let date = try? attribute.coerce(value, of: nil), case .date = date else {
                    throw fail("\"\(bound)\" must be an ISO 8601 date.")
                }
                converted = date
            default:
                throw fail("\"\(bound)\" applies to integer, real and date attributes, not \(type.rawValue).")
            }
            if bound == "min" { attribute.minimum = converted } else { attribute.maximum = converted }
        }
        if let minimum = attribute.minimum, let maximum = attribute.maximum,
            let order = AttributeDescription.compare(minimum, maximum), order > 0
        {
            throw fail("\"min\" is greater than \"max\".")
        }
        // An integer attribute whose bounds hold no 64-bit integer (1.2 and 1.8, or a min of 1e19) could hold no value
        // but null.
        if type == .integer {
            let low = max(attribute.minimum?.doubleValue ?? -0x1p63, -0x1p63).rounded(.up)
            let high = min(attribute.maximum?.doubleValue ?? 0x1p63, 0x1p63).rounded(.down)
            // (2^63 itself is no 64-bit integer; -2^63 is.)
            if low > high || low >= 0x1p63 || high < -0x1p63 {
                throw fail("no 64-bit integer lies between \"min\" and \"max\".")
            }
        }
        for bound in ["minLength", "maxLength"] {
            guard let value = spec[bound] else { continue }
            guard type == .string || type == .data else {
                throw fail("\"\(bound)\" applies to string and data attributes, not \(type.rawValue).")
            }
            guard case .integer(let length) = value, length >= 0, length <= Int32.max else {
                throw fail("\"\(bound)\" must be a non-negative integer.")
            }
            if bound == "minLength" { attribute.minLength = Int(length) } else { attribute.maxLength = Int(length) }
        }
        if let minLength = attribute.minLength, let maxLength = attribute.maxLength, minLength > maxLength {
            throw fail("\"minLength\" is greater than \"maxLength\".")
        }
        if let value = spec["pattern"] {
            guard type == .string else { throw fail("\"pattern\" applies to string attributes only.") }
            guard case .string(let pattern) = value, let expression = try? RegularExpression(pattern) else {
                throw fail("\"pattern\" must be a valid regular expression.")
            }
            attribute.pattern = expression
        }
        if let value = spec["enum"] {
            guard case .array(let elements) = value, !elements.isEmpty else {
                throw fail("\"enum\" must be a non-empty array of values.")
            }
            var allowed: [PropertyListValue] = []
            for element in elements {
                guard !element.isNull, let converted = try? attribute.coerce(element, of: nil) else {
                    throw fail("\"enum\" value \(element.jsonString()) is not \(type.rawValue).")
                }
                allowed.append(converted)
            }
            attribute.allowedValues = allowed
            // A member the other constraints refuse can never be set: a mistake, as such a default is.
            for value in allowed {
                if let violation = attribute.violation(of: value, in: nil) {
                    throw fail("\"enum\" value \(value.jsonString()): \(violation.message)")
                }
            }
        }
        if let value = spec["default"], !value.isNull {
            let converted: PropertyListValue
            do {
                converted = try attribute.coerce(value, of: nil)
            } catch {
                throw fail("\"default\": \(error.message)")
            }
            if let violation = attribute.violation(of: converted, in: nil) {
                throw fail("\"default\": \(violation.message)")
            }
            attribute.defaultValue = converted
        }
        return attribute
    }

    private func loadRelationship(
        _ json: PropertyListValue, name: String, entities: Set<String>
    ) throws(ObjectGraphError) -> RelationshipDescription {
        guard let spec = json.dictionaryValue else { throw fail("a relationship must be a JSON object.") }
        try expectOnly(
            ["destination", "toMany", "inverse", "required", "min", "max", "deleteRule"], in: spec,
            what: "a relationship")
        guard let destination = spec["destination"]?.stringValue else {
            throw fail("\"destination\" must be an entity name.")
        }
        guard entities.contains(destination) else { throw fail("destination \"\(destination)\" is not an entity.") }
        guard let inverse = spec["inverse"]?.stringValue else {
            throw fail("\"inverse\" is missing: every relationship needs an inverse relationship of \(destination).")
        }
        var relationship = RelationshipDescription(name: name, destination: destination, inverse: inverse)
        relationship.isToMany = try bool("toMany", in: spec)
        relationship.isRequired = try bool("required", in: spec)
        if let value = spec["deleteRule"] {
            guard let text = value.stringValue, let rule = DeleteRule(rawValue: text) else {
                throw fail("\"deleteRule\" must be nullify, cascade or deny.")
            }
            relationship.deleteRule = rule
        }
        for bound in ["min", "max"] {
            guard let value = spec[bound] else { continue }
            guard relationship.isToMany else { throw fail("\"\(bound)\" applies to to-many relationships only.") }
            guard case .integer(let count) = value, count >= 0, count <= Int32.max else {
                throw fail("\"\(bound)\" must be a non-negative integer.")
            }
            if bound == "min" { relationship.minCount = Int(count) } else { relationship.maxCount = Int(count) }
        }
        if let maximum = relationship.maxCount, relationship.effectiveMinCount > maximum {
            throw fail("\"min\" is greater than \"max\".")
        }
        return relationship
    }

    private mutating func resolveRelationships(_ entities: inout [EntityDescription]) throws(ObjectGraphError) {
        let indexes = Dictionary(uniqueKeysWithValues: entities.enumerated().map { ($1.name, $0) })
        // First every inverse must exist (the likelier typo), then point back.
        for e in entities.indices {
            entity = entities[e].name
            for relationship in entities[e].relationships {
                key = relationship.name
                guard case .relationship = entities[indexes[relationship.destination]!].properties[relationship.inverse]
                else {
                    throw fail(
                        "inverse \"\(relationship.inverse)\" is not a relationship of \(relationship.destination).")
                }
            }
        }
        for e in entities.indices {
            entity = entities[e].name
            for r in entities[e].relationships.indices {
                let relationship = entities[e].relationships[r]
                key = relationship.name
                let d = indexes[relationship.destination]!
                let destination = entities[d]
                guard case .relationship(let i) = destination.properties[relationship.inverse] else {
                    throw fail(
                        "inverse \"\(relationship.inverse)\" is not a relationship of \(relationship.destination).")
                }
                let inverse = destination.relationships[i]
                guard inverse.destination == entities[e].name, inverse.inverse == relationship.name else {
                    throw fail(
                        "inverse \(relationship.destination).\(inverse.name) does not point back "
                            + "(its destination is \(inverse.destination), its inverse \"\(inverse.inverse)\").")
                }
                entities[e].relationships[r].destinationIndex = d
                entities[e].relationships[r].inverseIndex = i
            }
        }
        entity = nil
        key = nil
    }

    private mutating func compileDerivedKeys(_ entities: inout [EntityDescription]) throws(ObjectGraphError) {
        let resolver = DerivedKeyResolver(entities: entities)
        for e in entities.indices {
            for d in entities[e].derivedKeys.indices {
                entity = entities[e].name
                key = entities[e].derivedKeys[d].name
                do {
                    _ = try resolver.resolve(e, d)
                } catch let error {
                    entity = resolver.failedAt.map { entities[$0.0].name } ?? entity
                    key = resolver.failedAt.map { entities[$0.0].derivedKeys[$0.1].name } ?? key
                    throw fail(error.message)
                }
            }
        }
        for e in entities.indices {
            for d in entities[e].derivedKeys.indices {
                let (steps, type, _, _) = resolver.results[e][d]!
                entities[e].derivedKeys[d].steps = steps
                entities[e].derivedKeys[d].resultType = type
            }
        }
        entity = nil
        key = nil
    }

    private func bool(_ name: String, in spec: [String: PropertyListValue]) throws(ObjectGraphError) -> Bool {
        guard let value = spec[name] else { return false }
        guard let bool = value.boolValue else { throw fail("\"\(name)\" must be true or false.") }
        return bool
    }

    private func expectOnly(
        _ allowed: Set<String>, in dictionary: [String: PropertyListValue], what: String
    ) throws(ObjectGraphError) {
        if let unknown = dictionary.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw fail("\(what) has no setting \"\(unknown)\" (allowed: \(allowed.sorted().joined(separator: ", "))).")
        }
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
            return false
        }
        return name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
    }
}

/// Compiles derived key paths in dependency order, refusing cycles (`a` derived from `b` derived from `a`), chains
/// longer than `KeyPathCompiler.maximumKeys` (`a` reads `b`, which reads `c`, ...: evaluating one recurses once per
/// derived key it goes through, as compiling it does, and a long chain would overflow a thread's stack), and derived
/// keys that, the derived keys they read written out in full, would have more keys than a key path may
/// (`p1` = `p0.p0`, `p2` = `p1.p1`, ... double at each step: what a commit walks to find the readers of a change,
/// and what evaluating one walks, would grow without bound).
private final class DerivedKeyResolver {
    let entities: [EntityDescription]
    /// Each resolved derived key's steps and type, the length of the longest chain of derived keys it begins, and
    /// its keys written out in full.
    var results: [[(steps: [KeyStep], type: StaticType, chain: Int, keys: Int)?]]
    var visiting: Set<[Int]> = []
    /// The derived keys being resolved, outermost first.
    private var resolving: [(Int, Int)] = []
    /// For each key path being compiled (innermost last), the longest chain among the derived keys it reads so far,
    /// and the keys those derived keys add written out (each one's keys but the one naming it).
    private var reads: [(longest: Int, added: Int)] = []
    /// The derived key whose key path failed (it may be a dependency of the one being resolved).
    var failedAt: (Int, Int)?

    init(entities: [EntityDescription]) {
        self.entities = entities
        self.results = entities.map { Array(repeating: nil, count: $0.derivedKeys.count) }
    }

    func resolve(_ entity: Int, _ derived: Int) throws(ObjectGraphError) -> StaticType {
        if let result = results[entity][derived] {
            noteRead(result.chain, keys: result.keys)
            return result.type
        }
        let description = entities[entity].derivedKeys[derived]
        guard visiting.insert([entity, derived]).inserted else {
            failedAt = (entity, derived)
            throw ObjectGraphError.badKeyPath(description.keyPath, "derived keys depend on each other in a cycle.")
        }
        resolving.append((entity, derived))
        defer {
            visiting.remove([entity, derived])
            resolving.removeLast()
        }
        // Checked before compiling too: the recursion of a chain not resolved yet is as deep as the chain (named by
        // its first key, the one the loader asked for).
        guard visiting.count <= KeyPathCompiler.maximumKeys else { throw tooLong(resolving[0].0, resolving[0].1) }
        let compiler = KeyPathCompiler(entities: entities) { e, d throws(ObjectGraphError) in
            try self.resolve(e, d)
        }
        reads.append((0, 0))
        let compiled: ([KeyStep], StaticType)
        do {
            compiled = try compiler.compile(description.keyPath, from: .entity(entity))
        } catch {
            reads.removeLast()
            guard failedAt == nil else { throw error }
            failedAt = (entity, derived)
            throw ObjectGraphError(
                status: 500, code: "invalid-model",
                message: "key path \"\(description.keyPath)\": \(error.message)")
        }
        let read = reads.removeLast()
        let chain = read.longest + 1
        guard chain <= KeyPathCompiler.maximumKeys else { throw tooLong(entity, derived) }
        let keys = Self.keyCount(compiled.0) + read.added
        guard keys <= KeyPathCompiler.maximumKeys else {
            failedAt = (entity, derived)
            throw ObjectGraphError.badKeyPath(
                description.keyPath,
                "with the derived keys it reads written out, it would have \(keys) keys; a key path may have at most "
                    + "\(KeyPathCompiler.maximumKeys).")
        }
        results[entity][derived] = (compiled.0, compiled.1, chain, keys)
        noteRead(chain, keys: keys)
        return compiled.1
    }

    /// The key path being compiled reads a derived key that begins a chain this long and has this many keys written
    /// out (in place of the one key naming it).
    private func noteRead(_ chain: Int, keys: Int) {
        guard let last = reads.indices.last else { return }
        reads[last].longest = max(reads[last].longest, chain)
        reads[last].added += keys - 1
    }

    /// The keys of compiled steps (a collection operator's with those of the path after it).
    private static func keyCount(_ steps: [KeyStep]) -> Int {
        steps.reduce(0) { count, step in
            if case .collectionOperator(_, let rest) = step { return count + 1 + keyCount(rest) }
            return count + 1
        }
    }

    private func tooLong(_ entity: Int, _ derived: Int) -> ObjectGraphError {
        failedAt = (entity, derived)
        return ObjectGraphError.badKeyPath(
            entities[entity].derivedKeys[derived].keyPath,
            "a chain of derived keys, each read by the one before, may be at most \(KeyPathCompiler.maximumKeys) long.")
    }
}
