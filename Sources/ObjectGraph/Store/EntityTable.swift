import PropertyList

/// The objects of one entity, stored column-wise: one row per object, values in flat slot arrays.
///
/// Row `r`'s attribute `s` is `attributes[r * attributeCount + s]`; to-one slot `s` is `toOne[r * toOneCount + s]`
/// (the destination's row, `-1` for nil); to-many slot `s` is `toMany[r * toManyCount + s]` (destination rows, in
/// order). Deleted rows stay as tombstones (`alive[r] == false`, values cleared, id kept for change records) until
/// `ObjectStore` compacts the table after a commit, so rows — and the insertion order that listings follow — are
/// stable within a transaction. Per object this costs the id (16 bytes plus its index entry), a version, a flag,
/// 4 bytes per to-one and 8 per to-many beyond the values themselves.
final class EntityTable {
    let attributeCount: Int
    let toOneCount: Int
    let toManyCount: Int
    var ids: [String] = []
    var rowByID: [String: Int32] = [:]
    var versions: [Int64] = []
    var alive: [Bool] = []
    var liveCount = 0
    var attributes: [PropertyListValue] = []
    var toOne: [Int32] = []
    var toMany: [[Int32]] = []

    init(entity: EntityDescription) {
        attributeCount = entity.attributes.count
        toOneCount = entity.toOneCount
        toManyCount = entity.toManyCount
    }

    var rowCount: Int { ids.count }
    var deadCount: Int { ids.count - liveCount }

    func row(of id: String) -> Int? {
        rowByID[id].map(Int.init)
    }

    /// Appends a live row; returns its index.
    func appendRow(id: String, attributes values: [PropertyListValue], version: Int64) -> Int {
        let row = ids.count
        ids.append(id)
        rowByID[id] = Int32(row)
        versions.append(version)
        alive.append(true)
        liveCount += 1
        attributes.append(contentsOf: values)
        toOne.append(contentsOf: repeatElement(-1, count: toOneCount))
        toMany.append(contentsOf: repeatElement([], count: toManyCount))
        return row
    }

    /// Removes the last row (undoing `appendRow`).
    func popRow() {
        let row = ids.count - 1
        if alive[row] {
            liveCount -= 1
            rowByID[ids[row]] = nil
        }
        ids.removeLast()
        versions.removeLast()
        alive.removeLast()
        attributes.removeLast(attributeCount)
        toOne.removeLast(toOneCount)
        toMany.removeLast(toManyCount)
    }

    /// Marks a row deleted and clears its attributes; its relationships must already be empty.
    func tombstone(_ row: Int) {
        alive[row] = false
        liveCount -= 1
        rowByID[ids[row]] = nil
        let base = row * attributeCount
        for slot in 0..<attributeCount { attributes[base + slot] = .null }
    }

    /// Brings a tombstoned row back with its attribute values (undoing `tombstone`).
    func revive(_ row: Int, attributes values: [PropertyListValue]) {
        alive[row] = true
        liveCount += 1
        rowByID[ids[row]] = Int32(row)
        let base = row * attributeCount
        for slot in 0..<attributeCount { attributes[base + slot] = values[slot] }
    }

    func attributeValues(of row: Int) -> [PropertyListValue] {
        let base = row * attributeCount
        return Array(attributes[base..<base + attributeCount])
    }

    /// The live rows, in insertion order.
    var liveRows: [Int] {
        var rows: [Int] = []
        rows.reserveCapacity(liveCount)
        for row in 0..<ids.count where alive[row] { rows.append(row) }
        return rows
    }
}
