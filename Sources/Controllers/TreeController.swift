import ObjectGraph
import PropertyList

/// NSTreeController: root objects from the content and the filter predicate, children through `childrenKeyPath`,
/// every level sorted by the sort descriptors; the selection is a list of index paths.
///
/// The tree is rebuilt when the content changes or a committed record changes a node's children or leaf key (and,
/// with `automaticallyRearrangesObjects`, a sort or filter key), so its structure always reflects the model; an
/// object is never a child of itself or of its descendants (cycles end there), and nodes go no deeper than
/// `maxDepth` levels. With `leafKeyPath`, a node whose value is true has no children.
final class TreeController: Controller {
    struct Node: Equatable {
        var object: ObjectID
        var children: [Node]
        var isLeaf: Bool
        /// It has children the tree does not show (at `maxDepth`, or past `maxNodes`): it takes no more.
        var isCut = false
        /// Some of its children are its own ancestors (a cycle in the model), not shown again there.
        var leadsBack = false
    }

    /// The tree (changed in place by an update: no observer on it, which would copy it at each change; whatever
    /// changes it calls `treeDidChange()`).
    var roots: [Node] = []
    /// Valid, unique, in depth-first order.
    var selectionIndexPaths: [[Int]] = []
    var ordering = SortOrdering([])
    /// Every object in the tree, with the number of its nodes (an object may be a node along several paths).
    var nodeCounts: [ObjectID: Int] = [:]
    /// The number of nodes.
    var nodeCount = 0
    override var size: Int { max(content.count, nodeCount) }
    /// The tree's objects in depth-first order, worked out when asked after a change (`arrangedObjects` read through
    /// key-value coding).
    var flattened: [ObjectID] {
        if let flattenedCache { return flattenedCache }
        var objects: [ObjectID] = []
        objects.reserveCapacity(nodeCount)
        func walk(_ nodes: [Node]) {
            for node in nodes {
                objects.append(node.object)
                walk(node.children)
            }
        }
        walk(roots)
        flattenedCache = objects
        return objects
    }
    private var flattenedCache: [ObjectID]?

    /// Forgets what was worked out from the tree before.
    func treeDidChange() {
        flattenedCache = nil
    }
    /// The nodes whose children the sort descriptors could not order (a key one of them does not have): they are in
    /// the order of the children key path, and an update in place orders them whole again (nil: the roots).
    var unsortedLevels: Set<ObjectID?> = []
    /// Keys whose change on a node or content object rebuilds the tree: children and leaf keys, and sort and filter
    /// keys with `automaticallyRearrangesObjects` (without it a changed sort or filter key waits for a
    /// re-arrangement, as an array controller's does).
    var watchedKeys: Set<String> = []
    /// Keys whose change on any object may change the tree (later steps of the key paths).
    var indirectKeys: Set<String> = []
    /// With `automaticallyRearrangesObjects`, the sort and filter keys (every step): their change re-arranges the
    /// tree, insertions' placements included, as an array controller re-sorts its inserted objects.
    var rearrangingKeys: Set<String> = []
    /// `childrenKeyPath` is a stored to-many relationship of every entity with children: a record's insertions into
    /// and removals from it tell how a node's children changed.
    var storesChildren = false
    /// Keys whose change on a node re-reads its children: the first steps of the children and leaf key paths.
    var structureKeys: Set<String> = []
    /// Keys whose change on a node or content object may move it among its siblings or in or out of the roots: the
    /// first steps of the sort and filter key paths (with or without `automaticallyRearrangesObjects`).
    var orderKeys: Set<String> = []
    /// Keys whose change on any object may reorder the tree (later steps of the sort and filter key paths).
    var indirectOrderKeys: Set<String> = []
    /// Nodes' objects whose sort or filter key changed while `automaticallyRearrangesObjects` is off: they stay where
    /// they are until the next change of the tree's structure, which places them again (a rebuild sorts every level).
    var staleObjects: [ObjectID] = []
    /// More than `incrementalLimit` such objects, or a later step of a sort or filter key path changed: the next
    /// change of the structure rebuilds the tree.
    var isStale = false
    /// The last rebuild stopped expanding at `maxNodes`.
    var isTruncated = false
    /// Where insertions put their nodes, in order: kept there, unsorted, through the controller's own later
    /// insertions, until the tree is re-arranged (`rearrangeObjects`, `fetch`, a new sort or filter) or its content
    /// changes elsewhere (API.md §5: content changes made elsewhere always re-arrange, as an array controller does).
    var placements: [(object: ObjectID, placement: Placement)] = []

    /// Where an insertion puts its node: among the children of `parent` (nil: among the roots), at `position`.
    struct Placement: Sendable {
        enum Position: Sendable {
            case first, last
            case after(ObjectID)
        }
        var parent: ObjectID?
        var position: Position
    }
    /// The most nodes a tree is built with: an object reached along several paths is a node on each, so a children
    /// key path that meets the same objects again (`department.employees`) would grow the tree exponentially.
    static let maxNodes = 200_000
    /// The levels below the roots a tree shows at most (its nodes' index paths are at most one longer).
    static let maxDepth = 64

    override init(description: ControllerDescription, isDeclared: Bool) {
        super.init(description: description, isDeclared: isDeclared)
        ordering = SortOrdering(description.sortDescriptors)
    }

    var childrenKeyPath: String { description.childrenKeyPath ?? "children" }

    override var selectedObjects: [ObjectID] { selectionIndexPaths.compactMap { Self.object(at: $0, in: roots) } }
    /// Each selected index path is a node's (`selectionIndexPaths` holds only valid ones).
    override var selectionCount: Int { selectionIndexPaths.count }

    /// `addChild:` and `insertChild:` need exactly one selected node whose children are a to-many relationship, and
    /// that is no leaf (NSTreeController disables adding children to a node its `leafKeyPath` says is a leaf).
    var canAddChild: Bool {
        guard options.editable, selectionIndexPaths.count == 1, let node = node(at: selectionIndexPaths[0]) else {
            return false
        }
        return !node.isLeaf && !node.isCut && selectionIndexPaths[0].count <= Self.maxDepth
            && entitiesWithChildren.contains(node.object.entity)
    }

    /// The entities whose objects have children: `childrenKeyPath` leads to a to-many relationship of theirs (in a
    /// tree of departments and their employees, not the employees).
    var entitiesWithChildren: Set<String> = []

    // MARK: Building

    override func update(_ cause: UpdateCause, in context: ControllerContext) {
        // A replaced graph is new content made elsewhere: re-arranged, as an array controller re-arranges it.
        if cause.replacesGraph { placements = [] }
        let contentChanged = refreshContent(cause, in: context)
        var needsRebuild = contentChanged
        var edits = Edits()
        switch cause {
        case .full:
            needsRebuild = true
            computeWatchedKeys(model: context.model)
        case .masters: break
        case .record(let record):
            var touchesTree = false
            var changesKeys = false
            var rearranges = false
            for change in record.changes {
                guard let target = change.target, let key = change.key else { continue }
                changesKeys = true
                let inTree = nodeCounts[target] != nil || contentSet.contains(target)
                touchesTree = touchesTree || inTree
                if inTree ? watchedKeys.contains(key) : indirectKeys.contains(key) {
                    needsRebuild = true
                    rearranges = rearranges || rearrangingKeys.contains(key)
                    edits.note(target, key: key, inTree: inTree, of: self)
                }
                if !options.automaticallyRearrangesObjects && !isStale {
                    if indirectOrderKeys.contains(key) { isStale = true }
                    if inTree && orderKeys.contains(key) && !staleObjects.contains(target) {
                        staleObjects.append(target)
                        if staleObjects.count > Self.incrementalLimit { isStale = true }
                    }
                }
            }
            if !contentChanged {
                // As an array controller's: key paths through the nodes read objects outside the tree too, and a
                // rebuild that moves nothing (a sort key changed in place) still changed what they read.
                if touchesTree || (changesKeys && !roots.isEmpty) { context.emit(self, .arrangedObjects) }
                if rearranges { edits.forget(&placements) }
            }
            if !selectionIndexPaths.isEmpty { context.emit(self, .selection) }
        }
        guard case .record(let record) = cause else {
            if needsRebuild { rebuild(in: context) }
            return
        }
        // Content made elsewhere (the model, the binding), not by an insertion of the controller's own.
        if needsRebuild && ownInsertions == 0 { edits.forget(&placements) }
        // The records of a batch are applied together with its last: the view is the state after it, so the earlier
        // ones alone would be applied to a tree that the view has moved past.
        var batch = pendingBatch ?? Batch()
        if needsRebuild { batch.add(record, edits, replacesGraph: cause.replacesGraph) }
        if contentChanged { batch.contentChanges += 1 }
        guard context.recordIsLatest else {
            pendingBatch = batch
            return
        }
        pendingBatch = nil
        guard let merged = batch.record else { return }
        // Content that changed twice (a master's selection moved between the records) has only its last difference.
        if batch.replacesGraph || batch.contentChanges > 1
            || !updateInPlace(merged, batch.edits, contentChanged: batch.contentChanges == 1, in: context)
        {
            rebuild(in: context)
        }
    }

    /// The records of a batch that change the tree, waiting for its last (`ControllerContext.recordIsLatest`).
    struct Batch {
        /// The records' changes, in order, as one record.
        var record: ChangeRecord?
        var edits = Edits()
        /// How many of the records changed the content (each change knows its difference from the one before).
        var contentChanges = 0
        var replacesGraph = false

        mutating func add(_ record: ChangeRecord, _ edits: Edits, replacesGraph: Bool) {
            if var merged = self.record {
                merged.seq = record.seq
                merged.changes += record.changes
                merged.inserted += record.inserted
                merged.deleted += record.deleted
                self.record = merged
            } else {
                self.record = record
            }
            self.edits.merge(edits)
            self.replacesGraph = self.replacesGraph || replacesGraph
        }
    }
    private var pendingBatch: Batch?

    func computeWatchedKeys(model: ObjectModel) {
        entitiesWithChildren = Set(
            model.entities.map(\.name).filter {
                model.relationship(from: $0, keyPath: childrenKeyPath)?.isToMany == true
            })
        var (direct, indirect) = model.keys(of: [childrenKeyPath] + [description.leafKeyPath].compactMap { $0 })
        structureKeys = direct
        storesChildren = entitiesWithChildren.allSatisfy {
            model.entity(named: $0)?.relationship(named: childrenKeyPath)?.isToMany == true
        }
        var rearranging: Set<String> = []
        let sortAndFilter = model.keys(
            of: description.sortDescriptors.map(\.key) + (description.filterPredicate?.keyPaths ?? []))
        orderKeys = sortAndFilter.direct
        indirectOrderKeys = sortAndFilter.indirect
        if options.automaticallyRearrangesObjects {
            direct.formUnion(sortAndFilter.direct)
            indirect.formUnion(sortAndFilter.indirect)
            rearranging = sortAndFilter.direct.union(sortAndFilter.indirect)
        }
        watchedKeys = direct.union(indirect)
        indirectKeys = indirect
        rearrangingKeys = rearranging
    }

    /// Re-arranges: every level sorted again, insertions' placements forgotten.
    func rearrange(in context: ControllerContext) {
        placements = []
        rebuild(in: context)
    }

    /// Rebuilds the tree and re-selects (the selected objects when `preservesSelection`, else the same paths), by
    /// `memory` when given (what re-selecting needs of the tree before, noted before the tree was changed).
    func rebuild(in context: ControllerContext, memory: SelectionMemory? = nil) {
        let view = context.view
        let oldRoots = roots
        let memory =
            memory
            ?? SelectionMemory(selection: selectionIndexPaths, in: roots, neighbours: options.avoidsEmptySelection)
        let oldSelected = selectedObjects
        // A root an insertion placed stays while its placement is kept (see `placements`), also when the filter
        // would hide it (as an array controller's added object does).
        let placedRoots = Set(placements.filter { $0.placement.parent == nil }.map(\.object))
        unsortedLevels = []
        let rootObjects = sorted(
            content.filter { placedRoots.contains($0) || passesFilter($0, view: view) }, under: nil, view: view)
        // Roots are nodes too; every one is shown.
        var building = Building(budget: Self.maxNodes - rootObjects.count)
        isTruncated = building.budget < 0
        var ancestors: Set<ObjectID> = []
        roots = rootObjects.map { build($0, ancestors: &ancestors, depth: 0, view: view, building: &building) }
        isTruncated = isTruncated || building.isTruncated
        isStale = false
        staleObjects = []
        nodeCounts = building.counts
        nodeCount = building.counts.values.reduce(0, +)
        placements.removeAll { nodeCounts[$0.object] == nil }
        reanchorPlacements(from: oldRoots)
        applyPlacements()
        treeDidChange()
        if roots != oldRoots { context.emit(self, .arrangedObjects) }
        reselect(memory, selected: oldSelected, in: context)
    }

    /// What re-selecting after a change needs of the tree before it: the objects along each selected path (the
    /// node's own last), and, for `avoidsEmptySelection`, the objects whose nodes may take the first selected node's
    /// place if it vanishes (see `neighbour(ofVanished:)`).
    struct SelectionMemory {
        var selection: [[Int]]
        var chains: [[ObjectID]]
        var neighbours: [ObjectID] = []

        init(selection: [[Int]], in roots: [Node], neighbours: Bool) {
            self.selection = selection
            chains = selection.map { TreeController.objects(along: $0, in: roots) }
            if neighbours { noteNeighbours(in: roots) }
        }

        mutating func noteNeighbours(in roots: [Node]) {
            guard let first = selection.first, let index = first.last else { return }
            // The sibling objects that followed it, then those before it, then its parent object.
            let parentPath = Array(first.dropLast())
            let parent = parentPath.isEmpty ? nil : TreeController.node(at: parentPath, in: roots)
            let siblings = parentPath.isEmpty ? roots : parent?.children ?? []
            if siblings.indices.contains(index) {
                neighbours = (siblings[(index + 1)...] + siblings[..<index].reversed()).map(\.object)
            }
            if let parent { neighbours.append(parent.object) }
        }

        /// The object of the node at selected `path` before, if it was one.
        func object(at index: Int) -> ObjectID? {
            chains[index].count == selection[index].count ? chains[index].last : nil
        }
    }

    /// What building nodes counted and spent: the nodes of each object (or the change of their number), and what is
    /// left of the `maxNodes` budget.
    struct Building {
        var budget: Int
        var isTruncated = false
        var counts: [ObjectID: Int] = [:]
    }

    /// The node of `object` at `depth` (the roots' is 0) and its descendants, as the model has them now (none of
    /// `ancestors` is a child again: cycles end there).
    func build(
        _ object: ObjectID, ancestors: inout Set<ObjectID>, depth: Int, view: ReadView, building: inout Building
    ) -> Node {
        building.counts[object, default: 0] += 1
        var isLeaf = false
        if let leafKeyPath = description.leafKeyPath {
            isLeaf = (try? view.value(forKeyPath: leafKeyPath, of: object)) == .value(.boolean(true))
        }
        guard !isLeaf, let value = try? view.value(forKeyPath: childrenKeyPath, of: object) else {
            return Node(object: object, children: [], isLeaf: isLeaf)
        }
        ancestors.insert(object)
        defer { ancestors.remove(object) }
        let all = value.objectIDs
        let childObjects = all.filter { !ancestors.contains($0) }
        let leadsBack = childObjects.count < all.count
        if childObjects.count > building.budget { building.isTruncated = true }
        if childObjects.count > building.budget || depth >= Self.maxDepth {
            return Node(object: object, children: [], isLeaf: false, isCut: !childObjects.isEmpty, leadsBack: leadsBack)
        }
        building.budget -= childObjects.count
        let children = sorted(childObjects, under: object, view: view).map {
            build($0, ancestors: &ancestors, depth: depth + 1, view: view, building: &building)
        }
        return Node(object: object, children: children, isLeaf: false, leadsBack: leadsBack)
    }

    /// Selects again after the tree changed from what `memory` noted: each selected node found again by the objects
    /// on its path when `preservesSelection`, else the same paths; then a neighbour when `avoidsEmptySelection`.
    func reselect(_ memory: SelectionMemory, selected oldSelected: [ObjectID], in context: ControllerContext) {
        let oldSelection = memory.selection
        var selection: [[Int]]
        if options.preservesSelection {
            // Each selected node found again by the objects on its path (an object may be a node along several paths,
            // and the paths' indexes move as siblings come and go), else the selected object where it is first.
            var finder = PathFinder(roots)
            selection = memory.chains.compactMap { chain in
                finder.path(along: chain) ?? chain.last.flatMap { finder.firstPath(of: $0) }
            }
        } else {
            // The same paths, but not those whose objects left the tree (removed), as an array controller drops the
            // indexes of removed objects.
            selection = oldSelection.indices.filter { index in
                node(at: oldSelection[index]) != nil
                    && (memory.object(at: index).map { nodeCounts[$0] != nil } ?? true)
            }.map { oldSelection[$0] }
        }
        if selection.isEmpty, options.avoidsEmptySelection, !roots.isEmpty {
            if let first = oldSelection.first {
                selection = [neighbour(ofVanished: first, candidates: memory.neighbours)]
            } else if !explicitlyEmpty {
                selection = [[0]]
            }
        }
        let normalizedSelection = normalized(selection)
        setSelection(
            normalizedSelection, in: context,
            changed: normalizedSelection != oldSelection || selectedObjects != oldSelected)
    }

    /// Re-anchors every placement whose anchor has left its parent's children since the tree was `oldRoots` (see
    /// `reanchorPlacements(under:before:stays:enters:)`), its parent found at its first node.
    func reanchorPlacements(from oldRoots: [Node]) {
        func siblings(under parent: ObjectID?, in nodes: [Node]) -> [Node] {
            guard let parent else { return nodes }
            return Self.indexPath(of: parent, in: nodes).flatMap { Self.node(at: $0, in: nodes)?.children } ?? []
        }
        var parents: [ObjectID?] = []
        for (_, placement) in placements where !parents.contains(placement.parent) { parents.append(placement.parent) }
        for parent in parents {
            let now = siblings(under: parent, in: roots)
            let isThere = { (object: ObjectID) in now.contains { $0.object == object } }
            reanchorPlacements(
                under: parent, before: siblings(under: parent, in: oldRoots), stays: isThere, enters: isThere)
        }
    }

    /// Moves each placed node where its insertion put it, in the order they were inserted (a placement after a
    /// sibling that is no longer there leaves the node where the sort put it).
    func applyPlacements() {
        guard !placements.isEmpty else { return }
        // One walk for the children's placements (an object may be a node along several paths).
        var byParent: [ObjectID: [(object: ObjectID, placement: Placement)]] = [:]
        for (object, placement) in placements {
            if let parent = placement.parent {
                byParent[parent, default: []].append((object, placement))
            } else {
                Self.place(object, placement, in: &roots)
            }
        }
        func walk(_ nodes: inout [Node]) {
            for index in nodes.indices {
                for (object, placement) in byParent[nodes[index].object] ?? [] {
                    Self.place(object, placement, in: &nodes[index].children)
                }
                walk(&nodes[index].children)
            }
        }
        if !byParent.isEmpty { walk(&roots) }
    }

    /// Moves the node of `object` among `nodes` where `placement` puts it; whether it moved.
    @discardableResult
    static func place(_ object: ObjectID, _ placement: Placement, in nodes: inout [Node]) -> Bool {
        guard let index = nodes.firstIndex(where: { $0.object == object }) else { return false }
        let node = nodes.remove(at: index)
        let target: Int
        switch placement.position {
        case .first: target = 0
        case .last: target = nodes.count
        case .after(let sibling): target = nodes.firstIndex { $0.object == sibling }.map { $0 + 1 } ?? index
        }
        nodes.insert(node, at: target)
        return target != index
    }

    /// The children of `parent` (nil: the roots) sorted by the sort descriptors, stably; in their order when the
    /// descriptors cannot order them (`unsortedLevels` notes it).
    func sorted(_ objects: [ObjectID], under parent: ObjectID?, view: ReadView) -> [ObjectID] {
        guard !ordering.descriptors.isEmpty else { return objects }
        guard let sorted = try? ordering.sorted(objects, subject: { .object($0) }, resolver: view) else {
            unsortedLevels.insert(parent)
            return objects
        }
        return sorted
    }

    /// 400 `bad-controller` for a tree past `maxNodes`, naming what made it so: too many roots (the content and the
    /// filter), children reaching the same objects along many paths, or simply that many children.
    var tooManyNodes: ObjectGraphError {
        if roots.count >= Self.maxNodes {
            return ControllerDescription.bad(
                "The tree would have more than \(Self.maxNodes) nodes: its content and filter give \(roots.count) roots.",
                field: "filterPredicate")
        }
        let reason =
            nodeCounts.values.contains { $0 > 1 }
            ? "reaches the same objects along many paths" : "reaches that many descendants of its roots"
        return ControllerDescription.bad(
            "The tree would have more than \(Self.maxNodes) nodes (\"childrenKeyPath\" \(childrenKeyPath) \(reason)).",
            field: "childrenKeyPath")
    }

    /// Checks what the model tells: that `childrenKeyPath` is a to-many of its entity, that `countKeyPath` and
    /// `leafKeyPath` are key paths of it, and that `countKeyPath` gives a number.
    func checkDeclaration(model: ObjectModel) throws {
        guard let entity = contentEntity else { return }
        guard model.relationship(from: entity, keyPath: childrenKeyPath)?.isToMany == true else {
            throw ControllerDescription.bad(
                "\"childrenKeyPath\" \(childrenKeyPath) is not a to-many relationship of \(entity).",
                field: "childrenKeyPath")
        }
        for (field, keyPath) in [("countKeyPath", description.countKeyPath), ("leafKeyPath", description.leafKeyPath)] {
            guard let keyPath else { continue }
            do {
                try model.checkReadable(keyPath, on: entity)
            } catch {
                throw ControllerDescription.bad(
                    "\"\(field)\" \(keyPath) is not a key path of \(entity): \(error.message)", field: field)
            }
        }
        // NSTreeController's `countKeyPath` gives "the number of children for a node".
        if let keyPath = description.countKeyPath, model.givesNumber(keyPath, on: entity) == false {
            throw ControllerDescription.bad(
                "\"countKeyPath\" \(keyPath) gives no number of children (an integer, such as directReports.@count).",
                field: "countKeyPath")
        }
    }

    // MARK: Index paths

    func node(at path: [Int]) -> Node? {
        Self.node(at: path, in: roots)
    }

    static func node(at path: [Int], in roots: [Node]) -> Node? {
        guard let first = path.first, roots.indices.contains(first) else { return nil }
        var node = roots[first]
        for index in path.dropFirst() {
            guard node.children.indices.contains(index) else { return nil }
            node = node.children[index]
        }
        return node
    }

    /// The object of the node at `path`, found without copying the nodes along it, as `node(at:)` does (a tree's
    /// selection is found so, each path from its root: 97,500 paths up to 65 levels deep).
    static func object(at path: [Int], in roots: [Node]) -> ObjectID? {
        func find(_ nodes: borrowing [Node], depth: Int) -> ObjectID? {
            let index = path[depth]
            guard nodes.indices.contains(index) else { return nil }
            return depth + 1 == path.count ? nodes[index].object : find(nodes[index].children, depth: depth + 1)
        }
        return path.isEmpty ? nil : find(roots, depth: 0)
    }

    /// The objects of the nodes from a root down to the node at `path`.
    static func objects(along path: [Int], in roots: [Node]) -> [ObjectID] {
        var objects: [ObjectID] = []
        var nodes = roots
        for index in path {
            guard nodes.indices.contains(index) else { break }
            objects.append(nodes[index].object)
            nodes = nodes[index].children
        }
        return objects
    }

    /// Finds nodes by their objects in one tree, however many are looked for, in time about proportional to the
    /// tree (a selection of 20,000 objects searched the tree once for each): the first index path of an object
    /// (depth-first, as `indexPath(of:)`), and the path along a chain of objects from a root down, each long list
    /// of siblings indexed when first searched.
    struct PathFinder {
        let roots: [Node]
        private var firstPaths: [ObjectID: [Int]]?
        private var searches = 0
        private var siblingIndexes: [[Int]: [ObjectID: Int]] = [:]
        /// The lists of siblings searched once: indexed at the second search.
        private var searchedSiblings: Set<[Int]> = []

        init(_ roots: [Node]) {
            self.roots = roots
        }

        mutating func firstPath(of object: ObjectID) -> [Int]? {
            // A few objects are searched for (by comparison, cheaper than hashing every object of the tree).
            searches += 1
            if firstPaths == nil && searches <= 8 { return TreeController.indexPath(of: object, in: roots) }
            if firstPaths == nil {
                var paths: [ObjectID: [Int]] = [:]
                var prefix: [Int] = []
                func walk(_ nodes: [Node]) {
                    for (index, node) in nodes.enumerated() {
                        prefix.append(index)
                        if paths[node.object] == nil { paths[node.object] = prefix }
                        walk(node.children)
                        prefix.removeLast()
                    }
                }
                walk(roots)
                firstPaths = paths
            }
            return firstPaths?[object]
        }

        /// The index path of the node reached through these objects, from a root down, if the tree has it.
        mutating func path(along objects: [ObjectID]) -> [Int]? {
            guard !objects.isEmpty else { return nil }
            var path: [Int] = []
            var nodes = roots
            for object in objects {
                let index: Int?
                if nodes.count <= 16 || searchedSiblings.insert(path).inserted {
                    index = nodes.firstIndex { $0.object == object }
                } else {
                    if siblingIndexes[path] == nil {
                        siblingIndexes[path] = Dictionary(
                            nodes.enumerated().map { ($1.object, $0) }, uniquingKeysWith: { first, _ in first })
                    }
                    index = siblingIndexes[path]?[object]
                }
                guard let index else { return nil }
                path.append(index)
                nodes = nodes[index].children
            }
            return path
        }
    }

    /// The first index path (depth-first) of `object`.
    func indexPath(of object: ObjectID) -> [Int]? {
        guard nodeCounts[object] != nil else { return nil }
        return Self.indexPath(of: object, in: roots)
    }

    static func indexPath(of object: ObjectID, in roots: [Node]) -> [Int]? {
        var path: [Int] = []
        func search(_ nodes: [Node]) -> Bool {
            for (index, node) in nodes.enumerated() {
                path.append(index)
                if node.object == object || search(node.children) { return true }
                path.removeLast()
            }
            return false
        }
        return search(roots) ? path : nil
    }

    /// The node that takes the place of the one at `path` in the tree before, now gone: the first of `candidates`
    /// (the sibling objects that followed it, else those before it, else its parent object; `SelectionMemory`)
    /// wherever its node is now (a removal can move nodes: the removed object's children may become roots); else by
    /// position (`neighbour(of:)`).
    func neighbour(ofVanished path: [Int], candidates: [ObjectID]) -> [Int] {
        for object in candidates {
            if let found = indexPath(of: object) { return found }
        }
        return neighbour(of: path)
    }

    /// The node that takes the place of a vanished one: its sibling at the same index or the last one, else the
    /// parent's, up to the first root.
    func neighbour(of path: [Int]) -> [Int] {
        var path = path
        while let last = path.popLast() {
            let siblings = path.isEmpty ? roots.count : (node(at: path)?.children.count ?? 0)
            if siblings > 0 { return path + [min(last, siblings - 1)] }
            if node(at: path) != nil && !path.isEmpty { return path }
        }
        return [0]
    }

    func normalized(_ paths: [[Int]]) -> [[Int]] {
        let valid = paths.filter { Self.object(at: $0, in: roots) != nil }
        // Paths already in order, each once (a client sending back what it read, a select-all): only checked.
        if zip(valid, valid.dropFirst()).allSatisfy({ $0.lexicographicallyPrecedes($1) }) { return valid }
        return Set(valid).sorted { $0.lexicographicallyPrecedes($1) }
    }

    func setSelection(_ selection: [[Int]], in context: ControllerContext, changed: Bool) {
        selectionIndexPaths = selection
        if !selection.isEmpty { explicitlyEmpty = false }
        if changed {
            context.emit(self, .selectionIndexes)
            context.emit(self, .selection)
        }
    }

    /// `setSelectionIndexPaths:` from a client: invalid paths are dropped; an empty selection is honoured. When every
    /// asked path is invalid and `avoidsEmptySelection`, the last root is selected (as an array controller selects its
    /// last object).
    func selectIndexPaths(_ paths: [[Int]], in context: ControllerContext) {
        var selection = normalized(paths)
        if selection.isEmpty, !paths.isEmpty, options.avoidsEmptySelection, !roots.isEmpty {
            selection = [[roots.count - 1]]
        }
        let oldSelected = selectedObjects
        let changed = selection != selectionIndexPaths
        selectionIndexPaths = selection
        explicitlyEmpty = selection.isEmpty
        setSelection(selection, in: context, changed: changed || selectedObjects != oldSelected)
    }

    override func setSelectedObjects(_ objects: [ObjectID], in context: ControllerContext) {
        var finder = PathFinder(roots)
        selectIndexPaths(objects.compactMap { finder.firstPath(of: $0) }, in: context)
    }

    // MARK: Actions

    func planTreeAction(
        _ action: String, values: [String: PropertyListValue], index: Int?, in context: ControllerContext
    ) throws -> InsertionPlan {
        let view = context.view
        let model = context.model
        func position(of object: ObjectID, in owner: RelationshipOwner) -> Int? {
            (try? view.value(forKeyPath: owner.keyPath, of: owner.object))?.objectIDs.firstIndex(of: object)
        }
        switch action {
        case "remove":
            if isEntityMode { return InsertionPlan(action: action, edit: .delete(selectedObjects)) }
            var edits: [ModelEdit] = []
            for path in selectionIndexPaths {
                guard let object = node(at: path)?.object else { continue }
                let parent = path.count > 1 ? node(at: Array(path.dropLast()))?.object : nil
                guard let from = parent.map({ RelationshipOwner(object: $0, keyPath: childrenKeyPath) }) ?? owner else {
                    throw ObjectGraphError.actionDisabled(action, of: name, "\(object) has no relationship to leave.")
                }
                try Self.checkRemovable([object], from: from, model: model)
                edits.append(.removeFromRelationship(from, [object]))
            }
            return InsertionPlan(action: action, edit: .sequence(edits))
        case "addChild", "insertChild":
            // addChild: the last child of the selected node; insertChild: at `index` among its children.
            guard let path = selectionIndexPaths.first, let parentNode = node(at: path),
                let entity = model.destinationEntity(from: parentNode.object.entity, keyPath: childrenKeyPath)
            else { throw ObjectGraphError.actionDisabled(action, of: name, "select one node to add a child to.") }
            guard !parentNode.isLeaf else {
                throw ObjectGraphError.actionDisabled(action, of: name, "\(parentNode.object) is a leaf.")
            }
            guard !parentNode.isCut, path.count <= Self.maxDepth else {
                throw ObjectGraphError.actionDisabled(
                    action, of: name,
                    "\(parentNode.object)'s children are not shown (a tree shows \(Self.maxDepth) levels below its roots)."
                )
            }
            let parent = parentNode.object
            let children = RelationshipOwner(object: parent, keyPath: childrenKeyPath)
            let at =
                action == "insertChild"
                ? min(index ?? 0, (try? view.value(forKeyPath: childrenKeyPath, of: parent))?.objectIDs.count ?? 0)
                : nil
            let shown = parentNode.children
            let position: Placement.Position =
                switch min(at ?? shown.count, shown.count) {
                case shown.count: .last
                case 0: .first
                case let place: .after(shown[place - 1].object)
                }
            return InsertionPlan(
                action: action, edit: .create(entity: entity, values: values, owner: children, index: at),
                placement: Placement(parent: parent, position: position))
        default:
            // NSTreeController's add: puts the new object after the selection at the same depth; insert: at the
            // selection's index path. Without a selection, both append to the roots. `didInsert` places the node there.
            guard let path = selectionIndexPaths.first, let last = path.last, let selected = node(at: path)?.object
            else {
                guard let entity = contentEntity else {
                    throw ObjectGraphError.actionDisabled(action, of: name, "the content's entity is not known.")
                }
                return InsertionPlan(
                    action: action, edit: .create(entity: entity, values: values, owner: owner, index: nil),
                    placement: Placement(parent: nil, position: .last))
            }
            let offset = action == "add" ? 1 : 0
            let parentNode = path.count > 1 ? node(at: Array(path.dropLast())) : nil
            // A sibling of a child is of the children's entity (a tree of departments and their employees).
            guard
                let entity = parentNode.map({
                    model.destinationEntity(from: $0.object.entity, keyPath: childrenKeyPath)
                })
                    ?? contentEntity
            else { throw ObjectGraphError.actionDisabled(action, of: name, "the new node's entity is not known.") }
            let siblings = parentNode.map { RelationshipOwner(object: $0.object, keyPath: childrenKeyPath) } ?? owner
            let at = siblings.flatMap { position(of: selected, in: $0) }.map { $0 + offset }
            // add: after the selected node; insert: where it is, so after the sibling before it.
            let shown = parentNode?.children ?? roots
            let position: Placement.Position =
                action == "add" ? .after(selected) : last == 0 ? .first : .after(shown[last - 1].object)
            return InsertionPlan(
                action: action, edit: .create(entity: entity, values: values, owner: siblings, index: at),
                placement: Placement(parent: parentNode?.object, position: position))
        }
    }

    /// Puts a node inserted by `add`, `insert`, `addChild` or `insertChild` where its plan placed it among its
    /// siblings, unsorted while its placement is kept (see `placements`; NSTreeController's
    /// `insertObject:atArrangedObjectIndexPath:`), then selects the new node (when `selectsInsertedObjects`).
    func didInsert(_ object: ObjectID, placement: Placement?, in context: ControllerContext) {
        let oldSelected = selectedObjects
        let oldSelection = selectionIndexPaths
        if let placement {
            placements.append((object, placement))
            if placement.parent == nil, !roots.contains(where: { $0.object == object }) {
                // A root the filter hides: shown all the same (`rebuild` keeps placed roots).
                if !showPlacedRoot(object, in: context) { rebuild(in: context) }
            } else {
                // The earlier placements are applied already: this one goes last, at every node of its parent.
                var moved = false
                if let parent = placement.parent {
                    for path in paths(of: parent) {
                        modifyNode(at: path[...], in: &roots) {
                            moved = Self.place(object, placement, in: &$0.children) || moved
                        }
                    }
                } else {
                    moved = Self.place(object, placement, in: &roots)
                }
                if moved {
                    treeDidChange()
                    context.emit(self, .arrangedObjects)
                }
            }
        }
        // The node the insertion placed: a root placed where the filter would hide it may also be a child elsewhere.
        let placedRoot = placement?.parent == nil ? roots.firstIndex { $0.object == object }.map { [$0] } : nil
        var selection: [[Int]]
        if options.selectsInsertedObjects, let path = placedRoot ?? self.indexPath(of: object) {
            selection = [path]
        } else {
            var finder = PathFinder(roots)
            selection = oldSelected.compactMap { finder.firstPath(of: $0) }
        }
        let normalizedSelection = normalized(selection)
        setSelection(
            normalizedSelection, in: context,
            changed: normalizedSelection != oldSelection || selectedObjects != oldSelected)
    }

    // MARK: State

    /// The nested arranged objects: `[{"object", "indexPath", "children"}]`, objects in their JSON form when
    /// `objects`, else as references; `"count"` when there is a `countKeyPath`.
    func arrangedJSON(view: ReadView, objects: Bool, roots range: Range<Int>? = nil) throws -> PropertyListValue {
        func json(_ nodes: ArraySlice<Node>, prefix: [Int]) throws -> PropertyListValue {
            var result: [PropertyListValue] = []
            for (index, node) in zip(nodes.indices, nodes) {
                let path = prefix + [index]
                var entry: [String: PropertyListValue] = [
                    "object": objects ? try view.json(of: node.object) : ["$ref": .string(node.object.description)],
                    "indexPath": .array(path.map { .integer(Int64($0)) }),
                    "children": try json(node.children[...], prefix: path),
                    // With a leafKeyPath, its value says (a node may be a non-leaf without children yet), as
                    // NSTreeNode's isLeaf; without one, having no children does (shown or not: cut, or its
                    // ancestors again).
                    "isLeaf": .boolean(
                        description.leafKeyPath == nil
                            ? node.children.isEmpty && !node.isCut && !node.leadsBack : node.isLeaf),
                ]
                if let countKeyPath = description.countKeyPath {
                    entry["count"] = (try? view.value(forKeyPath: countKeyPath, of: node.object))?.json ?? .null
                }
                result.append(.dictionary(entry))
            }
            return .array(result)
        }
        return try json(roots[range ?? roots.indices], prefix: [])
    }

    override func stateFields(in context: ControllerContext) -> [String: PropertyListValue] {
        [
            "selectionIndexPaths": .array(
                selectionIndexPaths.map { .array($0.map { .integer(Int64($0)) }) }),
            "count": .integer(Int64(roots.count)),
            "nodeCount": .integer(Int64(nodeCount)),
            "canAddChild": .boolean(canAddChild),
            "canInsertChild": .boolean(canAddChild),
        ]
    }
}
