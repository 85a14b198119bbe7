import Controllers
import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

/// Ann (Bob (Eve), Cy), Dee.
struct TreeControllerTests {
    func harness(automaticallyRearrangesObjects: Bool = false) throws -> Harness {
        let h = try Harness()
        try h.make([
            "name": "org", "kind": "tree", "content": "Employee", "filterPredicate": "manager == nil",
            "childrenKeyPath": "directReports", "sortDescriptors": [["key": "lastName"]],
            "automaticallyRearrangesObjects": .boolean(automaticallyRearrangesObjects),
        ])
        return h
    }

    func objectAt(_ h: Harness, _ path: [Int], of tree: String = "org") throws -> PropertyListValue? {
        var nodes = try h.value("arrangedObjects", of: tree)
        var node: PropertyListValue?
        for index in path {
            node = nodes.arrayValue?[index]
            nodes = node?["children"] ?? []
        }
        return node?["object"]
    }

    /// As an array controller's: a change outside the tree (a department, read by `arrangedObjects.department.name`)
    /// is reported with nothing selected.
    @Test func tree_aChangeOutsideTheTree_reportsArrangedObjects() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([], controller: "org")
        h.clearReports()
        try h.set("name", of: "Department/1", to: "Renamed")
        #expect(h.reported(.arrangedObjects, of: "org"))
        #expect(!h.reported(.selection, of: "org"))
    }

    /// A watched key (the sort key, with `automaticallyRearrangesObjects`) changed on the selected node without moving
    /// it: the tree keeps its shape, but `selection` and `arrangedObjects` (read through by `selection.lastName`,
    /// `arrangedObjects.lastName`) changed, and are reported as an array controller reports them.
    @Test func tree_watchedKeyChangeThatMovesNothing_reportsSelectionAndArrangedObjects() throws {
        let h = try harness(automaticallyRearrangesObjects: true)
        try h.registry.setSelectionIndexPaths([[0, 0]], controller: "org")
        h.clearReports()
        try h.set("lastName", of: "Employee/bob", to: "Bell")
        #expect(try objectAt(h, [0, 0]) == ref("Employee/bob"))
        #expect(try h.value("selection.lastName", of: "org") == "Bell")
        #expect(h.reported(.selection, of: "org"))
        #expect(h.reported(.arrangedObjects, of: "org"))
    }

    /// Children that lead back (every employee of Sales is a child of every other): an object is never its own
    /// child, nor a child of its descendants: 4 roots with 3, 3·2 and 3·2·1 descendants each, 64 nodes.
    @Test func tree_childrenThatLeadBack_objectNeverItsOwnChild() throws {
        let h = try Harness()
        try h.make([
            "name": "web", "kind": "tree", "content": "Department/1.employees",
            "childrenKeyPath": "department.employees",
        ])
        #expect(try h.value("nodeCount", of: "web") == 64)
        let roots = try h.value("arrangedObjects", of: "web").arrayValue ?? []
        for root in roots {
            let children = root["children"]?.arrayValue?.map { $0["object"] } ?? []
            #expect(children.count == 3 && !children.contains(root["object"]))
        }
    }

    /// A node whose only children are its ancestors (a management cycle) shows none, and is no leaf: the model gives
    /// it children (it said `isLeaf: true`). An update in place keeps saying so as the cycle is made and broken.
    @Test func tree_nodeWhoseChildrenAreItsAncestors_isNoLeaf() throws {
        let h = try Harness()
        try h.make(["name": "t", "kind": "tree", "content": "Employee", "childrenKeyPath": "directReports"])
        // The child node of `id` under the root node of `root` (every employee is a root of this tree).
        func node(_ id: String, under root: String) throws -> PropertyListValue? {
            let roots = try h.value("arrangedObjects", of: "t").arrayValue ?? []
            let top = roots.first { $0["object"]?["$ref"]?.stringValue == root }
            return top?["children"]?.arrayValue?.first { $0["object"]?["$ref"]?.stringValue == id }
        }
        let leaves = try h.store.read { view in
            try view.objects(of: "Employee").filter {
                try view.value(forKeyPath: "directReports.@count", of: $0) == .value(.integer(0))
            }
        }
        try #require(leaves.count >= 2)
        let (a, b) = (leaves[0].description, leaves[1].description)
        try h.set("manager", of: a, to: ref(b))
        try h.set("manager", of: b, to: ref(a))
        let cut = try #require(try node(a, under: b))
        #expect(cut["children"]?.arrayValue?.isEmpty == true)
        #expect(cut["isLeaf"] == false)
        try h.set("manager", of: b, to: .null)
        #expect(try node(a, under: b)?["isLeaf"] == true)
    }

    /// Every employee of a department of twelve is a child of every other: 12! paths, refused instead of built.
    /// Roots count against the node limit: a chain of n employees, each managing the next, is a tree with every
    /// employee a root and 64 levels shown below it: 65n - 2,080 nodes (3,108: 199,940; 3,110: 200,070, of which
    /// 196,960 below the roots).
    @Test(arguments: [(3_108, true), (3_110, false)])
    func tree_rootsCountAgainstTheNodeLimit(employees: Int, accepted: Bool) throws {
        let h = try chainHarness(employees)
        let declaration: [String: PropertyListValue] = [
            "name": "chain", "kind": "tree", "content": "Employee", "childrenKeyPath": "directReports",
        ]
        if accepted {
            let state = try h.make(declaration)
            #expect(state["nodeCount"] == .integer(Int64(65 * employees - 2_080)))
        } else {
            expectError("bad-controller", status: 400) { try h.make(declaration) }
        }
    }

    /// A chain of `employees` employees in one department, each managing the next.
    func chainHarness(_ employees: Int) throws -> Harness {
        let chain: [PropertyListValue] = (0..<employees).map { index in
            [
                "$id": .string("Employee/\(index)"), "firstName": "E", "lastName": .string("\(index)"),
                "department": ref("Department/1"),
                "manager": index == 0 ? .null : ref("Employee/\(index - 1)"),
            ]
        }
        return try Harness(objects: .array([["$id": "Department/1", "name": "Sales"]] + chain))
    }

    /// A new filter (or sort) that would take a tree past its node limit is refused as at creation, and the tree
    /// keeps its filter; the error names the roots when they are what is too many.
    @Test func tree_newFilterPastTheNodeLimit_refused() throws {
        let h = try chainHarness(3_110)
        try h.make([
            "name": "chain", "kind": "tree", "content": "Employee", "childrenKeyPath": "directReports",
            "filterPredicate": "manager == nil",
        ])
        let error = expectError("bad-controller", status: 400) {
            try h.registry.setFilterPredicate(nil, controller: "chain")
        }
        #expect(error?.fields["field"] == "childrenKeyPath")
        #expect(try h.value("filterPredicate", of: "chain") == "manager == nil")
        #expect(try h.value("nodeCount", of: "chain") == 65)
    }

    /// Twelve employees in one department: a tree whose children are each one's department's employees reaches
    /// them along 12! paths.
    func departmentOfTwelve() throws -> Harness {
        var objects: [PropertyListValue] = [["$id": "Department/1", "name": "Sales"]]
        for index in 0..<12 {
            objects.append([
                "$id": .string("Employee/\(index)"), "firstName": "F", "lastName": .string("L\(index)"),
                "department": ref("Department/1"),
            ])
        }
        return try Harness(objects: .array(objects))
    }

    @Test func tree_childrenKeyPathMeetingTheSameObjects_refusedPastTheNodeLimit() throws {
        let h = try departmentOfTwelve()
        let error = expectError("bad-controller", status: 400) {
            try h.make([
                "name": "web", "kind": "tree", "content": "Employee", "childrenKeyPath": "department.employees",
            ])
        }
        #expect(error?.message.contains("the same objects along many paths") == true)
        #expect(!h.registry.contains("web"))
    }

    /// A declared tree is not refused for what the store holds, which may have grown since the fixture was written (a
    /// start refused for it would not come back): past the node limit it shows no children where they would pass it,
    /// as a tree that grew so.
    @Test func tree_declaredPastTheNodeLimit_keptWithTheChildrenCut() throws {
        let h = try departmentOfTwelve()
        let state = try h.registry.create(
            json: ["name": "web", "kind": "tree", "content": "Employee", "childrenKeyPath": "department.employees"],
            declared: true)
        #expect(h.registry.contains("web"))
        let nodes = try #require(state["nodeCount"]?.integerValue)
        #expect(nodes > 12 && nodes <= 200_000)
    }

    @Test func tree_rootsFromFilter_childrenNested_withIndexPaths() throws {
        let h = try harness()
        let roots = try h.value("arrangedObjects", of: "org")
        #expect(roots.arrayValue?.count == 2)
        #expect(roots.arrayValue?[0]["object"] == ref("Employee/ann"))
        #expect(roots.arrayValue?[0]["indexPath"] == [0])
        #expect(roots.arrayValue?[0]["children"]?.arrayValue?[0]["indexPath"] == [0, 0])
        #expect(try objectAt(h, [0, 0, 0]) == ref("Employee/eve"))
        #expect(try objectAt(h, [0, 1]) == ref("Employee/cy"))
        #expect(try objectAt(h, [1]) == ref("Employee/dee"))
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0]])
    }

    @Test func tree_selectIndexPaths_selectsNodes_invalidDropped() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([[0, 0, 0], [1], [5, 5]], controller: "org")
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 0, 0], [1]])
        #expect(try h.value("selection.lastName", of: "org") == marker("MultipleValues"))
        try h.registry.setSelectionIndexPaths([[0, 1]], controller: "org")
        #expect(try h.value("selection.lastName", of: "org") == "Cole")
    }

    /// The standard objects and a chain of `levels` employees in Legal, each managing the next, under a tree `org`
    /// of Legal's employees without a manager.
    func chainHarness(levels: Int) throws -> Harness {
        var objects = try #require(standardObjects.arrayValue)
        for level in 0..<levels {
            var employee: [String: PropertyListValue] = [
                "$id": .string("Employee/d\(level)"), "firstName": "D", "lastName": .string("D\(level)"),
                "department": ref("Department/3"),
            ]
            if level > 0 { employee["manager"] = ref("Employee/d\(level - 1)") }
            objects.append(.dictionary(employee))
        }
        let h = try Harness(objects: .array(objects))
        try h.make([
            "name": "org", "kind": "tree", "content": "Department/3.employees", "filterPredicate": "manager == nil",
            "childrenKeyPath": "directReports",
        ])
        return h
    }

    /// A node at the depth limit with no children takes none either: its child would not be shown.
    @Test func tree_childlessNodeAtTheDepthLimit_takesNoChild() throws {
        let h = try chainHarness(levels: 65)
        try h.registry.setSelectionIndexPaths([Array(repeating: 0, count: 65)], controller: "org")
        #expect(try h.value("selectedObjects", of: "org") == [ref("Employee/d64")])
        #expect(try h.registry.state(of: "org").value["canAddChild"] == false)
        expectError("action-disabled", status: 409) {
            try h.registry.perform(
                "addChild", controller: "org",
                body: ["object": ["firstName": "E", "lastName": "E", "department": ref("Department/3")]])
        }
    }

    /// A tree shows 64 levels below its roots: a node there whose children are not shown is no leaf, and takes no
    /// child (it would not be shown either); it said `isLeaf` true and took one.
    @Test func tree_deeperThanItShows_nodeAtTheDepthIsNoLeaf_takesNoChild() throws {
        let h = try chainHarness(levels: 70)
        let deepest = Array(repeating: 0, count: 65)
        var node = try h.value("arrangedObjects", of: "org").arrayValue?.first
        for _ in 1..<65 { node = node?["children"]?.arrayValue?.first }
        #expect(node?["object"] == ref("Employee/d64"))
        #expect(node?["children"] == [] && node?["isLeaf"] == false)
        try h.registry.setSelectionIndexPaths([deepest], controller: "org")
        #expect(try h.registry.state(of: "org").value["canAddChild"] == false)
        expectError("action-disabled", status: 409) {
            try h.registry.perform(
                "addChild", controller: "org",
                body: ["object": ["firstName": "E", "lastName": "E", "department": ref("Department/3")]])
        }
        try h.registry.setSelectionIndexPaths([Array(deepest.dropLast())], controller: "org")
        #expect(try h.registry.state(of: "org").value["canAddChild"] == true)
    }

    /// A root `add` creates that the filter would hide is shown where it was put, and selected, until the tree is
    /// re-arranged (as an array controller's added object): it was created but neither shown nor selected.
    @Test func tree_addOfARootTheFilterHides_shownAndSelectedUntilRearrangedOrChangedElsewhere() throws {
        let h = try Harness()
        try h.make([
            "name": "rich", "kind": "tree", "content": "Employee", "filterPredicate": "salary >= 200",
            "childrenKeyPath": "directReports", "sortDescriptors": [["key": "lastName"]],
        ])
        func roots() throws -> [String] {
            try h.value("arrangedObjects", of: "rich").arrayValue?.compactMap { $0["object"]?["$ref"]?.stringValue }
                ?? []
        }
        #expect(try roots() == ["Employee/ann", "Employee/bob", "Employee/eve"])
        let nodes = try h.registry.state(of: "rich").value["nodeCount"]?.integerValue ?? 0
        try h.registry.setSelectionIndexPaths([[0]], controller: "rich")
        // Kim is placed with Cy, whom she manages, as her child (her node built, the others kept).
        try h.registry.perform(
            "add", controller: "rich",
            body: [
                "object": [
                    "$id": "kim", "firstName": "Kim", "lastName": "Kahn", "department": ref("Department/2"),
                    "directReports": [ref("Employee/cy")],
                ]
            ])
        #expect(try roots() == ["Employee/ann", "Employee/kim", "Employee/bob", "Employee/eve"])
        #expect(try h.value("selectionIndexPaths", of: "rich") == [[1]])
        #expect(try objectAt(h, [1, 0], of: "rich") == ref("Employee/cy"))
        #expect(try h.registry.state(of: "rich").value["nodeCount"]?.integerValue == nodes + 1)
        try h.registry.perform("rearrangeObjects", controller: "rich")
        #expect(try roots() == ["Employee/ann", "Employee/bob", "Employee/eve"])
        try h.registry.setSelectionIndexPaths([[0]], controller: "rich")
        try h.registry.perform(
            "add", controller: "rich",
            body: ["object": ["$id": "lu", "firstName": "Lu", "lastName": "Li", "department": ref("Department/2")]])
        #expect(try roots() == ["Employee/ann", "Employee/lu", "Employee/bob", "Employee/eve"])
        // A change of the tree's content made elsewhere (a new child of Bob) re-arranges: the filter hides Lu again.
        try h.set("manager", of: "Employee/cy", to: ref("Employee/bob"))
        #expect(try roots() == ["Employee/ann", "Employee/bob", "Employee/eve"])
    }

    /// In a tree of departments and their employees, the selection's dictionary has the keys of what is selected,
    /// each as `selection.{key}` reads it: two employees' `lastName` differ; a department and an employee share no
    /// key but both entities' are there. It had only the departments' keys, each `NotApplicable`.
    @Test func tree_ofTwoEntities_selectionDictionaryHasTheSelectedObjectsKeys() throws {
        let h = try Harness()
        try h.make([
            "name": "mix", "kind": "tree", "content": "Department", "childrenKeyPath": "employees",
            "sortDescriptors": [["key": "name"]],
        ])
        for selection in [[[2, 0], [2, 1]], [[2], [2, 0]], []] as [[[Int]]] {
            try h.registry.setSelectionIndexPaths(selection, controller: "mix")
            let dictionary = try h.value("selection", of: "mix")
            let keys = try #require(dictionary.dictionaryValue?.keys)
            for key in ["lastName", "salary", "name", "budget"] where keys.contains(key) {
                #expect(dictionary[key] == (try h.value("selection.\(key)", of: "mix")), "\(selection) \(key)")
            }
            #expect(keys.contains("lastName") == selection.contains { $0.count == 2 }, "\(selection)")
            #expect(keys.contains("name") == (selection.isEmpty || selection.contains { $0.count == 1 }))
        }
        try h.registry.setSelectionIndexPaths([[2, 0], [2, 1]], controller: "mix")
        #expect(try h.value("selection", of: "mix")["lastName"] == ["$marker": "MultipleValues"])
    }

    /// An object that is a node along two paths stays selected where it was selected when an unrelated change
    /// rebuilds the tree; it jumped to its first node.
    @Test func tree_objectOnTwoPaths_selectionStaysAtItsNode() throws {
        let h = try Harness()
        try h.make([
            "name": "all", "kind": "tree", "content": "Employee", "childrenKeyPath": "directReports",
            "sortDescriptors": [["key": "lastName"]],
        ])
        // Roots Ann, Bob, Cy, Dee, Eve; Bob is also Ann's child ([0, 0]).
        try h.registry.setSelectionIndexPaths([[1]], controller: "all")
        #expect(try h.value("selectedObjects", of: "all") == [ref("Employee/bob")])
        try h.set("manager", of: "Employee/dee", to: ref("Employee/cy"))  // a rebuild elsewhere
        #expect(try h.value("selectionIndexPaths", of: "all") == [[1]])
        #expect(try h.value("selectedObjects", of: "all") == [ref("Employee/bob")])
        // A root sorted first moves every path: the selection follows its node, not the object's first one ([1, 0]).
        try h.store.transaction { tx in
            try tx.insert(
                "Employee", id: "aa", values: ["firstName": "A", "lastName": "Aa", "department": ref("Department/2")])
        }
        #expect(try h.value("selectionIndexPaths", of: "all") == [[2]])
    }

    /// A root `add` places where the filter hides it, that is a child elsewhere too (Kim, managed by Ann, under a
    /// tree of those without a manager), is shown as that root and selected there.
    @Test func tree_addOfAHiddenRootThatIsAlsoAChild_shownAndSelectedAsTheRoot() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([[0]], controller: "org")
        try h.registry.perform(
            "add", controller: "org",
            body: [
                "object": [
                    "$id": "kim", "firstName": "Kim", "lastName": "Kahn", "department": ref("Department/1"),
                    "manager": ref("Employee/ann"),
                ]
            ])
        #expect(try objectAt(h, [1]) == ref("Employee/kim"))
        #expect(try h.value("selectionIndexPaths", of: "org") == [[1]])
    }

    @Test func tree_addChild_insertsUnderSelection_andSelectsIt() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([[1]], controller: "org")
        try h.registry.perform(
            "addChild", controller: "org",
            body: ["object": ["firstName": "Kim", "lastName": "Kahn", "department": ref("Department/2")]])
        #expect(try objectAt(h, [1, 0])?["$ref"]?.stringValue?.hasPrefix("Employee/") == true)
        #expect(try h.value("selectionIndexPaths", of: "org") == [[1, 0]])
        #expect(try h.value("selection.manager", of: "org") == ref("Employee/dee"))
    }

    /// `addChild` appends to the selected node's children and `insertChild` puts the child at its index, unsorted
    /// until the tree is next rebuilt (NSTreeController).
    @Test func tree_addChildAndInsertChild_placedAsAsked_unsortedUntilRearranged() throws {
        let h = try harness()
        try h.registry.perform(
            "addChild", controller: "org",
            body: ["object": ["firstName": "Al", "lastName": "Aaron", "department": ref("Department/1")]])
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 2]])  // Baker, Cole, Aaron
        #expect(try h.value("selection.lastName", of: "org") == "Aaron")
        try h.registry.setSelectionIndexPaths([[0]], controller: "org")
        try h.registry.perform(
            "insertChild", controller: "org",
            body: ["index": 1, "object": ["firstName": "Zed", "lastName": "Zorn", "department": ref("Department/1")]])
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 1]])  // Baker, Zorn, Cole, Aaron
        #expect(try h.value("selection.lastName", of: "org") == "Zorn")
        try h.registry.perform("rearrangeObjects", controller: "org")
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 3]])  // Aaron, Baker, Cole, Zorn
    }

    /// Placed nodes stay where their insertions put them through the controller's later insertions (which rebuild
    /// the tree) until it is re-arranged, or its content changes elsewhere (API.md §5: that always re-arranges).
    @Test func tree_insertions_keepEarlierPlacements_untilRearrangedOrChangedElsewhere() throws {
        let h = try harness()
        func add(_ action: String, _ lastName: String, index: Int? = nil) throws {
            var body: [String: PropertyListValue] = [
                "object": ["firstName": "T", "lastName": .string(lastName), "department": ref("Department/1")]
            ]
            body["index"] = index.map { .integer(Int64($0)) }
            try h.registry.perform(action, controller: "org", body: .dictionary(body))
        }
        func names(_ path: [Int] = []) throws -> [String] {
            var nodes = try h.value("arrangedObjects", of: "org")
            for index in path { nodes = nodes.arrayValue?[index]["children"] ?? [] }
            return try (nodes.arrayValue ?? []).map { node in
                let id = try #require(node["object"]?["$ref"]?.stringValue)
                return try h.json("lastName", of: id).stringValue ?? "?"
            }
        }
        try add("add", "Aaa")  // after the selected Archer
        try add("add", "Abb")  // after the selected Aaa, which stays where it was put
        #expect(try names() == ["Archer", "Aaa", "Abb", "Dunn"])
        #expect(try h.value("selectionIndexPaths", of: "org") == [[2]])
        try h.registry.setSelectionIndexPaths([[0]], controller: "org")
        try add("insertChild", "Zed", index: 0)
        try h.registry.setSelectionIndexPaths([[0]], controller: "org")
        try add("addChild", "Zzz")
        #expect(try names() == ["Archer", "Aaa", "Abb", "Dunn"])
        #expect(try names([0]) == ["Zed", "Baker", "Cole", "Zzz"])
        // A placed node whose anchor goes stays where it was shown (after the anchor's own predecessor).
        try h.registry.setSelectionIndexPaths([[3]], controller: "org")
        try add("add", "Aab")  // after Dunn
        #expect(try names() == ["Archer", "Aaa", "Abb", "Dunn", "Aab"])
        try h.registry.perform("rearrangeObjects", controller: "org")
        #expect(try names() == ["Aaa", "Aab", "Abb", "Archer", "Dunn"])
        #expect(try names([3]) == ["Baker", "Cole", "Zed", "Zzz"])
        // Placed again, then a root made elsewhere: every level is sorted again, the placed nodes with the rest.
        try h.registry.setSelectionIndexPaths([[4]], controller: "org")
        try add("add", "Aac")  // after Dunn
        try h.registry.setSelectionIndexPaths([[3]], controller: "org")
        try add("insertChild", "Zza", index: 0)
        #expect(try names() == ["Aaa", "Aab", "Abb", "Archer", "Dunn", "Aac"])
        #expect(try names([3]) == ["Zza", "Baker", "Cole", "Zed", "Zzz"])
        try h.store.transaction { try $0.delete(id("Employee/dee")) }
        #expect(try names() == ["Aaa", "Aab", "Aac", "Abb", "Archer"])
        #expect(try names([4]) == ["Baker", "Cole", "Zed", "Zza", "Zzz"])
    }

    /// `add` puts the new root after the selected one, unsorted until the tree is next rebuilt (NSTreeController).
    @Test func tree_add_entityMode_newRootAfterTheSelection_unsortedUntilRearranged() throws {
        let h = try harness()
        try h.registry.perform(
            "add", controller: "org",
            body: ["object": ["firstName": "Al", "lastName": "Aaron", "department": ref("Department/2")]])
        #expect(try h.value("arrangedObjects.@count", of: "org") == 6)
        #expect(try h.value("selectionIndexPaths", of: "org") == [[1]])  // Archer, Aaron, Dunn
        #expect(try h.value("selection.lastName", of: "org") == "Aaron")
        #expect(try objectAt(h, [2]) == ref("Employee/dee"))
        try h.registry.perform("rearrangeObjects", controller: "org")
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0]])
        #expect(try objectAt(h, [1]) == ref("Employee/ann"))
    }

    /// Replacing the graph (`PUT /store`, `revertToSaved`), even with the same objects, re-arranges the tree as it
    /// re-arranges array controllers: every object is new, so insertions' placements are forgotten.
    @Test func tree_replaceGraph_forgetsPlacements() throws {
        let h = try harness()
        try h.registry.perform(
            "add", controller: "org",
            body: ["object": ["firstName": "Al", "lastName": "Aaron", "department": ref("Department/2")]])
        #expect(try objectAt(h, [1])?["$ref"] != ref("Employee/ann")["$ref"])
        let graph = h.store.read { $0.exportGraph() }
        try h.store.transaction { try $0.replaceGraph(with: graph) }
        #expect(try objectAt(h, [1]) == ref("Employee/ann"))  // Aaron, Archer, Dunn
        #expect(try h.value("selection.lastName", of: "org") == "Aaron")
    }

    @Test func tree_addOrInsert_withoutSelection_appendsARoot_unsorted() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([], controller: "org")
        try h.registry.perform(
            "add", controller: "org",
            body: ["object": ["firstName": "Al", "lastName": "Aaron", "department": ref("Department/2")]])
        #expect(try h.value("selectionIndexPaths", of: "org") == [[2]])  // Archer, Dunn, Aaron
        #expect(try h.value("selection.lastName", of: "org") == "Aaron")
        #expect(try objectAt(h, [0]) == ref("Employee/ann"))
        try h.registry.setSelectionIndexPaths([], controller: "org")
        try h.registry.perform(
            "insert", controller: "org",
            body: ["object": ["firstName": "Abe", "lastName": "Able", "department": ref("Department/2")]])
        #expect(try h.value("selectionIndexPaths", of: "org") == [[3]])  // Archer, Dunn, Aaron, Able
        #expect(try h.value("selection.lastName", of: "org") == "Able")
    }

    @Test func tree_add_withANestedSelection_placedAfterIt_unsortedUntilRearranged() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([[0, 0]], controller: "org")  // Baker, under Archer
        try h.registry.perform(
            "add", controller: "org",
            body: ["object": ["firstName": "Abe", "lastName": "Able", "department": ref("Department/1")]])
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 1]])  // Baker, Able, Cole
        #expect(try h.value("selection.manager", of: "org") == ref("Employee/ann"))
        #expect(try objectAt(h, [0, 0]) == ref("Employee/bob"))
        #expect(try h.value("arrangedObjects", of: "org").arrayValue?.count == 2)  // no new root
        try h.registry.perform("rearrangeObjects", controller: "org")
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 0]])
    }

    /// `addChild` selects the new child: the pending edits are committed first, or it is refused.
    @Test func tree_addChild_withPendingEdits_commitsFirst_invalidEdits422() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([[1]], controller: "org")  // Dunn
        let body: PropertyListValue = [
            "object": ["firstName": "Kim", "lastName": "Kahn", "department": ref("Department/2")]
        ]
        try h.registry.setPendingEdit(-1, forKeyPath: "salary", controller: "org")
        expectError("validation-failed", status: 422) {
            try h.registry.perform("addChild", controller: "org", body: body)
        }
        #expect(try h.json("directReports", of: "Employee/dee") == [])
        #expect(try h.value("selectionIndexPaths", of: "org") == [[1]])
        #expect(try h.registry.edits(controller: "org") == ["salary": -1])
        try h.registry.setPendingEdit(7, forKeyPath: "salary", controller: "org")
        try h.registry.perform("addChild", controller: "org", body: body)
        #expect(try h.json("salary", of: "Employee/dee") == 7)
        #expect(try h.value("selectionIndexPaths", of: "org") == [[1, 0]])
        #expect(try h.value("isEditing", of: "org") == false)
    }

    @Test func tree_insert_placesAtTheSelection_unsortedUntilRearranged() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([[0, 0]], controller: "org")  // Baker, before Cole
        try h.registry.perform(
            "insert", controller: "org",
            body: ["object": ["firstName": "Zed", "lastName": "Zulu", "department": ref("Department/1")]])
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 0]])
        #expect(try h.value("selection.lastName", of: "org") == "Zulu")
        #expect(try objectAt(h, [0, 1]) == ref("Employee/bob"))
        try h.registry.perform("rearrangeObjects", controller: "org")
        #expect(try objectAt(h, [0, 0]) == ref("Employee/bob"))
        #expect(try h.value("selection.lastName", of: "org") == "Zulu")
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 2]])
    }

    @Test func tree_remove_entityMode_deletes_childrenBecomeRoots() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([[0, 0]], controller: "org")
        try h.registry.perform("remove", controller: "org")
        #expect(h.store.read { $0.contains(id("Employee/bob")) } == false)
        #expect(try objectAt(h, [0, 0]) == ref("Employee/cy"))
        #expect(try objectAt(h, [2]) == ref("Employee/eve"))
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 0]])
    }

    @Test func tree_modelChange_rebuilds_preservesSelection() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([[0, 1]], controller: "org")
        try h.set("manager", of: "Employee/cy", to: ref("Employee/dee"))
        #expect(try objectAt(h, [1, 0]) == ref("Employee/cy"))
        #expect(try h.value("selectionIndexPaths", of: "org") == [[1, 0]])
        #expect(h.reported(.arrangedObjects, of: "org"))
    }

    /// As an array controller: a changed sort key re-sorts the tree only with `automaticallyRearrangesObjects`;
    /// without it the node keeps its place until `rearrangeObjects` (or a change of the tree's structure).
    @Test(arguments: [false, true])
    func tree_sortKeyChange_followsAutomaticallyRearrangesObjects(automatically: Bool) throws {
        let h = try harness(automaticallyRearrangesObjects: automatically)
        #expect(try objectAt(h, [0, 0]) == ref("Employee/bob"))
        try h.set("lastName", of: "Employee/bob", to: "Zeta")
        #expect(try objectAt(h, [0, 0]) == ref(automatically ? "Employee/cy" : "Employee/bob"))
        #expect(h.reported(.arrangedObjects, of: "org"))
        try h.registry.perform("rearrangeObjects", controller: "org")
        #expect(try objectAt(h, [0, 0]) == ref("Employee/cy"))
        #expect(try objectAt(h, [0, 1]) == ref("Employee/bob"))
    }

    /// With `automaticallyRearrangesObjects`, a sort key's change re-arranges the whole tree, the nodes its own
    /// insertions placed included (as an array controller re-sorts its inserted objects).
    @Test func tree_automaticallyRearranging_sortKeyChange_resortsInsertedNodesToo() throws {
        let h = try harness(automaticallyRearrangesObjects: true)
        try h.registry.setSelectionIndexPaths([[0]], controller: "org")
        try h.registry.perform(
            "insertChild", controller: "org",
            body: ["index": 0, "object": ["firstName": "Zed", "lastName": "Zorn", "department": ref("Department/1")]])
        #expect(try h.value("selection.lastName", of: "org") == "Zorn")
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 0]])  // Zorn, Baker, Cole
        try h.set("lastName", of: "Employee/cy", to: "Aab")
        #expect(try objectAt(h, [0, 0]) == ref("Employee/cy"))  // Aab, Baker, Zorn
        #expect(try objectAt(h, [0, 1]) == ref("Employee/bob"))
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0, 2]])
    }

    /// A node its `leafKeyPath` calls a leaf takes no children (NSTreeController disables adding them).
    @Test func tree_leafNode_cannotAddChildren() throws {
        let h = try Harness()
        try h.make([
            "name": "org", "kind": "tree", "content": "Employee", "filterPredicate": "manager == nil",
            "childrenKeyPath": "directReports", "leafKeyPath": "active", "sortDescriptors": [["key": "lastName"]],
        ])
        try h.set("active", of: "Employee/ann", to: false)  // `active` is true by default: a leaf
        try h.registry.setSelectionIndexPaths([[0]], controller: "org")
        #expect(try h.value("canAddChild", of: "org") == true)
        try h.set("active", of: "Employee/ann", to: true)
        #expect(try h.value("canAddChild", of: "org") == false)
        #expect(try h.value("canInsertChild", of: "org") == false)
        let count = h.store.read { $0.objectCount }
        for action in ["addChild", "insertChild"] {
            expectError("action-disabled", status: 409) {
                try h.registry.perform(
                    action, controller: "org",
                    body: ["object": ["firstName": "K", "lastName": "L", "department": ref("Department/1")]])
            }
        }
        #expect(h.store.read { $0.objectCount } == count)
    }

    /// In a tree of departments and their employees, a node added next to an employee is an employee.
    @Test func tree_addNextToAChildOfAnotherEntity_createsTheChildrensEntity() throws {
        let h = try Harness()
        try h.make([
            "name": "depts", "kind": "tree", "content": "Department", "childrenKeyPath": "employees",
            "sortDescriptors": [["key": "name"]],
        ])
        try h.registry.setSelectionIndexPaths([[2, 0]], controller: "depts")  // Sales: Ann
        #expect(try h.value("selection.firstName", of: "depts") == "Ann")
        // An employee has no `employees`: no children to add to it.
        #expect(try h.value("canAddChild", of: "depts") == false)
        try h.registry.perform(
            "add", controller: "depts", body: ["object": ["firstName": "Kim", "lastName": "Kahn"]])
        #expect(try h.value("selection.lastName", of: "depts") == "Kahn")
        #expect(try h.value("selection.department", of: "depts") == ref("Department/1"))
        #expect(try h.value("selectionIndexPaths", of: "depts") == [[2, 1]])
    }

    /// Without `preservesSelection` the selection keeps its index paths, but not those of removed nodes: with
    /// `avoidsEmptySelection` off, removing the selection leaves nothing selected (as an array controller).
    @Test func tree_remove_withoutPreservingOrAvoidingEmptySelection_selectsNothing() throws {
        let h = try Harness()
        try h.make([
            "name": "org", "kind": "tree", "content": "Employee", "filterPredicate": "manager == nil",
            "childrenKeyPath": "directReports", "sortDescriptors": [["key": "lastName"]],
            "preservesSelection": false, "avoidsEmptySelection": false,
        ])
        try h.registry.setSelectionIndexPaths([[0, 0]], controller: "org")  // Ann: Baker, Cole
        try h.registry.perform("remove", controller: "org")
        #expect(h.store.read { $0.contains(id("Employee/bob")) } == false)
        #expect(try objectAt(h, [0, 0]) == ref("Employee/cy"))  // not selected in Baker's place
        #expect(try h.value("selectionIndexPaths", of: "org") == [])
        // Paths of nodes that stay are kept as they are: the node now at the path is selected.
        try h.registry.setSelectionIndexPaths([[0]], controller: "org")
        try h.set("lastName", of: "Employee/ann", to: "Zeta")
        try h.registry.perform("rearrangeObjects", controller: "org")
        #expect(try h.value("selectionIndexPaths", of: "org") == [[0]])
        #expect(try h.value("selection.lastName", of: "org") == "Dunn")
    }

    @Test func tree_structureChange_rebuildsEvenWithoutAutomaticRearranging() throws {
        let h = try harness()
        try h.set("lastName", of: "Employee/bob", to: "Zeta")
        #expect(try objectAt(h, [0, 0]) == ref("Employee/bob"))
        try h.set("manager", of: "Employee/dee", to: ref("Employee/ann"))
        #expect(try objectAt(h, [0, 0]) == ref("Employee/cy"))
        #expect(try objectAt(h, [0, 1]) == ref("Employee/dee"))
        #expect(try objectAt(h, [0, 2]) == ref("Employee/bob"))
        #expect(try h.value("arrangedObjects", of: "org").arrayValue?.count == 1)
    }

    /// As an array controller selects its last object when only indexes past the end are asked for.
    @Test func tree_onlyInvalidPaths_avoidsEmptySelection_selectsTheLastRoot() throws {
        let h = try harness()
        try h.registry.setSelectionIndexPaths([[99], [0, 7]], controller: "org")
        #expect(try h.value("selectionIndexPaths", of: "org") == [[1]])
        try h.registry.setSelectionIndexPaths([], controller: "org")
        #expect(try h.value("selectionIndexPaths", of: "org") == [])
    }

    /// A count or leaf key path that ends in an operator collecting nothing would read null on every node.
    @Test(arguments: [("countKeyPath", "directReports.@sum"), ("leafKeyPath", "directReports.@max")])
    func tree_countOrLeafKeyPathEndingInAnOperator_refused(field: String, keyPath: String) throws {
        let h = try Harness()
        expectError("bad-controller", status: 400) {
            try h.make([
                "name": "t", "kind": "tree", "content": "Employee", "childrenKeyPath": "directReports",
                .init(stringLiteral: field): .string(keyPath),
            ])
        }
        #expect(!h.registry.contains("t"))
    }

    /// NSTreeController's `countKeyPath` is "the key path used to find the number of children for a node": one the
    /// model types as a string, a date, an object or a collection is refused (nodes said `"count": "Backus"`).
    @Test(arguments: [
        "lastName", "hireDate", "manager", "directReports", "active", "@count", "directReports.@sum.manager",
        "directReports.@max.manager",
    ])
    func tree_countKeyPathThatGivesNoNumber_refused(keyPath: String) throws {
        let h = try Harness()
        let error = expectError("bad-controller", status: 400) {
            try h.make([
                "name": "t", "kind": "tree", "content": "Employee", "childrenKeyPath": "directReports",
                "countKeyPath": .string(keyPath),
            ])
        }
        #expect(error?.fields["field"] == "countKeyPath")
        #expect(!h.registry.contains("t"))
        for numeric in ["directReports.@count", "salary", "directReports.@sum.salary"] {
            try h.make([
                "name": .string("n"), "kind": "tree", "content": "Employee", "childrenKeyPath": "directReports",
                "countKeyPath": .string(numeric),
            ])
            try h.registry.remove(named: "n")
        }
    }

    @Test func tree_childrenKeyPathNotToMany_refused() throws {
        let h = try Harness()
        expectError("bad-controller", status: 400) {
            try h.make(["name": "t", "kind": "tree", "content": "Employee", "childrenKeyPath": "manager"])
        }
        expectError("bad-controller", status: 400) {
            try h.make(["name": "t", "kind": "tree", "content": "Employee"])
        }
    }
}
