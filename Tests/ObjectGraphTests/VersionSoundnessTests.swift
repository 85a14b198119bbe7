import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

/// Random walks of changes over a model whose derived keys read several relationships away: after every commit,
/// each object whose JSON (derived keys included) differs from before has a new version (so a client's
/// `If-None-Match` never gets a stale 304, nor an `If-Match` a lost update), and `changesVersion(of:)` told inside
/// the transaction exactly what the commit moved.
struct VersionSoundnessTests {
    static let modelJSON = #"""
        {"entities": {
          "Shelf": {"attributes": {"label": {"type": "string"}},
                    "relationships": {"boxes": {"destination": "Box", "toMany": true, "inverse": "shelf"}},
                    "derived": {"heaviest": "boxes.@max.weight", "itemNames": "boxes.items.@unionOfArrays.name",
                                "boxCount": "boxes.@count", "nextTags": "boxes.next.tag"}},
          "Box": {"attributes": {"tag": {"type": "string"}},
                  "relationships": {"shelf": {"destination": "Shelf", "inverse": "boxes"},
                                    "items": {"destination": "Item", "toMany": true, "inverse": "box"},
                                    "next": {"destination": "Box", "inverse": "previous"},
                                    "previous": {"destination": "Box", "inverse": "next"}},
                  "derived": {"weight": "items.@sum.grams", "shelfLabel": "shelf.label", "nextTag": "next.tag",
                              "previousShelf": "previous.shelfLabel"}},
          "Item": {"attributes": {"name": {"type": "string"}, "grams": {"type": "integer"}, "note": {"type": "string"}},
                   "relationships": {"box": {"destination": "Box", "inverse": "items"}},
                   "derived": {"where": "box.shelfLabel", "siblings": "box.items.@count", "nextWeight": "box.next.weight",
                               "shelfNames": "box.shelf.itemNames"}}
        }}
        """#

    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func versionsMoveWheneverWhatAnObjectShowsChanges(seed: UInt64) throws {
        var random = SeededGenerator(state: seed)
        let store = ObjectStore(model: try model(Self.modelJSON))
        try store.transaction { tx in
            try tx.insertObjects([
                ["$id": "Shelf/s1", "label": "top"], ["$id": "Shelf/s2", "label": "low"],
                ["$id": "Box/b1", "shelf": ref("Shelf/s1")], ["$id": "Box/b2", "shelf": ref("Shelf/s1")],
                ["$id": "Box/b3", "shelf": ref("Shelf/s2"), "previous": ref("Box/b1")],
                ["$id": "Item/i1", "name": "a", "grams": 1, "box": ref("Box/b1")],
                ["$id": "Item/i2", "name": "b", "grams": 2, "box": ref("Box/b3")],
            ])
        }
        var seen = try Self.shown(store)
        var records: [ChangeRecord] = []
        var made = 0
        for step in 0..<150 {
            let live = Array(seen.keys).sorted { $0.description < $1.description }
            let result = try store.transaction { tx -> [ObjectID: Bool] in
                if step % 23 == 22 {  // alone: a graph replaced after other changes keeps no version
                    try? Self.replace(tx, random: &random)
                } else {
                    for _ in 0..<Int.random(in: 1...3, using: &random) {
                        try? Self.change(tx, live: live, made: &made, random: &random)
                    }
                    if step % 17 == 16, let last = records.last { try? tx.undo(last) }
                }
                return Dictionary(uniqueKeysWithValues: tx.view.allObjects().map { ($0, tx.changesVersion(of: $0)) })
            }
            if let record = result.record { records.append(record) }
            let now = try Self.shown(store)
            for (object, (json, version)) in now {
                let moved = version == result.seq && result.record != nil
                if step % 23 != 22 {  // after replaceGraph it tells every object
                    #expect(moved == (result.value[object] ?? false), "seed \(seed) step \(step): \(object) told")
                }
                guard let before = seen[object] else { continue }
                if !json.isIdentical(to: before.json) {
                    #expect(version != before.version, "seed \(seed) step \(step): \(object) changed, same version")
                }
            }
            seen = now
        }
        // A snapshot keeps the versions.
        let copy = ObjectStore(model: try model(Self.modelJSON))
        try copy.restore(binarySnapshot: store.read { $0.binarySnapshot() })
        #expect(try Self.shown(copy).mapValues(\.version) == seen.mapValues(\.version))
    }

    /// Every object's JSON (derived keys included) and version.
    static func shown(_ store: ObjectStore) throws -> [ObjectID: (json: PropertyListValue, version: Int64)] {
        try store.read { view throws(ObjectGraphError) in
            var shown: [ObjectID: (json: PropertyListValue, version: Int64)] = [:]
            for object in view.allObjects() {
                shown[object] = (try view.json(of: object), try view.version(of: object))
            }
            return shown
        }
    }

    /// One random change; refused ones (a cycle, an object gone) are skipped by the caller.
    static func change(
        _ tx: Transaction, live: [ObjectID], made: inout Int, random: inout SeededGenerator
    ) throws {
        func any(_ entity: String) -> ObjectID? {
            live.filter { $0.entity == entity }.randomElement(using: &random)
        }
        let words: [PropertyListValue] = ["x", "y", "z", "top", "low"]
        func reference(_ entity: String) -> PropertyListValue {
            Bool.random(using: &random) ? any(entity).map { ["$ref": .string($0.description)] } ?? .null : .null
        }
        switch Int.random(in: 0..<11, using: &random) {
        case 0:
            if let shelf = any("Shelf") {
                try tx.setValue(words.randomElement(using: &random)!, forKeyPath: "label", of: shelf)
            }
        case 1:
            if let box = any("Box") {
                try tx.setValue(words.randomElement(using: &random)!, forKeyPath: "tag", of: box)
            }
        case 2:
            if let item = any("Item") {
                try tx.setValue(words.randomElement(using: &random)!, forKeyPath: "name", of: item)
            }
        case 3:
            if let item = any("Item") {
                try tx.setValue(.integer(.random(in: 0...3, using: &random)), forKeyPath: "grams", of: item)
            }
        case 4:
            if let item = any("Item") {
                try tx.setValue(words.randomElement(using: &random)!, forKeyPath: "note", of: item)
            }
        case 5: if let item = any("Item") { try tx.setValue(reference("Box"), forKeyPath: "box", of: item) }
        case 6: if let box = any("Box") { try tx.setValue(reference("Shelf"), forKeyPath: "shelf", of: box) }
        case 7: if let box = any("Box") { try tx.setValue(reference("Box"), forKeyPath: "next", of: box) }
        case 8:
            made += 1
            let entity = ["Shelf", "Box", "Item"].randomElement(using: &random)!
            let link: [String: PropertyListValue] =
                switch entity {
                case "Box": ["shelf": reference("Shelf"), "previous": reference("Box")]
                case "Item": ["box": reference("Box"), "grams": 1, "name": "new"]
                default: ["label": "new"]
                }
            _ = try tx.insert(entity, id: "n\(made)", values: link.filter { !$0.value.isNull })
        case 9:
            if let entity = ["Shelf", "Box", "Item"].randomElement(using: &random), let object = any(entity) {
                try tx.delete(object)
            }
        default:
            if let box = any("Box"), let item = any("Item") { try tx.insert(item, intoKeyPath: "items", of: box) }
        }
    }

    /// `replaceGraph` with the current export, one attribute changed (or none).
    static func replace(_ tx: Transaction, random: inout SeededGenerator) throws {
        var objects = tx.view.exportGraph()["objects"]?.arrayValue ?? []
        guard !objects.isEmpty else { return }
        let index = Int.random(in: objects.indices, using: &random)
        if var fields = objects[index].dictionaryValue, Bool.random(using: &random) {
            for key in ["label", "tag", "name"]
            where fields[key] != nil || key == "tag" && fields["$id"]?.stringValue?.hasPrefix("Box/") == true {
                fields[key] = "replaced"
            }
            objects[index] = .dictionary(fields)
        }
        try tx.replaceGraph(with: ["objects": .array(objects)])
    }
}

extension ReadView {
    fileprivate func allObjects() -> [ObjectID] {
        model.entities.flatMap { (try? objects(of: $0.name)) ?? [] }
    }
}
