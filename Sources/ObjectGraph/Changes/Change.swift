import PropertyList

/// One primitive change of a committed transaction: a key of one object set, or elements inserted into, removed
/// from or replaced in a to-many; or an object created or deleted; or the whole graph replaced.
///
/// Values are JSON-ready (API.md §1; objects as `{"$ref": "Entity/id"}`). For `setting`, `old` and `new` are the
/// whole values (a to-many as an array of refs). For `insertion`, `removal` and `replacement` (to-many only),
/// `indexes` are positions in the relationship (of the new list for insertion, of the old one for removal), and
/// `new` / `old` the arrays of inserted / removed refs, as Cocoa's KVO change dictionary has them. `creation`
/// carries in `new` the object's attributes (relationships follow as their own changes); `deletion` carries in
/// `old` the object's whole stored form as it was before the transaction deleted it (relationships included; the
/// changes that emptied them come before it). `reset` (`replaceGraph`, fixtures) has no target and carries the old
/// and new graphs as `{"objects": [...]}`.
public struct Change: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case setting
        case insertion
        case removal
        case replacement
        case creation
        case deletion
        case reset
    }

    public var kind: Kind
    /// The changed object; nil for `reset`.
    public var target: ObjectID?
    /// The attribute or relationship; nil for `creation`, `deletion` and `reset`.
    public var key: String?
    public var old: PropertyListValue?
    public var new: PropertyListValue?
    public var indexes: [Int]?

    public init(
        kind: Kind, target: ObjectID?, key: String? = nil, old: PropertyListValue? = nil,
        new: PropertyListValue? = nil, indexes: [Int]? = nil
    ) {
        self.kind = kind
        self.target = target
        self.key = key
        self.old = old
        self.new = new
        self.indexes = indexes
    }

    /// Whether this is a change of a stored attribute or relationship (what KVO and `/changes` report).
    public var isKeyChange: Bool {
        switch kind {
        case .setting, .insertion, .removal, .replacement: true
        case .creation, .deletion, .reset: false
        }
    }
}
