import Foundation
import PropertyList

/// The object model: the entities of `model.json` (API.md §3), checked and resolved.
///
/// Entities are sorted by name. Loading checks every entity, key and constraint, resolves each relationship's
/// destination and inverse (which must exist and point back), and compiles derived key paths; any problem throws
/// 500 `invalid-model` whose message names the file, the entity and the key.
public struct ObjectModel: Sendable {
    public let entities: [EntityDescription]
    let entityIndexes: [String: Int]
    /// Whether a derived key reads a property of another object (`DerivedKeyReaders`).
    let hasDerivedKeyReaders: Bool

    init(entities: [EntityDescription]) {
        self.entities = entities
        self.hasDerivedKeyReaders = entities.contains { !$0.derivedKeyReaders.isEmpty }
        self.entityIndexes = Dictionary(uniqueKeysWithValues: entities.enumerated().map { ($1.name, $0) })
    }

    public func entity(named name: String) -> EntityDescription? {
        entityIndexes[name].map { entities[$0] }
    }

    /// The entity's index, or 404 `no-such-entity`.
    func entityIndex(_ name: String) throws(ObjectGraphError) -> Int {
        guard let index = entityIndexes[name] else { throw .noSuchEntity(name) }
        return index
    }

    /// Reads, parses and checks a model file: what `bindery check-model FILE` runs.
    ///
    /// The file is named in every error message as `path` is given.
    public static func check(file path: String) throws(ObjectGraphError) -> ObjectModel {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .invalidModel(file: path, entity: nil, key: nil, "cannot read the file.")
        }
        return try ObjectModel(jsonBytes: data, fileName: path)
    }

    /// Parses and checks model JSON; `fileName` is used in error messages.
    public init(jsonBytes: some Collection<UInt8>, fileName: String = "model.json") throws(ObjectGraphError) {
        let json: PropertyListValue
        do {
            json = try PropertyListValue(jsonBytes: jsonBytes)
        } catch {
            throw .invalidModel(file: fileName, entity: nil, key: nil, "malformed JSON: \(error.description)")
        }
        try self.init(json: json, fileName: fileName)
    }

    /// Checks a model given as a property-list value (the parsed model file).
    public init(json: PropertyListValue, fileName: String = "model.json") throws(ObjectGraphError) {
        var loader = ModelLoader(file: fileName)
        self = try loader.load(json)
    }

    /// Compiles a key path for objects of `entity` (nil: for plain values), for repeated evaluation.
    public func compile(_ keyPath: String, for entity: String?) throws(ObjectGraphError) -> CompiledKeyPath {
        let start: StaticType =
            try entity.map { name throws(ObjectGraphError) in .entity(try entityIndex(name)) }
            ?? .dynamic
        let (steps, type) = try compiler.compile(keyPath, from: start)
        return CompiledKeyPath(keyPath: keyPath, entity: entity, steps: steps, resultType: type)
    }

    var compiler: KeyPathCompiler {
        let entities = self.entities
        return KeyPathCompiler(entities: entities) { entity, derived throws(ObjectGraphError) in
            entities[entity].derivedKeys[derived].resultType
        }
    }
}
