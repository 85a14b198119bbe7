import ObjectGraph
import PropertyList

/// One change as the change feeds and observers deliver it (API.md §7).
///
/// `target` is `Entity/id` (or `controllers/NAME`, `defaults`); the JSON form leaves out what the asker's options
/// exclude.
public struct FeedChange: Sendable, Hashable {
    public var seq: Int64
    public var target: String
    public var keyPath: String
    public var kind: Change.Kind
    public var old: PropertyListValue?
    public var new: PropertyListValue?
    public var indexes: [Int]?
    public var prior = false

    public init(
        seq: Int64, target: String, keyPath: String, kind: Change.Kind, old: PropertyListValue? = nil,
        new: PropertyListValue? = nil, indexes: [Int]? = nil, prior: Bool = false
    ) {
        self.seq = seq
        self.target = target
        self.keyPath = keyPath
        self.kind = kind
        self.old = old
        self.new = new
        self.indexes = indexes
        self.prior = prior
    }

    /// The entity of an object target (`Employee` of `Employee/42`), else nil.
    public var entity: Substring? {
        guard let slash = target.firstIndex(of: "/"), !target.hasPrefix("controllers/") else { return nil }
        return target[..<slash]
    }

    /// The JSON form; `old` and `new` only when asked for.
    public func json(includingOld: Bool = true, includingNew: Bool = true) -> PropertyListValue {
        var json: [String: PropertyListValue] = [
            "seq": .integer(seq), "target": .string(target), "keyPath": .string(keyPath),
            "kind": .string(kind.rawValue),
        ]
        if includingOld, let old { json["old"] = old }
        if includingNew, let new { json["new"] = new }
        if let indexes { json["indexes"] = .array(indexes.map { .integer(Int64($0)) }) }
        if prior { json["prior"] = true }
        return .dictionary(json)
    }

    /// The feed's changes for one committed record: every change of a stored attribute or relationship.
    ///
    /// A created object contributes a `setting` of each non-null attribute (from null); a deleted one a `setting`
    /// of each non-null attribute to null (its relationships were emptied by changes of their own). Relationships are
    /// told apart from attributes by `model` (an `any` attribute may hold `[]`, as an empty to-many does). Replacing the
    /// whole graph (`PUT /store`, `revertToSaved`, a fixture) is one `setting` of `objects` on the target `store`,
    /// without values, followed by a `setting` of every stored key whose value it changed (as for created and deleted
    /// objects, from or to null for objects it added or removed); those replacements are returned too.
    static func changes(of record: ChangeRecord, model: ObjectModel) -> (
        changes: [FeedChange], replacements: [GraphReplacement]
    ) {
        var result: [FeedChange] = []
        var replacements: [GraphReplacement] = []
        for change in record.changes {
            switch change.kind {
            case .setting, .insertion, .removal, .replacement:
                guard let target = change.target, let key = change.key else { continue }
                result.append(
                    FeedChange(
                        seq: record.seq, target: target.description, keyPath: key, kind: change.kind, old: change.old,
                        new: change.new, indexes: change.indexes))
            case .creation, .deletion:
                guard let target = change.target else { continue }
                let values = (change.kind == .creation ? change.new : change.old)?.dictionaryValue ?? [:]
                let entity = model.entity(named: target.entity)
                for (key, value) in values.sorted(by: { $0.key < $1.key }) {
                    guard !key.hasPrefix("$"), !value.isNull, entity?.relationship(named: key) == nil else { continue }
                    let created = change.kind == .creation
                    result.append(
                        FeedChange(
                            seq: record.seq, target: target.description, keyPath: key, kind: .setting,
                            old: created ? .null : value, new: created ? value : .null))
                }
            case .reset:
                result.append(FeedChange(seq: record.seq, target: "store", keyPath: "objects", kind: .setting))
                let replacement = GraphReplacement(old: change.old, new: change.new, model: model)
                replacements.append(replacement)
                for setting in replacement.settings {
                    result.append(
                        FeedChange(
                            seq: record.seq, target: setting.target, keyPath: setting.key, kind: .setting,
                            old: setting.old, new: setting.new))
                }
            }
        }
        return (result, replacements)
    }
}
