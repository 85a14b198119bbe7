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
            for (object, _) in placements where !moved.contains(object) { moved.append(object) }
            if renewed.count + moved.count > TreeController.incrementalLimit { isPossible = false }
            placements = []
        }
    }

    /// Gave up an update in place: the tree is rebuilt.
    private struct Rebuild: Error {}

    /// Applies `record` to the tree in place and re-selects as a rebuild does; false (nothing changed) when the tree
    /// must be rebuilt instead.
    func updateInPlace(
        _ record: ChangeRecord, _ edits: Edits, contentChanged: Bool, in context: ControllerContext
    ) -> Bool {
        // The content's difference is known only when small; a content holding an object twice is rebuilt, as are
        // placements under an object shown along several paths (a rebuild places them at its first node).
        guard edits.isPossible, !isTruncated, !isStale, content.count == contentSet.count,
            !contentChanged || contentDifference != nil,
            placements.allSatisfy({ $0.placement.parent.map { (nodeCounts[$0] ?? 0) <= 1 } ?? true })
        else { return false }
        let view = context.view
        let oldRoots = roots
        let oldSelection = selectionIndexPaths
        let oldSelected = selectedObjects
        var building = Building(budget: .max)
        do {
            // The lists of children to edit, deepest first: an edit moves only the nodes of its own list, so the
            // paths of the shallower ones stay valid.
            var parents: [[Int]] = []
            var prefix: [Int] = []
            func find(_ nodes: [Node]) {
                for (index, node) in nodes.enumerated() {
                    prefix.append(index)
                    if edits.renewed.contains(node.object)
                        || node.children.contains(where: { edits.moved.contains($0.object) })
                    {
                        parents.append(prefix)
                    }
                    find(node.children)
                    prefix.removeLast()
                }
            }
            find(roots)
            parents.sort { $0.count > $1.count }
            for path in parents {
                let chain = Self.objects(along: path, in: roots)
                try modifyNode(at: path[...], in: &roots) { node in
                    try renew(&node, ancestors: Set(chain), depth: path.count - 1, record, edits, view, &building)
                }
            }
            if contentChanged || !edits.moved.isEmpty {
                try editRoots(edits, contentChanged: contentChanged, view, &building)
            }
        } catch {
            roots = oldRoots
            return false
        }
        let added = building.counts.values.reduce(0, +)
        guard nodeCount + added <= Self.maxNodes else {
            roots = oldRoots
            return false
        }
        nodeCount += added
        for (object, change) in building.counts where change != 0 {
            let count = (nodeCounts[object] ?? 0) + change
            nodeCounts[object] = count > 0 ? count : nil
        }
        placements.removeAll { nodeCounts[$0.object] == nil }
        reselect(after: oldRoots, selection: oldSelection, selected: oldSelected, in: context)
        return true
    }

    /// Gives `node` (at `depth`; `ancestors` are the objects from its root down to it, itself included) its children as the model has them now: when
    /// its children or leaf key changed, read again; the children whose sort keys changed placed again.
    private func renew(
        _ node: inout Node, ancestors: Set<ObjectID>, depth: Int, _ record: ChangeRecord, _ edits: Edits,
        _ view: ReadView, _ building: inout Building
    ) throws {
        let object = node.object
        var ancestors = ancestors
        guard edits.renewed.contains(object) else {
            let moving = node.children.compactMap { edits.moved.contains($0.object) ? $0.object : nil }
            let placed = placements.filter { $0.placement.parent == object }.map(\.object)
            node.children = try edit(
                node.children, under: object, leaving: [], moving: moving + placed, entering: [],
                ancestors: &ancestors, depth: depth + 1, view, &building,
                order: { (try? view.value(forKeyPath: self.childrenKeyPath, of: object))?.objectIDs ?? [] })
            return
        }
        var isLeaf = false
        if let leafKeyPath = description.leafKeyPath {
            isLeaf = (try? view.value(forKeyPath: leafKeyPath, of: object)) == .value(.boolean(true))
        }
        guard !isLeaf, let value = try? view.value(forKeyPath: childrenKeyPath, of: object) else {
            drop(node.children, &building)
            node = Node(object: object, children: [], isLeaf: isLeaf)
            return
        }
        // By comparison: a path's few objects (cheaper than hashing every child).
        let chain = Array(ancestors)
        let childObjects = value.objectIDs.filter { !chain.contains($0) }
        if depth >= Self.maxDepth {
            drop(node.children, &building)
            node = Node(object: object, children: [], isLeaf: false, isCut: !childObjects.isEmpty)
            return
        }
        let shown = !node.isLeaf && !node.isCut
        node.isLeaf = false
        node.isCut = false
        // The children that came and went, from the record's insertions and removals (an object removed and
        // inserted again moved); read whole when the record does not tell (a setting, a longer key path).
        if shown, let change = childrenChange(of: object, in: record),
            change.entering.count + change.moving.count <= Self.incrementalLimit
        {
            let moving = node.children.compactMap { edits.moved.contains($0.object) ? $0.object : nil } + change.moving
            let placed = placements.filter { $0.placement.parent == object }.map(\.object)
            var edited = building
            // Each child once, as the children key path has them (else the record was not followed: read whole).
            if let children = try? edit(
                node.children, under: object, leaving: change.leaving, moving: moving + placed,
                entering: change.entering.filter { !ancestors.contains($0) }, ancestors: &ancestors,
                depth: depth + 1, view, &edited, order: { childObjects }),
                children.count == childObjects.count
            {
                node.children = children
                building = edited
                return
            }
        }
        // Read whole: the nodes of the children that stay are kept.
        var kept: [ObjectID: Node] = [:]
        for child in node.children where kept[child.object] == nil { kept[child.object] = child }
        let children = sorted(childObjects, under: object, view: view).map { child in
            kept.removeValue(forKey: child)
                ?? build(child, ancestors: &ancestors, depth: depth + 1, view: view, building: &building)
        }
        drop(Array(kept.values), &building)
        node.children = children
        applyPlacements(under: object, to: &node.children, before: children)
    }

    /// The roots after a content change, or after sort or filter keys of content objects changed.
    private func editRoots(_ edits: Edits, contentChanged: Bool, _ view: ReadView, _ building: inout Building) throws {
        let difference = contentChanged ? contentDifference : nil
        let placed = placements.filter { $0.placement.parent == nil }.map(\.object)
        let moving = edits.moved + placed
        guard !unsortedLevels.contains(nil), moving.count + (difference?.added.count ?? 0) <= Self.incrementalLimit
        else { throw Rebuild() }
        var ancestors: Set<ObjectID> = []
        roots = try edit(
            roots, under: nil, leaving: difference?.removed ?? [], moving: moving,
            entering: difference?.added ?? [], ancestors: &ancestors, depth: 0, view, &building)
    }

    /// `nodes` (siblings under `parent`, nil for the roots) without the nodes of `leaving`, with the objects of
    /// `moving` (those still among them) and `entering` placed where the sort puts them, then the placements of
    /// insertions applied. Equal keys are ordered by `order` (the children key path's order, read when first needed;
    /// the content's for the roots). Throws when the sort keys cannot be read (the list is then made whole).
    private func edit(
        _ nodes: [Node], under parent: ObjectID?, leaving: Set<ObjectID>, moving: [ObjectID], entering: [ObjectID],
        ancestors: inout Set<ObjectID>, depth: Int, _ view: ReadView, _ building: inout Building,
        order readOrder: (() -> [ObjectID])? = nil
    ) throws -> [Node] {
        guard !unsortedLevels.contains(parent) else { throw Rebuild() }
        var taken: [ObjectID: Node] = [:]
        var level = nodes
        if !leaving.isEmpty || !moving.isEmpty {
            level.removeAll { node in
                guard leaving.contains(node.object) || moving.contains(node.object) else { return false }
                taken[node.object] = node
                return true
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
        var order: [ObjectID]?
        for object in placing {
            let keys = try ordering.keys(of: .object(object), resolver: view)
            // Among equal keys, after those that come before it in the children key path (or the content), as a
            // stable sort puts it: positions found by comparison, for the few equals the search meets (cheaper than
            // indexing every position).
            var own: Int?
            let at = try ordering.insertionIndex(
                for: keys, count: level.count,
                keysAt: { try self.ordering.keys(of: .object(level[$0].object), resolver: view) },
                precedes: { index in
                    if order == nil { order = readOrder?() ?? self.content }
                    if own == nil { own = order?.firstIndex(of: object) ?? .max }
                    return own! < order?.firstIndex(of: level[index].object) ?? .max
                })
            let node =
                taken.removeValue(forKey: object)
                ?? build(object, ancestors: &ancestors, depth: depth, view: view, building: &building)
            level.insert(node, at: at)
        }
        drop(Array(taken.values), &building)
        applyPlacements(under: parent, to: &level, before: nodes)
        return level
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

    /// Re-anchors (see `reanchorPlacements`) and applies the placements under `parent` to its children `nodes`,
    /// which were `before` when the placements were applied last.
    func applyPlacements(under parent: ObjectID?, to nodes: inout [Node], before: [Node]) {
        guard placements.contains(where: { $0.placement.parent == parent }) else { return }
        for index in placements.indices where placements[index].placement.parent == parent {
            guard case .after(let anchor) = placements[index].placement.position,
                !nodes.contains(where: { $0.object == anchor })
            else { continue }
            let anchorIndex = before.firstIndex { $0.object == anchor } ?? 0
            let stayed = before[..<anchorIndex].last { old in nodes.contains { $0.object == old.object } }
            placements[index].placement.position = stayed.map { .after($0.object) } ?? .first
        }
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
        at path: ArraySlice<Int>, in nodes: inout [Node], _ body: (inout Node) throws -> Void
    ) rethrows {
        guard let index = path.first else { return }
        if path.count == 1 {
            try body(&nodes[index])
        } else {
            try modifyNode(at: path.dropFirst(), in: &nodes[index].children, body)
        }
    }
}
