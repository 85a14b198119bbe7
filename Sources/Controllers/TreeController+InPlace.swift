import ObjectGraph
import PropertyList

/// Updating a tree in place: a committed record that changes a few nodes' children, sort or filter keys, or the
/// content by a few objects, edits only the lists of siblings it touches, placing nodes that come in or move with a
/// binary search each (among equal keys by their order in the children key path, or in the content for the roots,
/// as the stable sort of a rebuild has them), and keeping every other node with its descendants. The tree, the
/// placements and the selection come out as a rebuild makes them (`rebuild(in:)`); whatever the update in place
/// does not follow (a later step of a key path, a stale or truncated tree, a large change) is rebuilt instead.
extension TreeController {
    /// What a committed record changes in the tree, for an update in place.
    struct Edits {
        /// Objects whose children or leaf key changed: their nodes' children are read again.
        var renewed: [ObjectID] = []
        /// Objects placed again among their siblings, and in or out of the roots: a sort or filter key changed, or
        /// the placement of an insertion was forgotten.
        var moved: [ObjectID] = []
        /// A change that an update in place does not follow (a later step of a key path): the tree is rebuilt.
        var isPossible = true

        /// Notes a change of `key` on `target` that changes the tree.
        mutating func note(_ target: ObjectID, key: String, inTree: Bool, of tree: TreeController) {
            // Past the limit (a large change), nothing more is noted.
            guard isPossible else { return }
            guard inTree, !tree.indirectKeys.contains(key) else {
                isPossible = false
                return
            }
            if tree.structureKeys.contains(key), !renewed.contains(target) { renewed.append(target) }
            if tree.orderKeys.contains(key), !moved.contains(target) { moved.append(target) }
            if renewed.count + moved.count > TreeController.incrementalLimit { isPossible = false }
        }

        /// Forgets `placements`: their nodes are sorted among their siblings again.
        mutating func forget(_ placements: inout [(object: ObjectID, placement: Placement)]) {
            merge(Edits(moved: placements.map(\.object)))
            placements = []
        }

        /// Adds the edits of another record of the same batch.
        mutating func merge(_ other: Edits) {
            isPossible = isPossible && other.isPossible
            guard isPossible else { return }
            for object in other.renewed where !renewed.contains(object) { renewed.append(object) }
            for object in other.moved where !moved.contains(object) { moved.append(object) }
            if renewed.count + moved.count > TreeController.incrementalLimit { isPossible = false }
        }
    }

    /// Applies `record` to the tree in place and re-selects as a rebuild does; false (nothing changed) when the tree
    /// must be rebuilt instead.
    ///
    /// The lists are edited where they are, not copied (the tree before is not kept: what re-selecting needs of it is
    /// noted first), so every reason to rebuild instead is checked before the first edit.
    func updateInPlace(
        _ record: ChangeRecord, _ edits: Edits, contentChanged: Bool, in context: ControllerContext
    ) -> Bool {
        // The objects whose sort or filter keys changed unarranged are placed again, as a rebuild would place them.
        var edits = edits
        edits.merge(Edits(moved: staleObjects))
        // The content's difference is known only when small; a content holding an object twice is rebuilt, as are
        // placements under an object shown along several paths (a rebuild places them at its first node), and levels
        // the sort descriptors could not order.
        let difference = contentChanged ? contentDifference : nil
        let placedRoots = placements.filter { $0.placement.parent == nil }.map(\.object)
        guard edits.isPossible, !isTruncated, !isStale, unsortedLevels.isEmpty, content.count == contentSet.count,
            !contentChanged || difference != nil,
            edits.moved.count + placedRoots.count + (difference?.added.count ?? 0) <= Self.incrementalLimit,
            placements.allSatisfy({ $0.placement.parent.map { (nodeCounts[$0] ?? 0) <= 1 } ?? true })
        else { return false }
        let view = context.view
        var memory = SelectionMemory(selection: selectionIndexPaths, in: roots, neighbours: false)
        // The neighbours of a vanished selection (a long list to note) when the selection may vanish: its paths may
        // end (without `preservesSelection`), or an object along them changed, was deleted, left the content or lost
        // its placement (a node leaves its list by a change of its parent's children, or of its own sort, filter or
        // leaf keys, or when the filter hid it but its placement showed it).
        if options.avoidsEmptySelection && !memory.selection.isEmpty {
            let touched = Set(record.changes.compactMap(\.target)).union(record.deleted).union(edits.moved)
            if !options.preservesSelection
                || memory.chains.contains(where: {
                    $0.contains { touched.contains($0) || difference?.removed.contains($0) == true }
                })
            {
                memory.noteNeighbours(in: roots)
            }
        }
        let oldSelected = selectedObjects
        var building = Building(budget: .max)
        var changed = false
        // The lists of children to edit, deepest first: an edit moves only the nodes of its own list, so the paths of
        // the shallower ones stay valid.
        var parents: [[Int]] = []
        var prefix: [Int] = []
        func find(_ nodes: [Node]) {
            for index in nodes.indices {
                prefix.append(index)
                if edits.renewed.contains(nodes[index].object)
                    || nodes[index].children.contains(where: { edits.moved.contains($0.object) })
                {
                    parents.append(prefix)
                }
                if !nodes[index].children.isEmpty { find(nodes[index].children) }
                prefix.removeLast()
            }
        }
        find(roots)
        parents.sort { $0.count > $1.count }
        for path in parents {
            let chain = Self.objects(along: path, in: roots)
            modifyNode(at: path[...], in: &roots) { node in
                changed =
                    renew(&node, ancestors: chain, depth: path.count - 1, record, edits, view, &building) || changed
            }
        }
        if contentChanged || !edits.moved.isEmpty || !placedRoots.isEmpty {
            var ancestors: Set<ObjectID> = []
            changed =
                edit(
                    &roots, under: nil, leaving: difference?.removed ?? [], moving: edits.moved + placedRoots,
                    entering: difference?.added ?? [], ancestors: &ancestors, depth: 0, view, &building) || changed
        }
        staleObjects = []
        let added = building.counts.values.reduce(0, +)
        // Past the node limit: rebuilt, which cuts the tree there (the selection as it was noted; the neighbours of a
        // selected node the cut takes away only if the record touched its path).
        guard nodeCount + added <= Self.maxNodes else {
            if changed { context.emit(self, .arrangedObjects) }
            rebuild(in: context, memory: memory)
            return true
        }
        nodeCount += added
        for (object, change) in building.counts where change != 0 {
            let count = (nodeCounts[object] ?? 0) + change
            nodeCounts[object] = count > 0 ? count : nil
        }
        placements.removeAll { nodeCounts[$0.object] == nil }
        if changed {
            treeDidChange()
            context.emit(self, .arrangedObjects)
        }
        reselect(memory, selected: oldSelected, in: context)
        return true
    }

    /// Shows a root an insertion placed where the filter hides it as an update in place places such a root: its node
    /// built and put where the sort and its placement put it, every other node kept (a rebuild of a 150,000-node tree
    /// took 0.6-1.2 s for it). False (nothing changed) when the tree must be rebuilt instead.
    func showPlacedRoot(_ object: ObjectID, in context: ControllerContext) -> Bool {
        guard !isTruncated, !isStale, unsortedLevels.isEmpty, content.count == contentSet.count,
            contentSet.contains(object)
        else { return false }
        var building = Building(budget: .max)
        var ancestors: Set<ObjectID> = []
        // (Past the node limit the rebuild cuts the tree; it builds every node again from the content, whatever the
        // edit left.)
        guard
            edit(
                &roots, under: nil, leaving: [], moving: [object], entering: [], ancestors: &ancestors, depth: 0,
                context.view, &building)
        else { return false }
        let added = building.counts.values.reduce(0, +)
        guard nodeCount + added <= Self.maxNodes else { return false }
        nodeCount += added
        for (object, change) in building.counts where change != 0 {
            nodeCounts[object] = (nodeCounts[object] ?? 0) + change
        }
        treeDidChange()
        context.emit(self, .arrangedObjects)
        return true
    }

    /// Gives `node` (at `depth`; `ancestors` are the objects from its root down to it, itself included) its
    /// children as the model has them now: read again when its children or leaf key changed; the children whose sort
    /// keys changed placed again. Whether the node or its children changed.
    private func renew(
        _ node: inout Node, ancestors chain: [ObjectID], depth: Int, _ record: ChangeRecord, _ edits: Edits,
        _ view: ReadView, _ building: inout Building
    ) -> Bool {
        let object = node.object
        var ancestors = Set(chain)
        // Among equal keys, the children key path's order, read if needed.
        let order = {
            TieOrder.children((try? view.value(forKeyPath: self.childrenKeyPath, of: object)) ?? .collection([]))
        }
        let placed = placements.filter { $0.placement.parent == object }.map(\.object)
        // Its children whose sort keys changed, or whose placement was forgotten.
        let moving = node.children.compactMap { edits.moved.contains($0.object) ? $0.object : nil }
        guard edits.renewed.contains(object) else {
            return edit(
                &node.children, under: object, leaving: [], moving: moving + placed, entering: [],
                ancestors: &ancestors, depth: depth + 1, view, &building, order: order)
        }
        var isLeaf = false
        if let leafKeyPath = description.leafKeyPath {
            isLeaf = (try? view.value(forKeyPath: leafKeyPath, of: object)) == .value(.boolean(true))
        }
        let shown = !node.isLeaf && !node.isCut
        // The children that came and went, from the record's insertions and removals (an object removed and
        // inserted again moved), without reading them all; read whole when the record does not tell (a setting, a
        // longer key path), or the node showed no children before.
        // (A node that leads back to its ancestors, or would, is read whole: whether it does is read so.)
        if !isLeaf, shown, !node.leadsBack, depth < Self.maxDepth, view.contains(object),
            entitiesWithChildren.contains(object.entity), let change = childrenChange(of: object, in: record),
            change.entering.count + change.moving.count <= Self.incrementalLimit,
            !change.entering.contains(where: ancestors.contains)
        {
            return edit(
                &node.children, under: object, leaving: change.leaving, moving: moving + change.moving + placed,
                entering: change.entering, ancestors: &ancestors, depth: depth + 1, view, &building, order: order)
        }
        let old = node
        guard !isLeaf, let value = try? view.value(forKeyPath: childrenKeyPath, of: object) else {
            drop(node.children, &building)
            node = Node(object: object, children: [], isLeaf: isLeaf)
            return node != old
        }
        // By comparison: a path's few objects (cheaper than hashing every child).
        let all = value.objectIDs
        let childObjects = all.filter { !chain.contains($0) }
        let leadsBack = childObjects.count < all.count
        if depth >= Self.maxDepth {
            drop(node.children, &building)
            node = Node(object: object, children: [], isLeaf: false, isCut: !childObjects.isEmpty, leadsBack: leadsBack)
            return node != old
        }
        // Read whole: the nodes of the children that stay are kept.
        var kept: [ObjectID: Node] = [:]
        for child in node.children where kept[child.object] == nil { kept[child.object] = child }
        let children = sorted(childObjects, under: object, view: view).map { child in
            kept.removeValue(forKey: child)
                ?? build(child, ancestors: &ancestors, depth: depth + 1, view: view, building: &building)
        }
        drop(Array(kept.values), &building)
        node = Node(object: object, children: children, isLeaf: false, leadsBack: leadsBack)
        let isChild = { (object: ObjectID) in children.contains { $0.object == object } }
        reanchorPlacements(under: object, before: old.children, stays: isChild, enters: isChild)
        applyPlacements(under: object, to: &node.children)
        return node != old
    }

    /// Edits `nodes` (siblings under `parent`, nil for the roots) in place: the nodes of `leaving` taken out, the
    /// objects of `moving` (those still among them) and of `entering` placed where the sort puts them (a binary
    /// search each), then the placements of insertions applied. Equal keys are ordered by `order` (the children key
    /// path's order, read when first needed; the content's for the roots). Whether the list changed.
    private func edit(
        _ nodes: inout [Node], under parent: ObjectID?, leaving: Set<ObjectID>, moving: [ObjectID],
        entering: [ObjectID], ancestors: inout Set<ObjectID>, depth: Int, _ view: ReadView,
        _ building: inout Building, order readOrder: (() -> TieOrder)? = nil
    ) -> Bool {
        // Where the nodes taken out were (a few objects looked for by comparison, cheaper than hashing every node).
        let few = leaving.count <= 16 ? Array(leaving) : nil
        var taken: [ObjectID: Int] = [:]
        if !leaving.isEmpty || !moving.isEmpty {
            for index in nodes.indices {
                let object = nodes[index].object
                if few?.contains(object) ?? leaving.contains(object) || moving.contains(object) {
                    taken[object] = index
                }
            }
        }
        var placing: [ObjectID] = []
        for object in moving + entering where !placing.contains(object) && !leaving.contains(object) {
            // A moved child is placed again where it still is; a moved root if the content has it and the filter
            // (or its placement) shows it.
            let member =
                parent == nil
                ? contentSet.contains(object)
                    && (placements.contains { $0.object == object && $0.placement.parent == nil }
                        || passesFilter(object, view: view))
                : taken[object] != nil || entering.contains(object)
            if member { placing.append(object) }
        }
        reanchorPlacements(
            under: parent, before: nodes, stays: { taken[$0] == nil || placing.contains($0) },
            enters: { placing.contains($0) })
        var kept: [ObjectID: Node] = [:]
        if taken.count <= Self.incrementalLimit {
            // Each taken out where it is, from the last (cheaper than hashing every node).
            for index in taken.values.sorted(by: >) { kept[nodes[index].object] = nodes.remove(at: index) }
        } else {
            nodes.removeAll { node in
                guard taken[node.object] != nil else { return false }
                kept[node.object] = node
                return true
            }
        }
        var order: TieOrder?
        var changed = false
        for object in placing {
            // Keys that cannot be read sort as null (a rebuild would leave the list unsorted; a model's undefined
            // key leaves it so at the first build, and such a tree is not updated in place).
            let keys = ordering.readKeys(of: object, view: view)
            // Among equal keys, after those that come before it in the children key path (or the content), as a
            // stable sort puts it: positions found by comparison, for the few equals the search meets (cheaper than
            // indexing every position), from the end, where insertions mostly go.
            var own: Int?
            func precedes(_ other: ObjectID) -> Bool {
                if order == nil { order = readOrder?() ?? .content(content) }
                guard let order else { return false }
                if own == nil { own = order.lastIndex(of: object) ?? order.count }
                return order.contains(other, from: own!)
            }
            var (at, high) = (0, nodes.count)
            while at < high {
                let middle = at + (high - at) / 2
                let other = nodes[middle].object
                switch ordering.compare(keys, ordering.readKeys(of: other, view: view)) {
                case .orderedAscending: high = middle
                case .orderedSame where precedes(other): high = middle
                default: at = middle + 1
                }
            }
            if let node = kept.removeValue(forKey: object) {
                nodes.insert(node, at: at)
            } else {
                nodes.insert(
                    build(object, ancestors: &ancestors, depth: depth, view: view, building: &building), at: at)
                changed = true
            }
        }
        drop(Array(kept.values), &building)
        applyPlacements(under: parent, to: &nodes)
        // Unchanged when nothing came or went and every node taken out is back at its index.
        return changed || !kept.isEmpty
            || taken.contains { object, index in !nodes.indices.contains(index) || nodes[index].object != object }
    }

    /// The order that decides among equal keys: the children key path's, or the content's for the roots.
    enum TieOrder {
        case content([ObjectID])
        case children(KeyValue)

        var count: Int {
            switch self {
            case .content(let objects): objects.count
            case .children(.collection(let elements)): elements.count
            case .children: 0
            }
        }

        func object(at index: Int) -> ObjectID? {
            switch self {
            case .content(let objects): return objects[index]
            case .children(.collection(let elements)):
                if case .object(let object) = elements[index] { return object }
                return nil
            case .children: return nil
            }
        }

        func lastIndex(of object: ObjectID) -> Int? {
            (0..<count).reversed().first { self.object(at: $0) == object }
        }

        /// Whether `object` is at `start` or after it.
        func contains(_ object: ObjectID, from start: Int) -> Bool {
            (start..<max(start, count)).contains { self.object(at: $0) == object }
        }
    }

    /// The children of `parent` that the record's insertions and removals brought in and took out, and those removed
    /// and inserted again (moved); nil when the children key path is not one stored to-many, or the record set or
    /// replaced it.
    private func childrenChange(of parent: ObjectID, in record: ChangeRecord) -> (
        entering: [ObjectID], leaving: Set<ObjectID>, moving: [ObjectID]
    )? {
        guard storesChildren else { return nil }
        var entering: [ObjectID] = []
        var leaving: Set<ObjectID> = []
        var moving: [ObjectID] = []
        for change in record.changes where change.target == parent && change.key == childrenKeyPath {
            switch change.kind {
            case .insertion:
                for object in change.new?.arrayValue?.compactMap(Self.reference) ?? [] {
                    if leaving.remove(object) != nil { moving.append(object) } else { entering.append(object) }
                }
            case .removal:
                for object in change.old?.arrayValue?.compactMap(Self.reference) ?? [] {
                    if let index = entering.firstIndex(of: object) {
                        entering.remove(at: index)
                    } else {
                        moving.removeAll { $0 == object }
                        leaving.insert(object)
                    }
                }
            default: return nil
            }
        }
        return (entering, leaving, moving)
    }

    private static func reference(_ value: PropertyListValue) -> ObjectID? {
        value["$ref"]?.stringValue.flatMap(ObjectID.init(reference:))
    }

    /// A placement under `parent` (nil: the roots) after a sibling that has left its children (deleted, moved,
    /// filtered out) is put after the sibling that came before that one in `before` (the children as they were), so
    /// that the node stays where it was shown. `stays` tells whether an object of `before` is still among them,
    /// `enters` whether another object now is.
    func reanchorPlacements(
        under parent: ObjectID?, before: [Node], stays: (ObjectID) -> Bool, enters: (ObjectID) -> Bool
    ) {
        for index in placements.indices where placements[index].placement.parent == parent {
            guard case .after(let anchor) = placements[index].placement.position else { continue }
            let anchorIndex = before.firstIndex { $0.object == anchor }
            guard !(anchorIndex.map { _ in stays(anchor) } ?? enters(anchor)) else { continue }
            let stayed = before[..<(anchorIndex ?? 0)].last { stays($0.object) }
            placements[index].placement.position = stayed.map { .after($0.object) } ?? .first
        }
    }

    /// Applies the placements under `parent` to its children `nodes`, in order.
    func applyPlacements(under parent: ObjectID?, to nodes: inout [Node]) {
        for (object, placement) in placements where placement.parent == parent {
            Self.place(object, placement, in: &nodes)
        }
    }

    /// Counts the nodes of `nodes` and their descendants out.
    private func drop(_ nodes: [Node], _ building: inout Building) {
        for node in nodes {
            building.counts[node.object, default: 0] -= 1
            drop(node.children, &building)
        }
    }

    /// The index paths of every node of `object`.
    func paths(of object: ObjectID) -> [[Int]] {
        guard nodeCounts[object] != nil else { return [] }
        var found: [[Int]] = []
        var prefix: [Int] = []
        func walk(_ nodes: [Node]) {
            for (index, node) in nodes.enumerated() {
                prefix.append(index)
                if node.object == object { found.append(prefix) }
                walk(node.children)
                prefix.removeLast()
            }
        }
        walk(roots)
        return found
    }

    /// Changes the node at `path` of `nodes` in place (only the lists along the path are copied, if shared).
    func modifyNode(
        at path: ArraySlice<Int>, in nodes: inout [Node], _ body: (inout Node) -> Void
    ) {
        guard let index = path.first else { return }
        if path.count == 1 {
            body(&nodes[index])
        } else {
            modifyNode(at: path.dropFirst(), in: &nodes[index].children, body)
        }
    }
}
