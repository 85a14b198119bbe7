import Foundation
import ObjectGraph
import PropertyList
import Testing

/// Scale figures of issue 3 (run with `BINDERY_PERF=1`, ideally `-c release`); they print, and check loose bounds.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["BINDERY_PERF"] != nil))
struct PerformanceTests {
    static let modelJSON = """
        {"entities": {
          "Team": {"attributes": {"name": {"type": "string"}},
            "relationships": {"members": {"destination": "Member", "toMany": true, "inverse": "team"}}},
          "Member": {"attributes": {"name": {"type": "string"}, "city": {"type": "string"},
                                    "salary": {"type": "integer"}},
            "relationships": {"team": {"destination": "Team", "inverse": "members"}}}}}
        """

    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func fill(_ store: ObjectStore, count: Int, batch: Int = 10_000) throws {
        try store.transaction { tx in
            for team in 0..<10 { try tx.insert("Team", id: "t\(team)", values: ["name": .string("Team \(team)")]) }
        }
        var next = 0
        while next < count {
            let end = min(count, next + batch)
            try store.transaction { tx in
                for n in next..<end {
                    try tx.insert(
                        "Member", id: "m\(n)",
                        values: [
                            "name": .string("N\(n % 9973)"), "city": .string(["Oslo", "Rome", "Lima"][n % 3]),
                            "salary": .integer(Int64(n % 1000)), "team": ["$ref": .string("Team/t\(n % 10)")],
                        ])
                }
            }
            next = end
        }
    }

    @Test func insertAMillionObjects() throws {
        let store = ObjectStore(model: try model(Self.modelJSON))
        let before = Self.residentBytes()
        let start = ContinuousClock.now
        try Self.fill(store, count: 1_000_000)
        let elapsed = ContinuousClock.now - start
        let after = Self.residentBytes()
        let perObject = Double(after - before) / 1_000_000
        let values = 3 * MemoryLayout<PropertyListValue>.stride
        print(
            "insert 1,000,000: \(elapsed), RSS \(perObject) B/object (values: \(values) B), overhead \(perObject - Double(values)) B"
        )
        #expect(try store.read { view in try view.count(of: "Member") } == 1_000_000)
        #expect(perObject - Double(values) < 400)
    }

    @Test func filterAndSortAHundredThousand() throws {
        let store = ObjectStore(model: try model(Self.modelJSON))
        try Self.fill(store, count: 100_000)
        let predicate = try Predicate(format: "salary > 300 AND team.name != 'Team 3'")
        let ordering = SortOrdering(try SortDescriptor.descriptors(query: "city,-salary"))
        let (count, viaIDs) = try store.read { view in
            let start = ContinuousClock.now
            let ids = try view.objects(of: "Member")
            let filtered = try predicate.filter(ids, subject: { .object($0) }, resolver: view)
            let sorted = try ordering.sorted(filtered, subject: { .object($0) }, resolver: view)
            return (sorted.count, ContinuousClock.now - start)
        }
        let viaHandles = try store.read { view in
            let start = ContinuousClock.now
            let salary = try view.compile("salary", for: "Member")
            let team = try view.compile("team.name", for: "Member")
            let handles = try view.handles(of: "Member").filter { handle in
                let s = try view.plainValue(of: handle, at: salary).integerValue ?? 0
                return try s > 300 && view.plainValue(of: handle, at: team) != "Team 3"
            }
            _ = handles.count
            return ContinuousClock.now - start
        }
        let reads = try store.read { view in
            let ids = try view.objects(of: "Member")
            let start = ContinuousClock.now
            for object in ids { _ = try view.value(forKeyPath: "salary", of: KeyValue.object(object)) }
            let one = ContinuousClock.now - start
            let start2 = ContinuousClock.now
            _ = try predicate.filter(ids, subject: { .object($0) }, resolver: view)
            return (one, ContinuousClock.now - start2)
        }
        print("100,000 KeyPathResolving reads of salary: \(reads.0); filter alone: \(reads.1)")
        print("filter+sort 100,000 via KeyPathResolving: \(viaIDs) (\(count) kept); filter via handles: \(viaHandles)")
        #expect(count > 0)
    }
}
