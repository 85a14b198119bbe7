import PropertyList

extension ChangeRecord {
    /// The record as a property list (and so as JSON through the `PropertyList` codec), for the journal:
    /// `{"seq", "lastAssignedID", "changes": [{"kind", "target", "key", "old", "new", "indexes"}...], "inserted",
    /// "updated", "deleted"}` (absent `old`/`new` are left out; a null value is written as null), and `"from"` (the
    /// first seq) for a record that skips seqs.
    public var json: PropertyListValue {
        func ids(_ list: [ObjectID]) -> PropertyListValue { .array(list.map { .string($0.description) }) }
        var fields: [String: PropertyListValue] = [
            "seq": .integer(seq), "lastAssignedID": .integer(lastAssignedID),
            "changes": .array(changes.map(\.json)), "inserted": ids(inserted), "updated": ids(updated),
            "deleted": ids(deleted),
        ]
        if firstSeq != seq { fields["from"] = .integer(firstSeq) }
        return .dictionary(fields)
    }

    /// `json.jsonBytes()` written directly, without building the property list (the journal encodes every record):
    /// the same bytes, keys in sorted order.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 96 + 112 * changes.count)
        writer.append("{\"changes\":[")
        for (index, change) in changes.enumerated() {
            if index > 0 { writer.append(",") }
            change.write(to: &writer)
        }
        writer.append("],\"deleted\":")
        Self.write(deleted, to: &writer)
        if firstSeq != seq {
            writer.append(",\"from\":")
            writer.append(String(firstSeq))
        }
        writer.append(",\"inserted\":")
        Self.write(inserted, to: &writer)
        writer.append(",\"lastAssignedID\":")
        writer.append(String(lastAssignedID))
        writer.append(",\"seq\":")
        writer.append(String(seq))
        writer.append(",\"updated\":")
        Self.write(updated, to: &writer)
        writer.append("}")
        return writer.bytes
    }

    private static func write(_ ids: [ObjectID], to writer: inout JSONWriter) {
        writer.append("[")
        for (index, id) in ids.enumerated() {
            if index > 0 { writer.append(",") }
            writer.writeString(id.description)
        }
        writer.append("]")
    }

    /// Reads a record written by `json`; 400 `bad-change-record` when it is not one.
    public init(json: PropertyListValue) throws(ObjectGraphError) {
        guard case .integer(let seq) = json["seq"], case .array(let changes) = json["changes"] else {
            throw Self.bad("a change record needs \"seq\" and \"changes\".")
        }
        self.seq = seq
        switch json["from"] {
        case nil: self.firstSeq = seq
        case .integer(let first)? where first >= 1 && first <= seq: self.firstSeq = first
        default: throw Self.bad("\"from\" must be a seq no later than \"seq\".")
        }
        self.lastAssignedID = json["lastAssignedID"]?.integerValue ?? 0
        var list: [Change] = []
        list.reserveCapacity(changes.count)
        for change in changes { list.append(try Change(json: change)) }
        self.changes = list
        self.inserted = try Self.ids(json["inserted"])
        self.updated = try Self.ids(json["updated"])
        self.deleted = try Self.ids(json["deleted"])
    }

    private static func ids(_ value: PropertyListValue?) throws(ObjectGraphError) -> [ObjectID] {
        guard let value else { return [] }
        guard case .array(let elements) = value else { throw bad("object lists must be arrays.") }
        var result: [ObjectID] = []
        for element in elements {
            guard let text = element.stringValue, let id = ObjectID(reference: text) else {
                throw bad("\(element.jsonString()) is not an object id.")
            }
            result.append(id)
        }
        return result
    }

    static func bad(_ reason: String) -> ObjectGraphError {
        ObjectGraphError(status: 400, code: "bad-change-record", message: "Change record: \(reason)")
    }
}

extension Change {
    /// `{"kind", "target", "key", "old", "new", "indexes"}`, absent parts left out.
    public var json: PropertyListValue {
        var dictionary: [String: PropertyListValue] = ["kind": .string(kind.rawValue)]
        dictionary["target"] = target.map { .string($0.description) }
        dictionary["key"] = key.map(PropertyListValue.string)
        dictionary["old"] = old
        dictionary["new"] = new
        dictionary["indexes"] = indexes.map { .array($0.map { .integer(Int64($0)) }) }
        return .dictionary(dictionary)
    }

    /// `json` written directly, keys in sorted order (see `ChangeRecord.jsonBytes()`).
    func write(to writer: inout JSONWriter) {
        writer.append("{")
        if let indexes {
            writer.append("\"indexes\":[")
            for (position, index) in indexes.enumerated() {
                if position > 0 { writer.append(",") }
                writer.append(String(index))
            }
            writer.append("],")
        }
        if let key {
            writer.append("\"key\":")
            writer.writeString(key)
            writer.append(",")
        }
        writer.append("\"kind\":")
        writer.writeString(kind.rawValue)
        if let new {
            writer.append(",\"new\":")
            writer.write(new)
        }
        if let old {
            writer.append(",\"old\":")
            writer.write(old)
        }
        if let target {
            writer.append(",\"target\":")
            writer.writeString(target.description)
        }
        writer.append("}")
    }

    public init(json: PropertyListValue) throws(ObjectGraphError) {
        guard let text = json["kind"]?.stringValue, let kind = Kind(rawValue: text) else {
            throw ChangeRecord.bad("a change needs a \"kind\".")
        }
        self.kind = kind
        if let target = json["target"] {
            guard let text = target.stringValue, let id = ObjectID(reference: text) else {
                throw ChangeRecord.bad("\(target.jsonString()) is not an object id.")
            }
            self.target = id
        } else {
            self.target = nil
        }
        self.key = json["key"]?.stringValue
        self.old = json["old"]
        self.new = json["new"]
        if let indexes = json["indexes"] {
            guard case .array(let elements) = indexes else { throw ChangeRecord.bad("indexes must be an array.") }
            var list: [Int] = []
            for element in elements {
                guard case .integer(let index) = element else { throw ChangeRecord.bad("indexes must be integers.") }
                list.append(Int(index))
            }
            self.indexes = list
        } else {
            self.indexes = nil
        }
        if kind != .reset && target == nil { throw ChangeRecord.bad("a \(kind.rawValue) change needs a target.") }
    }
}
