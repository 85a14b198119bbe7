import PropertyList

/// What the versions of a snapshot are, and how the journal records after it moved them (its format says;
/// `ObjectStore.restore(binarySnapshot:convertingEarlierVersions:)`, `ObjectStore.apply(_:versions:)`).
public enum SnapshotVersions: Sendable, Equatable {
    /// The ETags answered (`BNDSNAP3`): records move them by today's rule.
    case answered
    /// Each object's own last change (`BNDSNAP2`): a record moved the versions of the objects it changed, a
    /// whole-graph change every object's but those it left as they were.
    case own
    /// Each object's own last change, written before a whole-graph change kept any version (`BNDSNAP1`): such a
    /// change moved every object's.
    case ownBeforeKeptVersions
}

/// A compact binary form of the whole store for the document's snapshots: written straight from the column tables
/// and read straight back into them, so a million objects load in well under a second (the JSON snapshot of
/// `ReadView.snapshot()` goes through `replaceGraph` and is several times slower).
///
/// Layout (little-endian): `"BNDSNAP3"`, seq (i64), contentSeq (i64), lastAssignedID (i64), the entity count (u32),
/// then per entity (model order): its name, attribute names (slot order), relationship names each with a to-many flag
/// byte, the live row count (u32), then per live row in insertion order: id, version (i64), attribute values, to-one
/// destination rows (i32, -1 for nil), and per to-many a count and its destination rows. Rows are renumbered densely
/// (tombstones are left out). Strings are a u32 byte count and UTF-8; values are a tag byte and a payload. The format
/// holds no checksum: the file that carries it does. Earlier versions wrote `"BNDSNAP2"`, the same but for what a
/// version is (an object's own last change: the versions of what its derived keys read were added when it was read),
/// and `"BNDSNAP1"`, as 2 without contentSeq; both still read, their versions made what those versions answered,
/// and a contentSeq missing taken to be the seq.
extension ReadView {
    /// The store as a binary snapshot (see the extension's comment); O(objects), under the store's lock.
    public func binarySnapshot() -> [UInt8] {
        let tables = state.tables
        var renumbered: [[Int32]] = []
        var estimate = 64
        for table in tables {
            var rows = [Int32](repeating: -1, count: table.rowCount)
            var next: Int32 = 0
            for row in 0..<table.rowCount where table.alive[row] {
                rows[row] = next
                next += 1
            }
            renumbered.append(rows)
            estimate += table.liveCount * (40 + 12 * table.attributeCount + 4 * table.toOneCount)
        }
        var writer = BinarySnapshotWriter(capacity: estimate)
        writer.bytes.append(contentsOf: ObjectStore.binarySnapshotMagic)
        writer.append(state.seq)
        writer.append(state.contentSeq)
        writer.append(state.lastAssignedID)
        writer.append(UInt32(tables.count))
        for (index, entity) in state.model.entities.enumerated() {
            writer.append(entity.name)
            writer.append(UInt32(entity.attributes.count))
            for attribute in entity.attributes { writer.append(attribute.name) }
            writer.append(UInt32(entity.relationships.count))
            for relationship in entity.relationships {
                writer.append(relationship.name)
                writer.append(UInt8(relationship.isToMany ? 1 : 0))
            }
            let table = tables[index]
            writer.append(UInt32(table.liveCount))
            let toOneDestinations = entity.relationships.filter { !$0.isToMany }.sorted { $0.slot < $1.slot }
            let toManyDestinations = entity.relationships.filter(\.isToMany).sorted { $0.slot < $1.slot }
            for row in 0..<table.rowCount where table.alive[row] {
                writer.append(table.ids[row])
                writer.append(table.versions[row])
                let base = row * table.attributeCount
                for slot in 0..<table.attributeCount { writer.append(table.attributes[base + slot]) }
                for relationship in toOneDestinations {
                    let destination = table.toOne[row * table.toOneCount + relationship.slot]
                    writer.append(destination < 0 ? -1 : renumbered[relationship.destinationIndex][Int(destination)])
                }
                for relationship in toManyDestinations {
                    let destinations = table.toMany[row * table.toManyCount + relationship.slot]
                    writer.append(UInt32(destinations.count))
                    let map = renumbered[relationship.destinationIndex]
                    for destination in destinations { writer.append(map[Int(destination)]) }
                }
            }
        }
        return writer.bytes
    }
}

extension ObjectStore {
    static let binarySnapshotMagic = Array("BNDSNAP3".utf8)
    /// The format with versions of the objects' own changes only, written by earlier versions.
    private static let binarySnapshotMagicWithOwnVersions = Array("BNDSNAP2".utf8)
    /// The same without `contentSeq`.
    private static let binarySnapshotMagicWithoutContentSeq = Array("BNDSNAP1".utf8)

    /// The seq and the content seq (`ReadView.contentSeq`) a binary snapshot holds, read from its first 24 bytes
    /// (`bytes` may be just those); nil when they do not begin a binary snapshot.
    public static func binarySnapshotSeqs(_ bytes: [UInt8]) -> (seq: Int64, contentSeq: Int64)? {
        let seqs = bytes.withUnsafeBytes { raw in
            Result { () throws(ObjectGraphError) -> (seq: Int64, contentSeq: Int64) in
                var reader = BinarySnapshotReader(raw)
                let header = try readHeader(&reader)
                return (header.seq, header.contentSeq)
            }
        }
        return try? seqs.get()
    }

    /// Reads the magic and the seqs; a snapshot without `contentSeq` has its seq for it.
    private static func readHeader(
        _ reader: inout BinarySnapshotReader
    ) throws(ObjectGraphError) -> (seq: Int64, contentSeq: Int64, versions: SnapshotVersions) {
        var magic: [UInt8] = []
        for _ in 0..<8 { magic.append(try reader.byte()) }
        switch magic {
        case binarySnapshotMagic, binarySnapshotMagicWithOwnVersions:
            let seq = try reader.int64()
            return (seq, try reader.int64(), magic == binarySnapshotMagic ? .answered : .own)
        case binarySnapshotMagicWithoutContentSeq:
            let seq = try reader.int64()
            return (seq, seq, .ownBeforeKeptVersions)
        default:
            throw BinarySnapshotReader.bad("not a Bindery snapshot.")
        }
    }

    /// Replaces the whole state with a binary snapshot from `ReadView.binarySnapshot()`: objects in their order,
    /// ids, versions, seq, content seq and id counter.
    ///
    /// For recovery: no hooks run and no record is made. The snapshot must have been written for the same model
    /// (same entities, attribute and relationship names in the same order; 500 `bad-snapshot` otherwise), and every
    /// row reference is range-checked; the values are trusted (they were validated when they were committed, and the
    /// file's checksum vouches for them). On error nothing changes.
    ///
    /// Answers what the snapshot's versions are (its format says): those of an earlier format are made what that
    /// version answered. Journal records that version wrote after it are replayed on the objects' own versions, as
    /// that version moved them: restore with `convertingEarlierVersions` false, `apply` each record with the versions
    /// answered here, then `addDerivedReadsToVersions()` once.
    @discardableResult
    public func restore(
        binarySnapshot bytes: [UInt8], convertingEarlierVersions: Bool = true
    ) throws(ObjectGraphError) -> SnapshotVersions {
        try read { (view: ReadView) throws(ObjectGraphError) -> SnapshotVersions in
            let state = view.state
            let loaded = try bytes.withUnsafeBytes { raw in
                Result { () throws(ObjectGraphError) in
                    var reader = BinarySnapshotReader(raw)
                    return try Self.readTables(&reader, model: state.model)
                }
            }.get()
            state.tables = loaded.tables
            state.seq = loaded.seq
            state.contentSeq = loaded.contentSeq
            state.lastAssignedID = loaded.lastAssignedID
            if loaded.versions != .answered && convertingEarlierVersions { state.addDerivedReadsToVersions() }
            return loaded.versions
        }
    }

    /// Makes each object's version at least the newest own version of the objects its derived keys read (what
    /// versions before `BNDSNAP3` answered), once the versions of a snapshot of that format and of the journal records
    /// after it are in; never lowers one. O(objects with derived keys).
    public func addDerivedReadsToVersions() {
        read { $0.state.addDerivedReadsToVersions() }
    }

    private static func readTables(
        _ reader: inout BinarySnapshotReader, model: ObjectModel
    ) throws(ObjectGraphError) -> (
        tables: [EntityTable], seq: Int64, contentSeq: Int64, lastAssignedID: Int64, versions: SnapshotVersions
    ) {
        let (seq, contentSeq, versions) = try readHeader(&reader)
        let lastAssignedID = try reader.int64()
        guard Int(try reader.uint32()) == model.entities.count else {
            throw BinarySnapshotReader.bad("it was written for another model (entity count differs).")
        }
        var tables: [EntityTable] = []
        var links: [(table: EntityTable, toOne: [Int], toMany: [Int])] = []
        for entity in model.entities {
            let table = EntityTable(entity: entity)
            try checkSchema(&reader, entity: entity)
            let rowCount = try reader.count()
            let toOne = entity.relationships.filter { !$0.isToMany }.sorted { $0.slot < $1.slot }
            let toMany = entity.relationships.filter(\.isToMany).sorted { $0.slot < $1.slot }
            table.ids.reserveCapacity(rowCount)
            table.rowByID.reserveCapacity(rowCount)
            table.versions.reserveCapacity(rowCount)
            table.alive = [Bool](repeating: true, count: rowCount)
            table.attributes.reserveCapacity(rowCount * table.attributeCount)
            table.toOne.reserveCapacity(rowCount * table.toOneCount)
            table.toMany.reserveCapacity(rowCount * table.toManyCount)
            for row in 0..<rowCount {
                let id = try reader.string()
                guard table.rowByID.updateValue(Int32(row), forKey: id) == nil else {
                    throw BinarySnapshotReader.bad("\(entity.name)/\(id) appears twice.")
                }
                table.ids.append(id)
                table.versions.append(try reader.int64())
                for _ in 0..<table.attributeCount { table.attributes.append(try reader.value()) }
                for _ in toOne { table.toOne.append(try reader.int32()) }
                for _ in toMany {
                    let count = try reader.count()
                    var rows: [Int32] = []
                    rows.reserveCapacity(count)
                    for _ in 0..<count { rows.append(try reader.int32()) }
                    table.toMany.append(rows)
                }
            }
            table.liveCount = rowCount
            tables.append(table)
            links.append((table, toOne.map(\.destinationIndex), toMany.map(\.destinationIndex)))
        }
        guard reader.isAtEnd else { throw BinarySnapshotReader.bad("it has bytes after the last entity.") }
        for (table, toOne, toMany) in links {
            for (offset, row) in table.toOne.enumerated() where row >= tables[toOne[offset % toOne.count]].rowCount {
                throw BinarySnapshotReader.bad("a to-one refers to row \(row), beyond its destination.")
            }
            for (offset, rows) in table.toMany.enumerated() {
                let limit = tables[toMany[offset % toMany.count]].rowCount
                if rows.contains(where: { $0 < 0 || $0 >= limit }) {
                    throw BinarySnapshotReader.bad("a to-many refers to a row beyond its destination.")
                }
            }
        }
        return (tables, seq, contentSeq, lastAssignedID, versions)
    }

    private static func checkSchema(
        _ reader: inout BinarySnapshotReader, entity: EntityDescription
    ) throws(ObjectGraphError) {
        var matches = try reader.string() == entity.name
        let attributeCount = Int(try reader.uint32())
        matches = matches && attributeCount == entity.attributes.count
        for index in 0..<attributeCount {
            let name = try reader.string()
            matches = matches && index < entity.attributes.count && entity.attributes[index].name == name
        }
        let relationshipCount = Int(try reader.uint32())
        matches = matches && relationshipCount == entity.relationships.count
        for index in 0..<relationshipCount {
            let name = try reader.string()
            let isToMany = try reader.byte() == 1
            matches =
                matches && index < entity.relationships.count && entity.relationships[index].name == name
                && entity.relationships[index].isToMany == isToMany
        }
        guard matches else {
            throw BinarySnapshotReader.bad(
                "it was written for another model (entity \(entity.name) differs); move the data directory away or "
                    + "export with the old model and import with the new one.")
        }
    }
}

extension GraphState {
    /// Makes the versions of a snapshot in an earlier format what that version answered: an object's own version,
    /// or the newest version of the objects its derived keys read when that is newer (it was added at each read
    /// then; `Transaction.moveVersions(to:)` moves readers' versions at commit now). O(objects with derived keys).
    func addDerivedReadsToVersions() {
        var moved: [(ObjectHandle, Int64)] = []
        for (entity, description) in model.entities.enumerated() where !description.derivedKeys.isEmpty {
            for row in tables[entity].liveRows {
                var evaluation = KeyPathEvaluation()
                evaluation.reads = []
                for derived in description.derivedKeys {
                    _ = try? evaluate(
                        derived.steps, on: .object(ObjectHandle(entity: entity, row: row)),
                        evaluation: &evaluation)
                }
                let own = tables[entity].versions[row]
                let newest = (evaluation.reads ?? []).reduce(own) { newest, key in
                    max(newest, tables[Int(key >> 32)].versions[Int(key & 0xffff_ffff)])
                }
                if newest > own { moved.append((ObjectHandle(entity: entity, row: row), newest)) }
            }
        }
        for (handle, version) in moved { tables[handle.entity].versions[handle.row] = version }
    }
}
