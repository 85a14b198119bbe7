import PropertyList
import Synchronization

/// The object graph: one `EntityTable` per entity, the store sequence number and the id counter.
///
/// `@unchecked Sendable`: it is owned by `ObjectStore`'s mutex and touched only inside `withLock`; the read views
/// and transactions that refer to it are not `Sendable` and are valid only inside the closure they were given to.
final class GraphState: @unchecked Sendable {
    let model: ObjectModel
    var tables: [EntityTable]
    /// The seq of the last committed transaction (0: none yet).
    var seq: Int64 = 0 {
        didSet {
            publishedSeq.store(seq, ordering: .releasing)
            publishedCounts.withLock { counts in
                for index in tables.indices { counts[index] = tables[index].liveCount }
            }
        }
    }
    /// The seq of the last commit that changed objects; commits that only take a seq (`ObjectStore.advanceSeq()`)
    /// leave it. A binary snapshot holds it; after loading a JSON snapshot (or a binary one of an earlier version)
    /// it is the snapshot's seq.
    var contentSeq: Int64 = 0
    /// `seq`, readable without the lock (`ObjectStore.seq`, read for every HTTP response).
    let publishedSeq = Atomic<Int64>(0)
    /// How many objects each entity has (in the model's order), as the last commit left them, readable without the
    /// store's lock (`ObjectStore.objectCount`, `/metrics`).
    let publishedCounts: Mutex<[Int]>
    /// The last number used for a server-assigned id; ids are never reused.
    var lastAssignedID: Int64 = 0
    /// How many times a table was compacted (its rows renumbered): handles kept across commits (`ObjectReads`) hold
    /// only while it stays the same. Replacing the whole graph is a change of every object anyway.
    var layoutGeneration = 0
    private var keyPathCache: [KeyPathCacheKey: CompiledKeyPath] = [:]
    /// The last few compiled paths, checked by string equality first (callers such as a predicate evaluated over
    /// many objects pass the same string again and again, and equal string storage compares in O(1)). Three
    /// parallel arrays: looking through an array of tuples would copy every tuple looked at.
    private var recentEntities: [Int] = []
    private var recentKeyPaths: [String] = []
    private var recentCompiled: [CompiledKeyPath] = []
    private var nextRecent = 0
    private var recentEntity: (name: String, index: Int)?

    private struct KeyPathCacheKey: Hashable {
        let entity: Int
        let keyPath: String
    }

    init(model: ObjectModel) {
        self.model = model
        self.tables = model.entities.map(EntityTable.init)
        self.publishedCounts = Mutex([Int](repeating: 0, count: model.entities.count))
    }

    func emptyTables() -> [EntityTable] {
        model.entities.map(EntityTable.init)
    }

    // MARK: Addressing

    func handle(of object: ObjectID) throws(ObjectGraphError) -> ObjectHandle {
        let entity: Int
        if let recent = recentEntity, recent.name == object.entity {
            entity = recent.index
        } else {
            entity = try model.entityIndex(object.entity)
            recentEntity = (object.entity, entity)
        }
        guard let row = tables[entity].row(of: object.id) else { throw .noSuchObject(object) }
        return ObjectHandle(entity: entity, row: row)
    }

    func existingHandle(of object: ObjectID) -> ObjectHandle? {
        guard let entity = model.entityIndexes[object.entity], let row = tables[entity].row(of: object.id) else {
            return nil
        }
        return ObjectHandle(entity: entity, row: row)
    }

    func objectID(of handle: ObjectHandle) -> ObjectID {
        ObjectID(entity: model.entities[handle.entity].name, id: tables[handle.entity].ids[handle.row])
    }

    func isAlive(_ handle: ObjectHandle) -> Bool {
        tables[handle.entity].alive[handle.row]
    }

    // MARK: Primitive reads

    func attribute(_ handle: ObjectHandle, _ slot: Int) -> PropertyListValue {
        let table = tables[handle.entity]
        return table.attributes[handle.row * table.attributeCount + slot]
    }

    func relationship(_ handle: ObjectHandle, _ index: Int) -> RelationshipDescription {
        model.entities[handle.entity].relationships[index]
    }

    /// The destination of a to-one, or nil.
    func toOne(_ handle: ObjectHandle, _ relationship: RelationshipDescription) -> ObjectHandle? {
        let table = tables[handle.entity]
        let row = table.toOne[handle.row * table.toOneCount + relationship.slot]
        return row < 0 ? nil : ObjectHandle(entity: relationship.destinationIndex, row: Int(row))
    }

    /// The destination of the to-one in `slot` of the handle's entity, leading to entity `destination`, or nil.
    func toOne(_ handle: ObjectHandle, slot: Int, destination: Int) -> ObjectHandle? {
        let table = tables[handle.entity]
        let row = table.toOne[handle.row * table.toOneCount + slot]
        return row < 0 ? nil : ObjectHandle(entity: destination, row: Int(row))
    }

    /// The destination rows of a to-many, in order.
    func toManyRows(_ handle: ObjectHandle, _ relationship: RelationshipDescription) -> [Int32] {
        let table = tables[handle.entity]
        return table.toMany[handle.row * table.toManyCount + relationship.slot]
    }

    /// Every destination of a relationship (none, one, or the to-many's in order).
    func destinations(_ handle: ObjectHandle, _ relationship: RelationshipDescription) -> [ObjectHandle] {
        if relationship.isToMany {
            return toManyRows(handle, relationship).map {
                ObjectHandle(entity: relationship.destinationIndex, row: Int($0))
            }
        }
        return toOne(handle, relationship).map { [$0] } ?? []
    }

    // MARK: Primitive writes (no inverse maintenance, no recording)

    func setAttribute(_ handle: ObjectHandle, _ slot: Int, _ value: PropertyListValue) {
        let table = tables[handle.entity]
        table.attributes[handle.row * table.attributeCount + slot] = value
    }

    func setToOne(_ handle: ObjectHandle, _ relationship: RelationshipDescription, _ row: Int32) {
        let table = tables[handle.entity]
        table.toOne[handle.row * table.toOneCount + relationship.slot] = row
    }

    func setToMany(_ handle: ObjectHandle, _ relationship: RelationshipDescription, _ rows: [Int32]) {
        let table = tables[handle.entity]
        table.toMany[handle.row * table.toManyCount + relationship.slot] = rows
    }

    func insertToMany(_ handle: ObjectHandle, _ relationship: RelationshipDescription, _ row: Int32, at index: Int) {
        let table = tables[handle.entity]
        table.toMany[handle.row * table.toManyCount + relationship.slot].insert(row, at: index)
    }

    func removeToMany(_ handle: ObjectHandle, _ relationship: RelationshipDescription, at index: Int) {
        let table = tables[handle.entity]
        table.toMany[handle.row * table.toManyCount + relationship.slot].remove(at: index)
    }

    func replaceToMany(_ handle: ObjectHandle, _ relationship: RelationshipDescription, _ row: Int32, at index: Int) {
        let table = tables[handle.entity]
        table.toMany[handle.row * table.toManyCount + relationship.slot][index] = row
    }

    // MARK: Key paths

    /// The compiled form of `keyPath` for objects of `entity` (-1: plain values), cached for the store's lifetime.
    func compiled(_ keyPath: String, entity: Int) throws(ObjectGraphError) -> CompiledKeyPath {
        for index in recentEntities.indices where recentEntities[index] == entity && recentKeyPaths[index] == keyPath {
            return recentCompiled[index]
        }
        let key = KeyPathCacheKey(entity: entity, keyPath: keyPath)
        let compiled: CompiledKeyPath
        if let cached = keyPathCache[key] {
            compiled = cached
        } else {
            compiled = try model.compile(keyPath, for: entity < 0 ? nil : model.entities[entity].name)
            if keyPathCache.count >= 4096 { keyPathCache.removeAll(keepingCapacity: true) }
            keyPathCache[key] = compiled
        }
        if recentEntities.count < 8 {
            recentEntities.append(entity)
            recentKeyPaths.append(keyPath)
            recentCompiled.append(compiled)
        } else {
            recentEntities[nextRecent] = entity
            recentKeyPaths[nextRecent] = keyPath
            recentCompiled[nextRecent] = compiled
            nextRecent = (nextRecent + 1) % 8
        }
        return compiled
    }

    // MARK: Compaction

    /// Drops the tombstones of tables that are mostly dead, renumbering rows everywhere they are referenced.
    ///
    /// Runs after a commit; invalidates every `ObjectHandle` (none may be outstanding then).
    func compactIfNeeded() {
        for entity in tables.indices {
            let table = tables[entity]
            guard table.deadCount > 1024, table.deadCount > table.liveCount else { continue }
            compact(entity)
        }
    }

    private func compact(_ entity: Int) {
        layoutGeneration += 1
        let old = tables[entity]
        let fresh = EntityTable(entity: model.entities[entity])
        var newRow = [Int32](repeating: -1, count: old.rowCount)
        for row in 0..<old.rowCount where old.alive[row] {
            newRow[row] = Int32(fresh.appendRow(id: old.ids[row], attributes: old.attributeValues(of: row), version: 0))
            let target = fresh.rowCount - 1
            fresh.versions[target] = old.versions[row]
            for slot in 0..<old.toOneCount {
                fresh.toOne[target * fresh.toOneCount + slot] = old.toOne[row * old.toOneCount + slot]
            }
            for slot in 0..<old.toManyCount {
                fresh.toMany[target * fresh.toManyCount + slot] = old.toMany[row * old.toManyCount + slot]
            }
        }
        tables[entity] = fresh
        for description in model.entities {
            let table = tables[description.index]
            for relationship in description.relationships where relationship.destinationIndex == entity {
                if relationship.isToMany {
                    var index = relationship.slot
                    while index < table.toMany.count {
                        table.toMany[index] = table.toMany[index].map { newRow[Int($0)] }
                        index += table.toManyCount
                    }
                } else {
                    var index = relationship.slot
                    while index < table.toOne.count {
                        let row = table.toOne[index]
                        if row >= 0 { table.toOne[index] = newRow[Int(row)] }
                        index += table.toOneCount
                    }
                }
            }
        }
    }
}
