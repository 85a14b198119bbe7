import ObjectGraph
import PropertyList

/// NSArrayController: the content, filtered then sorted into `arrangedObjects`, with a selection by indexes.
///
/// Arranging decorates each object with its sort keys once and keeps them (`arrangedKeys`), so that with
/// `automaticallyRearrangesObjects` a change to one object's sort or filter key is handled by taking it out and
/// putting it back with a binary search (O(log n) comparisons plus one array shift) instead of a full re-sort.
/// `insert` places an object at the asked index, unsorted (`isSorted` false) until the next full rearrangement.
///
/// Selection rules (Cocoa's, as NSArrayController and Cappuccino's CPArrayController apply them):
/// - re-arranging keeps the selected objects selected when `preservesSelection`, else keeps the indexes (clipped;
///   when objects were only removed, the indexes after them shift down, dropping the removed ones);
/// - when the selected objects disappear (removed, filtered out) and `avoidsEmptySelection`, the neighbour is
///   selected: the object now at the first formerly selected index, or the last one; when the whole content was
///   replaced (a master's selection changed) the first object is;
/// - an empty selection set by a client is honoured until a client selects again or the content is replaced
///   (a master's selection changed); otherwise new content with nothing selected selects its first object when
///   `avoidsEmptySelection`;
/// - indexes past the end are dropped.
final class ArrayController: Controller {
    var arranged: [ObjectID] = []
    /// Each arranged object's sort keys (parallel to `arranged`; empty without sort descriptors).
    var arrangedKeys: [SortOrdering.Keys] = []
    /// False after `insert` placed an object out of order, or after a sort key of the arranged objects changed while
    /// `automaticallyRearrangesObjects` is off: until the next full rearrangement.
    var isSorted = true
    /// A sort or filter key of the arranged objects changed while `automaticallyRearrangesObjects` is off: the
    /// arrangement is not what a full one would be until the next (a content change then re-arranges whole).
    var isStale = false
    /// Sorted, unique, in range.
    var selectionIndexes: [Int] = []
    var ordering = SortOrdering([])
    /// Keys whose change on a content object changes its own place (first steps of the sort and filter key paths).
    var directKeys: Set<String> = []
    /// Keys whose change on another object may change the arrangement (later steps, derived keys' paths).
    var indirectKeys: Set<String> = []
    /// The keys of `directKeys` and `indirectKeys` that the sort descriptors read (not only the filter).
    var sortKeys: Set<String> = []

    override init(description: ControllerDescription, isDeclared: Bool) {
        super.init(description: description, isDeclared: isDeclared)
        ordering = SortOrdering(description.sortDescriptors)
    }

    override var selectedObjects: [ObjectID] { selectionIndexes.map { arranged[$0] } }

    /// As NSArrayController's: relative to `selectionIndex`, the first selected index, also when several are
    /// selected (`selectNext:` from `[2, 4]` selects `[3]`).
    override var canSelectNext: Bool {
        guard let first = selectionIndexes.first else { return false }
        return first + 1 < arranged.count
    }

    override var canSelectPrevious: Bool {
        guard let first = selectionIndexes.first else { return false }
        return first > 0
    }

    // MARK: Updating

    override func update(_ cause: UpdateCause, in context: ControllerContext) {
        if case .full = cause { computeWatchedKeys(model: context.model) }
        // Any commit may change a selected object's key paths, also one that changes the content (every way out of
        // here): reported while something is selected (observers of the controller re-read).
        defer { if case .record = cause, !selectionIndexes.isEmpty { context.emit(self, .selection) } }
        // Kept only when needed: held, it would make the content set's update in place a copy.
        let oldContent = ownInsertions > 0 ? contentSet : []
        var contentChange: (added: [ObjectID], removed: Set<ObjectID>)?
        if refreshContent(cause, in: context) {
            // The controller's own `insert` adds to the content, and places the object itself: what is arranged
            // (earlier insertions among it, unsorted) keeps its order.
            if ownInsertions > 0, contentSet.isSuperset(of: oldContent), case .record = cause, !cause.replacesGraph {
                appendUnsorted(content.filter { !oldContent.contains($0) }, in: context)
                return
            }
            // Few objects came in or left, the others in the same order: placed one by one, as a full
            // re-arrangement would place them (the stable sort orders equal keys by content order), without reading
            // and sorting every object again.
            guard case .record = cause, !cause.replacesGraph, let change = contentDifference,
                !ordering.descriptors.isEmpty, isSorted, !isStale
            else {
                rearrange(in: context, contentChanged: true)
                return
            }
            contentChange = change
        }
        guard case .record(let record) = cause else { return }
        var candidates: [ObjectID] = []
        var needsFull = false
        var touchesContent = false
        var changesKeys = false
        var touchesSort = false
        var touchesArrangement = false
        for change in record.changes where change.isKeyChange {
            guard let key = change.key, let target = change.target else { continue }
            let isMember = contentSet.contains(target)
            changesKeys = true
            touchesContent = touchesContent || isMember
            touchesSort = touchesSort || (sortKeys.contains(key) && (isMember || indirectKeys.contains(key)))
            touchesArrangement =
                touchesArrangement || (isMember && directKeys.contains(key)) || indirectKeys.contains(key)
            // Past `incrementalLimit` the arrangement is made whole anyway: no more candidates to look through.
            if isMember && directKeys.contains(key) && candidates.count <= Self.incrementalLimit
                && !candidates.contains(target)
            {
                candidates.append(target)
            }
            // A key can be both (`lastName` with `manager.lastName`): the change may move other objects too.
            if indirectKeys.contains(key) { needsFull = true }
        }
        if let contentChange {
            // A sort or filter key of an object that stayed changed too: the content is arranged whole, as it is
            // after any other change of the content.
            guard !needsFull, candidates.allSatisfy({ contentChange.added.contains($0) }) else {
                rearrange(in: context, contentChanged: true)
                return
            }
            rearrange(removing: contentChange.removed, adding: contentChange.added, in: context)
        }
        // Key paths through the arranged objects (`arrangedObjects.department.name`) read objects outside the
        // content: any change may be theirs, so any is reported while something is arranged, as the selection's
        // are while something is selected (the `defer` above; observers of the controller re-read).
        if touchesContent || (changesKeys && !arranged.isEmpty) { context.emit(self, .arrangedObjects) }
        if contentChange != nil { return }
        if !options.automaticallyRearrangesObjects && touchesSort && !ordering.descriptors.isEmpty { isSorted = false }
        if !options.automaticallyRearrangesObjects && touchesArrangement { isStale = true }
        guard options.automaticallyRearrangesObjects, needsFull || !candidates.isEmpty else { return }
        // Content that holds an object twice (a key path through to-manys) is re-arranged whole.
        if needsFull || candidates.count > Self.incrementalLimit || !isSorted || content.count != contentSet.count {
            rearrange(in: context)
        } else {
            rearrange(candidates, in: context)
        }
    }

    /// Fills `directKeys` and `indirectKeys` from the sort descriptors and the filter predicate.
    func computeWatchedKeys(model: ObjectModel) {
        let sort = description.sortDescriptors.map(\.key)
        (directKeys, indirectKeys) = model.keys(of: sort + (description.filterPredicate?.keyPaths ?? []))
        let sortOnly = model.keys(of: sort)
        sortKeys = sortOnly.direct.union(sortOnly.indirect)
    }

    // MARK: Arranging

    /// Filters and sorts the whole content (NSArrayController's `rearrangeObjects`), then re-selects.
    func rearrange(in context: ControllerContext, contentChanged: Bool = false) {
        let view = context.view
        let oldArranged = arranged
        let oldSelection = selectionIndexes
        let oldSelected = selectedObjects
        let filtered =
            description.filterPredicate == nil ? content : content.filter { passesFilter($0, view: view) }
        if ordering.descriptors.isEmpty {
            arranged = filtered
            arrangedKeys = []
        } else {
            let keys = filtered.map { ordering.readKeys(of: $0, view: view) }
            let order = ordering.order(of: keys)
            arranged = order.map { filtered[$0] }
            arrangedKeys = order.map { keys[$0] }
        }
        isSorted = true
        isStale = false
        if arranged != oldArranged { context.emit(self, .arrangedObjects) }
        reselect(
            after: oldArranged, selection: oldSelection, selected: oldSelected, contentChanged: contentChanged,
            in: context)
    }

    /// Selects again after the arranged objects changed from `oldArranged`: the objects selected before when
    /// `preservesSelection`, else the indexes (see the type's comment).
    private func reselect(
        after oldArranged: [ObjectID], selection oldSelection: [Int], selected oldSelected: [ObjectID],
        contentChanged: Bool, in context: ControllerContext
    ) {
        var selection: [Int]
        if options.preservesSelection {
            selection = indexes(of: oldSelected)
        } else if let shifted = Self.shiftedIndexes(oldSelection, from: oldArranged, to: arranged) {
            selection = shifted
        } else {
            selection = oldSelection.filter { $0 < arranged.count }
        }
        if selection.isEmpty, options.avoidsEmptySelection, !arranged.isEmpty {
            if let first = oldSelection.first {
                let replaced = contentChanged && !oldArranged.contains { contentSet.contains($0) }
                selection = [replaced ? 0 : min(first, arranged.count - 1)]
            } else if !explicitlyEmpty {
                selection = [0]
            }
        }
        setSelection(selection, in: context, changed: selection != oldSelection || selectedObjects != oldSelected)
    }

    /// Takes each object out and puts it back where its keys now go (`automaticallyRearrangesObjects`); the selected
    /// objects move with them, or without `preservesSelection` the selection is made again as `rearrange(in:)` does.
    func rearrange(_ objects: [ObjectID], in context: ControllerContext) {
        let view = context.view
        let oldArranged = arranged
        let oldSelection = selectionIndexes
        let oldSelected = selectedObjects
        var selection = selectionIndexes
        if ordering.descriptors.isEmpty
            && objects.contains(where: { !arranged.contains($0) && passesFilter($0, view: view) })
        {
            rearrange(in: context)
            return
        }
        for object in objects {
            var wasSelected = false
            var oldIndex: Int?
            if let index = arranged.firstIndex(of: object) {
                oldIndex = index
                wasSelected = Self.remove(index, from: &selection)
                arranged.remove(at: index)
                if !arrangedKeys.isEmpty { arrangedKeys.remove(at: index) }
            }
            if passesFilter(object, view: view) {
                let index: Int
                if ordering.descriptors.isEmpty {
                    index = oldIndex ?? arranged.count
                } else {
                    let keys = ordering.readKeys(of: object, view: view)
                    // Among equal keys, content order: where the stable full sort (`rearrangeObjects`) puts it.
                    let position = contentPosition(of: object) ?? Int.max
                    index = ordering.insertionIndex(
                        for: keys, count: arranged.count, keysAt: { arrangedKeys[$0] },
                        precedes: { position < self.contentPosition(of: self.arranged[$0]) ?? Int.max })
                    arrangedKeys.insert(keys, at: index)
                }
                arranged.insert(object, at: index)
                Self.insert(index, into: &selection, selecting: wasSelected)
            } else if wasSelected, selection.isEmpty, options.avoidsEmptySelection, !arranged.isEmpty, let oldIndex {
                selection = [min(oldIndex, arranged.count - 1)]
            }
        }
        context.emit(self, .arrangedObjects)
        guard options.preservesSelection else {
            reselect(
                after: oldArranged, selection: oldSelection, selected: oldSelected, contentChanged: false,
                in: context)
            return
        }
        setSelection(selection, in: context, changed: selection != selectionIndexes || selectedObjects != oldSelected)
    }

    /// Takes the objects that left the content out of the arranged objects and places those that came in where their
    /// keys go (a binary search each; among equal keys by content order), then selects again as a full
    /// re-arrangement does.
    private func rearrange(removing removed: Set<ObjectID>, adding added: [ObjectID], in context: ControllerContext) {
        let view = context.view
        let oldArranged = arranged
        let oldSelection = selectionIndexes
        let oldSelected = selectedObjects
        // Found by comparing (cheaper than hashing every arranged object), and removed from the last.
        let indexes = removed.compactMap { arranged.firstIndex(of: $0) }.sorted(by: >)
        for index in indexes {
            arranged.remove(at: index)
            arrangedKeys.remove(at: index)
        }
        for object in added where passesFilter(object, view: view) {
            let keys = ordering.readKeys(of: object, view: view)
            let index = ordering.insertionIndex(
                for: keys, count: arranged.count, keysAt: { arrangedKeys[$0] },
                precedes: {
                    (self.contentPosition(of: object) ?? Int.max)
                        < (self.contentPosition(of: self.arranged[$0]) ?? Int.max)
                })
            arranged.insert(object, at: index)
            arrangedKeys.insert(keys, at: index)
        }
        if arranged != oldArranged { context.emit(self, .arrangedObjects) }
        reselect(
            after: oldArranged, selection: oldSelection, selected: oldSelected, contentChanged: true, in: context)
    }

    /// Adds `objects` (new in the content) at the end of the arranged objects, unsorted, those the filter passes.
    private func appendUnsorted(_ objects: [ObjectID], in context: ControllerContext) {
        let added = objects.filter { passesFilter($0, view: context.view) && !arranged.contains($0) }
        guard !added.isEmpty else { return }
        arranged += added
        if !ordering.descriptors.isEmpty {
            arrangedKeys += added.map { ordering.readKeys(of: $0, view: context.view) }
            isSorted = false
        }
        context.emit(self, .arrangedObjects)
    }

    /// Puts `object` at `index` of the arranged objects, unsorted (NSArrayController's
    /// `insertObject:atArrangedObjectIndex:`); selects it when `selectsInsertedObjects`. An object the filter hides
    /// is not placed (`insert` refuses one, but a later commit may have changed it since).
    func place(_ object: ObjectID, at index: Int, in context: ControllerContext) {
        guard contentSet.contains(object), passesFilter(object, view: context.view) else { return }
        let oldSelected = selectedObjects
        var selection = selectionIndexes
        var wasSelected = false
        if let current = arranged.firstIndex(of: object) {
            wasSelected = Self.remove(current, from: &selection)
            arranged.remove(at: current)
            if !arrangedKeys.isEmpty { arrangedKeys.remove(at: current) }
        }
        let index = min(max(index, 0), arranged.count)
        arranged.insert(object, at: index)
        if !ordering.descriptors.isEmpty {
            arrangedKeys.insert(ordering.readKeys(of: object, view: context.view), at: index)
        }
        isSorted = ordering.descriptors.isEmpty
        Self.insert(index, into: &selection, selecting: wasSelected)
        if options.selectsInsertedObjects { selection = [index] }
        context.emit(self, .arrangedObjects)
        setSelection(selection, in: context, changed: selection != selectionIndexes || selectedObjects != oldSelected)
    }

    // MARK: Selection

    /// Stores a new selection and reports it.
    func setSelection(_ selection: [Int], in context: ControllerContext, changed: Bool) {
        selectionIndexes = selection
        if !selection.isEmpty { explicitlyEmpty = false }
        if changed {
            context.emit(self, .selectionIndexes)
            context.emit(self, .selection)
        }
    }

    /// `setSelectionIndexes:` from a client: out-of-range indexes are dropped; an empty selection is honoured. When
    /// every asked index is out of range and `avoidsEmptySelection`, the last object is selected.
    func selectIndexes(_ indexes: [Int], in context: ControllerContext) {
        var selection = Array(Set(indexes.filter { $0 >= 0 && $0 < arranged.count })).sorted()
        if selection.isEmpty, !indexes.isEmpty, options.avoidsEmptySelection, !arranged.isEmpty {
            selection = [arranged.count - 1]
        }
        let oldSelected = selectedObjects
        let changed = selection != selectionIndexes
        selectionIndexes = selection
        explicitlyEmpty = selection.isEmpty
        setSelection(selection, in: context, changed: changed || selectedObjects != oldSelected)
    }

    override func setSelectedObjects(_ objects: [ObjectID], in context: ControllerContext) {
        selectIndexes(indexes(of: objects), in: context)
    }

    /// The arranged indexes of `objects` (those that are arranged), sorted.
    func indexes(of objects: [ObjectID]) -> [Int] {
        if objects.isEmpty { return [] }
        if objects.count <= 8 {
            return objects.compactMap { arranged.firstIndex(of: $0) }.sorted()
        }
        let wanted = Set(objects)
        return arranged.indices.filter { wanted.contains(arranged[$0]) }
    }

    /// Removes `index` from a sorted selection and shifts the later ones down; answers whether it was selected.
    static func remove(_ index: Int, from selection: inout [Int]) -> Bool {
        let was = selection.contains(index)
        selection = selection.compactMap { $0 == index ? nil : ($0 > index ? $0 - 1 : $0) }
        return was
    }

    /// Shifts the indexes at or after `index` up, and adds `index` when `selecting`.
    static func insert(_ index: Int, into selection: inout [Int], selecting: Bool) {
        selection = selection.map { $0 >= index ? $0 + 1 : $0 }
        if selecting {
            selection.append(index)
            selection.sort()
        }
    }

    /// When `new` is `old` with some objects removed, the selection with removed indexes dropped and the later ones
    /// shifted down; nil otherwise.
    static func shiftedIndexes(_ selection: [Int], from old: [ObjectID], to new: [ObjectID]) -> [Int]? {
        guard new.count <= old.count else { return nil }
        var mapping = [Int?](repeating: nil, count: old.count)
        var next = 0
        for (index, object) in old.enumerated() where next < new.count && new[next] == object {
            mapping[index] = next
            next += 1
        }
        guard next == new.count else { return nil }
        return selection.compactMap { $0 < mapping.count ? mapping[$0] : nil }
    }

    // MARK: State

    override func stateFields(in context: ControllerContext) -> [String: PropertyListValue] {
        [
            "selectionIndexes": .array(selectionIndexes.map { .integer(Int64($0)) }),
            "count": .integer(Int64(arranged.count)),
            "isSorted": .boolean(isSorted),
        ]
    }
}

extension SortOrdering {
    /// The sort keys of `object` (values that cannot be read sort as null).
    func readKeys(of object: ObjectID, view: ReadView) -> Keys {
        if let keys = try? keys(of: .object(object), resolver: view) { return keys }
        return (try? keys(of: .null, resolver: view)) ?? emptyKeys
    }

    /// Null for every descriptor, without reading anything: the keys of a subject none of whose keys can be read
    /// (a key path the model refuses, which `checkArrangement` reports once the controller is made).
    fileprivate var emptyKeys: Keys {
        // NullResolver never throws.
        try! keys(of: .null, resolver: NullResolver())
    }
}

/// Resolves every key path to null.
private struct NullResolver: KeyPathResolving {
    func value(forKeyPath keyPath: String, of subject: KeyValue) throws -> KeyValue { .null }
}

extension ObjectModel {
    /// The keys of `keyPaths`, sorted as `collectKeys` sorts them.
    func keys(of keyPaths: [String]) -> (direct: Set<String>, indirect: Set<String>) {
        var direct: Set<String> = []
        var indirect: Set<String> = []
        for path in keyPaths { collectKeys(of: path, direct: &direct, indirect: &indirect) }
        return (direct, indirect)
    }

    /// Sorts the keys of `keyPath` into the first step (`direct`) and the rest (`indirect`), following derived keys.
    func collectKeys(of keyPath: String, direct: inout Set<String>, indirect: inout Set<String>, depth: Int = 0) {
        let keys = keyPath.split(separator: ".").map(String.init).filter { !$0.hasPrefix("@") && $0 != "SELF" }
        for (position, key) in keys.enumerated() {
            if position == 0 && depth == 0 { direct.insert(key) } else { indirect.insert(key) }
            guard depth < 4 else { continue }
            for entity in entities {
                guard let derived = entity.derivedKey(named: key) else { continue }
                var innerDirect: Set<String> = []
                collectKeys(of: derived.keyPath, direct: &innerDirect, indirect: &indirect, depth: depth + 1)
                if position == 0 && depth == 0 {
                    let first = derived.keyPath.split(separator: ".").first.map(String.init)
                    if let first, !first.hasPrefix("@") { direct.insert(first) }
                }
                indirect.formUnion(innerDirect)
            }
        }
    }
}
