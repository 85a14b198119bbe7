import Foundation
import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

struct SortDescriptorTests {
    /// Each key is read from every object arranged: at most 64 descriptors in one list, in either form.
    @Test func descriptorsAreBounded() throws {
        let keys = (0..<65).map { "k\($0)" }
        #expect(try ObjectGraph.SortDescriptor.descriptors(query: keys.dropLast().joined(separator: ",")).count == 64)
        expectError("bad-query", status: 400) {
            _ = try ObjectGraph.SortDescriptor.descriptors(query: keys.joined(separator: ","))
        }
        expectError("bad-query", status: 400) {
            _ = try ObjectGraph.SortDescriptor.descriptors(json: .array(keys.map { ["key": .string($0)] }))
        }
    }

    @Test func readsJSONWithCocoaDefaults() throws {
        let plain = try ObjectGraph.SortDescriptor(json: ["key": "lastName"])
        #expect(plain == ObjectGraph.SortDescriptor(key: "lastName", ascending: true, selector: .compare))
        let full = try ObjectGraph.SortDescriptor(
            json: ["key": "lastName", "ascending": false, "selector": "caseInsensitiveCompare:"])
        #expect(
            full == ObjectGraph.SortDescriptor(key: "lastName", ascending: false, selector: .caseInsensitiveCompare))
        #expect(try ObjectGraph.SortDescriptor(json: full.json) == full)
        let list = try ObjectGraph.SortDescriptor.descriptors(
            json: [["key": "a"], ["key": "b.c", "selector": "localizedStandardCompare:"]])
        #expect(list.map(\.selector) == [.compare, .localizedStandardCompare])
        #expect(try ObjectGraph.SortDescriptor.descriptors(json: nil).isEmpty)
    }

    static let badJSON: [PropertyListValue] = [
        "lastName",
        [:],
        ["key": ""],
        ["key": 3],
        ["key": "a", "ascending": "yes"],
        ["key": "a", "selector": "localizedCompare:"],
        ["key": "a", "selector": 1],
        ["key": "a", "comparator": "compare:"],
        ["key": "a..b"],
    ]

    /// The list is an array (null is none): a bare descriptor or a string is not one.
    @Test(arguments: [["key": "a"], "lastName", 3] as [PropertyListValue])
    func listThatIsNoArrayIsBadQuery(json: PropertyListValue) {
        #expect {
            _ = try ObjectGraph.SortDescriptor.descriptors(json: json)
        } throws: { error in
            (error as? ObjectGraphError).map { $0.status == 400 && $0.code == "bad-query" } ?? false
        }
    }

    @Test(arguments: badJSON)
    func badJSONIsBadQuery(json: PropertyListValue) {
        #expect {
            _ = try ObjectGraph.SortDescriptor.descriptors(json: [json])
        } throws: { error in
            (error as? ObjectGraphError).map { $0.status == 400 && $0.code == "bad-query" } ?? false
        }
    }

    @Test func unknownSelectorNamesTheAllowedOnes() {
        #expect {
            _ = try ObjectGraph.SortDescriptor(json: ["key": "a", "selector": "localizedCompare:"])
        } throws: { error in
            (error as? ObjectGraphError)?.fields["allowed"]
                == ["compare:", "caseInsensitiveCompare:", "localizedStandardCompare:"]
        }
    }

    @Test func readsTheQueryForm() throws {
        let descriptors = try ObjectGraph.SortDescriptor.descriptors(query: "lastName,-salary")
        #expect(
            descriptors == [
                ObjectGraph.SortDescriptor(key: "lastName"),
                ObjectGraph.SortDescriptor(key: "salary", ascending: false),
            ])
        #expect(try ObjectGraph.SortDescriptor.descriptors(query: "").isEmpty)
        let spaced = try ObjectGraph.SortDescriptor.descriptors(query: " +a , -b.c:caseInsensitiveCompare ")
        #expect(
            spaced == [
                ObjectGraph.SortDescriptor(key: "a"),
                ObjectGraph.SortDescriptor(key: "b.c", ascending: false, selector: .caseInsensitiveCompare),
            ])
        #expect(spaced.map(\.description) == ["a", "-b.c:caseInsensitiveCompare:"])
        for bad in ["a,,b", "-", "a,", "a b", "a:nope", ".a"] {
            #expect(throws: ObjectGraphError.self) { try ObjectGraph.SortDescriptor.descriptors(query: bad) }
        }
    }

    /// People with last names, salaries (integer and real mixed, one nil) and hire dates.
    static func staff() -> (PredicateTestWorld, [KeyValue]) {
        var world = PredicateTestWorld()
        let rows: [(String, String, PropertyListValue, PropertyListValue)] = [
            ("1", "Smith", 50_000, .date(Date(timeIntervalSince1970: 300))),
            ("2", "adams", 72_000.5, .date(Date(timeIntervalSince1970: 100))),
            ("3", "Smith", 90_000, .null),
            ("4", "Brown", .null, .date(Date(timeIntervalSince1970: 200))),
            ("5", "Adams", 60_000, .date(Date(timeIntervalSince1970: 50))),
            ("6", "Smith", 72_000, .date(Date(timeIntervalSince1970: 400))),
        ]
        let subjects = rows.map { id, lastName, salary, hired in
            world.add(
                "Employee/\(id)",
                ["lastName": .value(.string(lastName)), "salary": .value(salary), "hireDate": .value(hired)])
        }
        return (world, subjects)
    }

    private static func ids(_ subjects: [KeyValue]) -> [String] {
        subjects.map { subject in
            if case .object(let id) = subject { return id.id }
            return "?"
        }
    }

    @Test func sortsByLastNameThenDescendingSalary() throws {
        let (world, staff) = Self.staff()
        let descriptors = try ObjectGraph.SortDescriptor.descriptors(query: "lastName,-salary")
        let sorted = try ObjectGraph.SortDescriptor.sort(staff, by: descriptors, resolver: world)
        // compare: is literal, so upper case sorts before lower case.
        #expect(Self.ids(sorted) == ["5", "4", "3", "6", "1", "2"])
    }

    @Test func caseInsensitiveCompareIgnoresCaseAndIsStable() throws {
        let (world, staff) = Self.staff()
        let sorted = try ObjectGraph.SortDescriptor.sort(
            staff, by: [ObjectGraph.SortDescriptor(key: "lastName", selector: .caseInsensitiveCompare)], resolver: world
        )
        #expect(Self.ids(sorted) == ["2", "5", "4", "1", "3", "6"])
    }

    @Test func nilSortsFirstAscendingAndLastDescending() throws {
        let (world, staff) = Self.staff()
        let ascending = try ObjectGraph.SortDescriptor.sort(
            staff, by: [ObjectGraph.SortDescriptor(key: "salary")], resolver: world)
        #expect(Self.ids(ascending) == ["4", "1", "5", "6", "2", "3"])
        let descending = try ObjectGraph.SortDescriptor.sort(
            staff, by: [ObjectGraph.SortDescriptor(key: "salary", ascending: false)], resolver: world)
        #expect(Self.ids(descending) == ["3", "2", "6", "5", "1", "4"])
        let byDate = try ObjectGraph.SortDescriptor.sort(
            staff, by: [ObjectGraph.SortDescriptor(key: "hireDate")], resolver: world)
        #expect(Self.ids(byDate) == ["3", "5", "2", "4", "1", "6"])
    }

    private func sortedValues(
        _ values: [PropertyListValue], _ selector: ObjectGraph.SortDescriptor.Selector, ascending: Bool = true
    ) throws -> [PropertyListValue] {
        let ordering = SortOrdering([ObjectGraph.SortDescriptor(key: "v", ascending: ascending, selector: selector)])
        let subjects = values.map { KeyValue.value(["v": $0]) }
        return try ordering.sorted(subjects, resolver: PredicateTestWorld()).map { $0.json["v"] ?? .null }
    }

    @Test func localizedStandardCompareIsNumericAwareAndFolds() throws {
        let names: [PropertyListValue] = ["Foo 10", "foo 5", "Foo 1", "Éclair", "apple", "Foo 05b", "eclair 2"]
        #expect(
            try sortedValues(names, .localizedStandardCompare)
                == ["apple", "Éclair", "eclair 2", "Foo 1", "foo 5", "Foo 05b", "Foo 10"])
        #expect(try sortedValues(["Foo 10", "Foo 5"], .compare) == ["Foo 10", "Foo 5"])
        #expect(
            try sortedValues(["file100", "file20", "file3"], .localizedStandardCompare) == [
                "file3", "file20", "file100",
            ])
        #expect(
            try sortedValues(["a99999999999999999999999", "a100000000000000000000000"], .localizedStandardCompare)
                == ["a99999999999999999999999", "a100000000000000000000000"])
    }

    /// The Finder's order (Apple's TA22935): punctuation first, then numbers, then letters; white space before
    /// punctuation, symbols after it; digits of any script are numbers.
    @Test func localizedStandardCompareSortsPunctuationAndSymbolsBeforeDigitsAndLetters() throws {
        #expect(
            try sortedValues(["aaa", "111", "zzz", "_zzz", "11 10", "1110", "a0"], .localizedStandardCompare) == [
                "_zzz", "11 10", "111", "1110", "a0", "aaa", "zzz",
            ])
        #expect(try sortedValues(["a1", "a-b", "a b"], .localizedStandardCompare) == ["a b", "a-b", "a1"])
        #expect(
            try sortedValues(["~tilde", "z", "#tag", "1abc", "$5", "{brace"], .localizedStandardCompare) == [
                "{brace", "#tag", "~tilde", "$5", "1abc", "z",
            ])
        // Within each group, the root collation's order (ICU 72, numeric), not code points.
        let icu = [
            "_zzz", "-zzz", ",zzz", ";zzz", ":zzz", "!zzz", "?zzz", ".zzz", "'zzz", "\"zzz", "(zzz", ")zzz", "[zzz",
            "]zzz", "{zzz", "}zzz", "@zzz", "*zzz", "/zzz", "\\zzz", "&zzz", "#zzz", "%zzz", "`zzz", "^zzz", "+zzz",
            "<zzz", "=zzz", ">zzz", "|zzz", "~zzz", "$zzz", "0zzz", "zzz",
        ]
        #expect(
            try sortedValues(icu.reversed().map { .string($0) }, .localizedStandardCompare) == icu.map { .string($0) })
        let latin = ["-b", "–a", "!b", "¡a", "?b", "¿a", "\"b", "«a", "§a", "&b", "°a", "+b", "$b", "€a"]
        #expect(
            try sortedValues(latin.reversed().map { .string($0) }, .localizedStandardCompare)
                == latin.map { .string($0) })
        #expect(
            try sortedValues(["x\u{663}", "x10", "x\u{662}"], .localizedStandardCompare) == [
                "x\u{662}", "x\u{663}", "x10",
            ])
    }

    /// `NSWidthInsensitiveSearch`: full-width and other compatibility forms sort with what they stand for, and after
    /// it when otherwise equal.
    @Test func localizedStandardCompareIgnoresWidthAndCompatibilityForms() throws {
        #expect(
            try sortedValues(["Ａbc", "abd", "ℌilbert", "Hilbert", "Ǆemal", "Dzemal", "Abc"], .localizedStandardCompare)
                == ["Abc", "Ａbc", "abd", "Dzemal", "Ǆemal", "Hilbert", "ℌilbert"])
        // Numbers in compatibility forms join no run of digits (ICU's root collation, numeric).
        #expect(
            try sortedValues(["11", "1½", "10", "2", "1"], .localizedStandardCompare) == ["1", "1½", "2", "10", "11"])
        #expect(
            try sortedValues(["Track 24", "Track 2³", "Track 10"], .localizedStandardCompare) == [
                "Track 2³", "Track 10", "Track 24",
            ])
        #expect(try sortedValues(["x⑩", "x10", "x①", "x9"], .localizedStandardCompare) == ["x9", "x10", "x①", "x⑩"])
        // Roman numerals are letters (their decompositions hold no digits).
        #expect(
            try sortedValues(["Iz", "Ⅸ", "Ia", "Vz", "Ⅵ", "Va"], .localizedStandardCompare) == [
                "Ia", "Ⅸ", "Iz", "Va", "Ⅵ", "Vz",
            ])
    }

    /// Foundation's order (checked with swift-corelibs-foundation's CFString): `compare:` and
    /// `caseInsensitiveCompare:` compare canonical decompositions, so accented letters follow their base letter;
    /// `localizedStandardCompare:` never finds two different strings the same.
    @Test func stringsSortAsFoundationDoes() throws {
        let labels: [PropertyListValue] = [
            "Zebra", "café", "Ångström", "Bob", "cafe", "Éclair", "Øre", "e\u{301}cru",
        ]
        #expect(
            try sortedValues(labels, .compare) == [
                "Ångström", "Bob", "Éclair", "Zebra", "cafe", "café", "e\u{301}cru", "Øre",
            ])
        #expect(
            try sortedValues(labels, .caseInsensitiveCompare) == [
                "Ångström", "Bob", "cafe", "café", "Éclair", "e\u{301}cru", "Zebra", "Øre",
            ])
        #expect(
            try sortedValues(labels, .localizedStandardCompare) == [
                "Ångström", "Bob", "cafe", "café", "Éclair", "e\u{301}cru", "Øre", "Zebra",
            ])
        #expect(
            try sortedValues(["écru", "Ecru", "ÉCRU", "ecru"], .localizedStandardCompare) == [
                "ecru", "Ecru", "écru", "ÉCRU",
            ])
        #expect(
            try sortedValues(["File01", "File1", "file1"], .localizedStandardCompare) == ["file1", "File1", "File01"])
    }

    @Test func compareIsLiteral() throws {
        #expect(try sortedValues(["b", "a", "B", "A"], .compare) == ["A", "B", "a", "b"])
        #expect(try sortedValues(["b", "a", "B", "A"], .caseInsensitiveCompare) == ["a", "A", "b", "B"])
    }

    @Test func valuesOfEachKindSortNaturally() throws {
        #expect(try sortedValues([2.5, 2, -1, 3, nil, 1e300], .compare) == [nil, -1, 2, 2.5, 3, 1e300])
        #expect(try sortedValues([true, false, true], .compare) == [false, true, true])
        #expect(try sortedValues([true, false], .compare, ascending: false) == [true, false])
        // Different kinds: null < number < string < date.
        let date = PropertyListValue.date(Date(timeIntervalSince1970: 0))
        #expect(try sortedValues(["x", date, 1, nil], .compare) == [nil, 1, "x", date])
        let objects = try SortOrdering([ObjectGraph.SortDescriptor(key: "manager")]).sorted(
            [.value(["manager": "b"]), .value(["manager": "a"])], resolver: PredicateTestWorld())
        #expect(objects.map { $0.json["manager"] } == ["a", "b"])
    }

    @Test func sortsObjectIDsAndOtherElements() throws {
        let (world, staff) = Self.staff()
        let ids = staff.compactMap { subject -> ObjectID? in
            if case .object(let id) = subject { return id }
            return nil
        }
        let sorted = try SortOrdering([ObjectGraph.SortDescriptor(key: "hireDate", ascending: false)])
            .sorted(ids, subject: { .object($0) }, resolver: world)
        #expect(sorted.map(\.id) == ["6", "1", "4", "2", "5", "3"])
        let byId = try SortOrdering([ObjectGraph.SortDescriptor(key: "manager")]).sorted(
            [.value(["manager": .null]), .value(["manager": "x"])], resolver: world)
        #expect(byId.first?.json["manager"] == .null)
    }

    @Test func comparatorAndBinaryInsertion() throws {
        let (initialWorld, staff) = Self.staff()
        var world = initialWorld
        let ordering = SortOrdering(try ObjectGraph.SortDescriptor.descriptors(query: "lastName,-salary"))
        let sorted = try ordering.sorted(staff, resolver: world)
        #expect(try ordering.compare(sorted[0], sorted[1], resolver: world) == .orderedAscending)
        #expect(try ordering.compare(sorted[1], sorted[0], resolver: world) == .orderedDescending)
        #expect(try ordering.compare(sorted[2], sorted[2], resolver: world) == .orderedSame)
        let single = ObjectGraph.SortDescriptor(key: "salary")
        #expect(try single.compare(staff[0], staff[1], resolver: world) == .orderedAscending)
        // Smith at 80,000 goes between Smith 90,000 and Smith 72,000; an equal Smith 90,000 goes after its peer.
        let newcomer = world.add("Employee/7", ["lastName": .value("Smith"), "salary": .value(80_000)])
        #expect(try ordering.insertionIndex(for: newcomer, in: sorted, resolver: world) == 3)
        let twin = world.add("Employee/8", ["lastName": .value("Smith"), "salary": .value(90_000)])
        #expect(try ordering.insertionIndex(for: twin, in: sorted, resolver: world) == 3)
        let first = world.add("Employee/9", ["lastName": .value("AAA"), "salary": .value(1)])
        #expect(try ordering.insertionIndex(for: first, in: sorted, resolver: world) == 0)
        let last = world.add("Employee/10", ["lastName": .value("zz"), "salary": .value(1)])
        #expect(try ordering.insertionIndex(for: last, in: sorted, resolver: world) == sorted.count)
        // With cached keys.
        let keys = try sorted.map { try ordering.keys(of: $0, resolver: world) }
        let newcomerKeys = try ordering.keys(of: newcomer, resolver: world)
        #expect(ordering.insertionIndex(for: newcomerKeys, count: keys.count) { keys[$0] } == 3)
        #expect(ordering.compare(keys[0], keys[5]) == .orderedAscending)
    }

    @Test func undefinedSortKeysPropagate() {
        let (world, staff) = Self.staff()
        #expect {
            _ = try ObjectGraph.SortDescriptor.sort(
                staff, by: [ObjectGraph.SortDescriptor(key: "nope")], resolver: world)
        } throws: { error in
            (error as? ObjectGraphError)?.code == "undefined-key"
        }
    }
}
