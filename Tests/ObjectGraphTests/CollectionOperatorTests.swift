import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

/// Cocoa's documented cases and those Cappuccino and GNUstep test (Tom 27, Dick 31, Harry 47).
struct CollectionOperatorTests {
    static let modelJSON = """
        {"entities": {
          "Company": {"relationships": {"groups": {"destination": "Group", "toMany": true, "inverse": "company"}}},
          "Group": {"attributes": {"name": {"type": "string"}},
            "relationships": {"people": {"destination": "Person", "toMany": true, "inverse": "group"},
                              "company": {"destination": "Company", "inverse": "groups"}},
            "derived": {"totalAge": "people.@sum.age"}},
          "Person": {"attributes": {"name": {"type": "string"}, "age": {"type": "integer"},
                                    "weight": {"type": "real"}, "born": {"type": "date"}, "tags": {"type": "any"}},
            "relationships": {"group": {"destination": "Group", "inverse": "people"}}}}}
        """

    func store() throws -> ObjectStore {
        let store = ObjectStore(model: try model(Self.modelJSON))
        try store.transaction { tx in
            try tx.insertObjects([
                ["$id": "Company/c", "groups": [ref("Group/g"), ref("Group/empty"), ref("Group/h")]],
                ["$id": "Group/g", "name": "stooges"],
                ["$id": "Group/empty", "name": "nobody"],
                ["$id": "Group/h", "name": "others"],
                [
                    "$id": "Person/tom", "name": "Tom", "age": 27, "weight": 70.5, "group": ref("Group/g"),
                    "born": "1990-05-01", "tags": ["a", "b"],
                ],
                [
                    "$id": "Person/dick", "name": "Dick", "age": 31, "weight": 80, "group": ref("Group/g"),
                    "born": "1980-01-01", "tags": ["b"],
                ],
                ["$id": "Person/harry", "name": "Harry", "age": 47, "group": ref("Group/g"), "born": "2000-12-31"],
                ["$id": "Person/ann", "name": "Ann", "age": 27, "group": ref("Group/h"), "tags": ["c"]],
            ])
        }
        return store
    }

    @Test func sumAvgMinMaxCount() throws {
        let store = try store()
        #expect(try store.json("people.@sum.age", of: "Group/g") == 105)
        #expect(try store.json("people.@avg.age", of: "Group/g") == 35.0)
        #expect(try store.json("people.@min.age", of: "Group/g") == 27)
        #expect(try store.json("people.@max.age", of: "Group/g") == 47)
        #expect(try store.json("people.@count", of: "Group/g") == 3)
        #expect(try store.json("totalAge", of: "Group/g") == 105)
    }

    /// A to-many's `@count` is its length: it takes none of a run's allowance of to-many values (a listing sorted
    /// by `department.employees.@count` counts each employee's department, however large), while the same to-many
    /// read whole does; from a collection, `@count` counts the collection (Cocoa).
    @Test func countOfAToManyTakesNoAllowance() throws {
        let store = try store()
        let counted = try KeyPathAllowance.withLimit(total: 2, perEvaluation: 2) {
            try store.json("people.@count", of: "Group/g")
        }
        #expect(counted.value == 3 && counted.used == 0)
        expectError("bad-key-path", status: 400) {
            _ = try KeyPathAllowance.withLimit(total: 2, perEvaluation: 2) { try store.json("people", of: "Group/g") }
        }
        #expect(try store.json("groups.people.@count", of: "Company/c") == 3)
    }

    /// Under `caching` (controllers arranging their content, an export), a derived key that many objects read
    /// (`group.totalAge`, the sum of the group's people) is evaluated once per object read, not once per reader.
    @Test func cachingEvaluatesADerivedKeyOncePerObjectRead() throws {
        let store = try store()
        let people = ["Person/tom", "Person/dick", "Person/harry"]
        let cached = try KeyPathAllowance.caching { try people.map { try store.json("group.totalAge", of: $0) } }
        #expect(cached.value == [105, 105, 105])
        #expect(cached.used == 3)
        let uncached = try KeyPathAllowance.withLimit(perEvaluation: 1_000) {
            try people.map { try store.json("group.totalAge", of: $0) }
        }
        #expect(uncached.used == 9)
    }

    @Test func emptyCollections() throws {
        let store = try store()
        #expect(try store.json("people.@sum.age", of: "Group/empty") == 0)
        #expect(try store.json("people.@avg.age", of: "Group/empty") == nil)
        #expect(try store.json("people.@min.age", of: "Group/empty") == nil)
        #expect(try store.json("people.@max.name", of: "Group/empty") == nil)
        #expect(try store.json("people.@count", of: "Group/empty") == 0)
        #expect(try store.json("people.@unionOfObjects.name", of: "Group/empty") == [])
    }

    @Test func minMaxOfStringsAndDates() throws {
        let store = try store()
        #expect(try store.json("people.@min.name", of: "Group/g") == "Dick")
        #expect(try store.json("people.@max.name", of: "Group/g") == "Tom")
        let latest = try store.json("people.@max.born", of: "Group/g")
        #expect(latest == .date(ISO8601.date(from: "2000-12-31")!))
    }

    /// `@min` and `@max` order as `compare:` sorts and predicates do: an accented letter right after its base letter
    /// (`Émile` before `File`, where plain scalar order puts it after `Z`), booleans among numbers as 0 and 1.
    @Test func minMaxOrderAsCompareDoes() throws {
        let store = try store()
        try store.transaction { tx in
            try tx.setValue("Émile", forKeyPath: "name", of: id("Person/tom"))
            try tx.setValue("File", forKeyPath: "name", of: id("Person/dick"))
            try tx.setValue("file", forKeyPath: "name", of: id("Person/harry"))
            try tx.setValue([1, 2.5, true], forKeyPath: "tags", of: id("Person/ann"))
        }
        #expect(try store.json("people.@min.name", of: "Group/g") == "Émile")
        #expect(try store.json("people.@max.name", of: "Group/g") == "file")
        #expect(try store.json("tags.@max.self", of: "Person/ann") == 2.5)
        #expect(try store.json("tags.@min.self", of: "Person/ann") == 1)
    }

    @Test func sumOfRealsIsReal() throws {
        let store = try store()
        // Harry has no weight: nulls are skipped by @sum, but @avg divides by the collection's count (Cocoa).
        #expect(try store.json("people.@sum.weight", of: "Group/g") == 150.5)
        #expect(try store.json("people.@avg.weight", of: "Group/g") == .real(150.5 / 3))
    }

    /// A mean is answered when the sum of the terms overflows a double though the mean does not (it read as null,
    /// which is also the mean of nothing); the sum itself cannot be written, and is null.
    @Test func averageOfHugeRealsIsFinite() throws {
        let store = try store()
        try store.transaction { tx in
            for id in ["tom", "dick", "harry"] {
                try tx.setValue(
                    .real(1.7976931348623157e308), forKeyPath: "weight",
                    of: try #require(ObjectID(reference: "Person/\(id)")))
            }
        }
        #expect(try store.json("people.@avg.weight", of: "Group/g") == .real(1.7976931348623157e308))
    }

    /// A sum past the largest double is null, also to predicates and sorts (it was infinity there, behind a null in
    /// JSON: `== nil` false, `> 1e308` true); one whose running total overflows but which fits is answered.
    @Test func sumOfHugeRealsIsNullOrFits() throws {
        let store = try store()
        let group = try #require(ObjectID(reference: "Group/g"))
        try store.transaction { tx in
            for (id, weight) in [("tom", 1e308), ("dick", 1.5e308), ("harry", -1e308)] {
                try tx.setValue(
                    .real(weight), forKeyPath: "weight", of: try #require(ObjectID(reference: "Person/\(id)")))
            }
        }
        let fits = try #require(try store.json("people.@sum.weight", of: "Group/g").doubleValue)
        #expect(abs(fits - 1.5e308) < 1e293)
        try store.transaction { tx in
            try tx.setValue(.real(1e308), forKeyPath: "weight", of: try #require(ObjectID(reference: "Person/harry")))
        }
        #expect(try store.json("people.@sum.weight", of: "Group/g") == .null)
        // In any order, however far the running total goes past the largest double.
        let huge = 1.7e308
        for (terms, expected) in [
            (Array(repeating: huge, count: 5) + Array(repeating: -huge, count: 4), huge),
            (Array(repeating: huge, count: 6) + Array(repeating: -huge, count: 6), 0),
        ] {
            try store.transaction { tx in
                try tx.setValue(
                    .array(terms.map { .real($0) }), forKeyPath: "tags",
                    of: try #require(ObjectID(reference: "Person/ann")))
            }
            let sum = try store.json("tags.@sum.self", of: "Person/ann")
            #expect(sum == .real(expected), "\(sum)")
            #expect(try store.json("tags.@avg.self", of: "Person/ann") == .real(expected / Double(terms.count)))
        }
        for (format, expected) in [
            ("people.@sum.weight == nil", true), ("people.@sum.weight > 1e308", false),
            ("people.@sum.weight != nil", false),
        ] {
            let predicate = try ObjectGraph.Predicate(format: format)
            let matches = store.read { view in Result { try predicate.evaluate(with: .object(group), resolver: view) } }
            #expect(try matches.get() == expected, "\(format)")
        }
    }

    /// Integers are added exactly: a running total past 2^63 does not make a sum that fits a real (it made
    /// [2^63 - 1, 5, -10] 9.223372036854776e18); one that does not fit is the nearest real.
    @Test func integerSumsAreExact() throws {
        let store = try store()
        try store.transaction { tx in
            let ann = try #require(ObjectID(reference: "Person/ann"))
            try tx.setValue([.integer(.max), 5, -10, true], forKeyPath: "tags", of: ann)
        }
        #expect(try store.json("tags.@sum.self", of: "Person/ann") == .integer(.max - 4))
        try store.transaction { tx in
            let ann = try #require(ObjectID(reference: "Person/ann"))
            try tx.setValue([.integer(.max), .integer(.max), 2], forKeyPath: "tags", of: ann)
        }
        #expect(try store.json("tags.@sum.self", of: "Person/ann") == .real(18446744073709551616.0))
    }

    /// Reals are added with compensation: the order of the terms does not change a sum that small terms add to.
    @Test func realSumsDoNotDependOnTheOrder() throws {
        let store = try store()
        let ann = try #require(ObjectID(reference: "Person/ann"))
        for terms: [PropertyListValue] in [[1e16, 1.0, 1.0], [1.0, 1.0, 1e16], [1.0, 1e16, 1.0]] {
            try store.transaction { tx in try tx.setValue(.array(terms), forKeyPath: "tags", of: ann) }
            #expect(try store.json("tags.@sum.self", of: "Person/ann") == .real(10_000_000_000_000_002))
        }
    }

    /// NSDictionary's `valueForKey:` strips a leading `@` and calls `super`: `@count` of a dictionary is its count.
    @Test func countOfADictionaryIsItsEntries() throws {
        let store = try store()
        try store.transaction { tx in
            try tx.setValue(
                ["a": 1, "b": [1, 2, 3], "@count": 9], forKeyPath: "tags",
                of: try #require(ObjectID(reference: "Person/ann")))
        }
        #expect(try store.json("tags.@count", of: "Person/ann") == 3)
        #expect(try store.json("tags.b.@count", of: "Person/ann") == 3)
        #expect(throws: ObjectGraphError.self) { try store.json("tags.@sum.self", of: "Person/ann") }
    }

    @Test func unionsOfObjects() throws {
        let store = try store()
        #expect(try store.json("people.@unionOfObjects.age", of: "Group/g") == [27, 31, 47])
        #expect(try store.json("groups.people.age", of: "Company/c") == [[27, 31, 47], [], [27]])
        #expect(try store.json("groups.@unionOfArrays.people.age", of: "Company/c") == [27, 31, 47, 27])
        #expect(try store.json("groups.@distinctUnionOfArrays.people.age", of: "Company/c") == [27, 31, 47])
        #expect(try store.json("groups.@distinctUnionOfObjects.company", of: "Company/c") == [ref("Company/c")])
    }

    /// The KVC guide: every operator but @count needs a right key path; `self` names the values themselves.
    @Test(arguments: ["@sum", "@avg", "@min", "@max", "@unionOfObjects", "@distinctUnionOfObjects", "@unionOfArrays"])
    func operatorWithoutARightKeyPath_isABadKeyPath(op: String) throws {
        let store = try store()
        #expect {
            _ = try store.json("people.\(op)", of: "Group/g")
        } throws: { error in
            (error as? ObjectGraphError).map { $0.status == 400 && $0.code == "bad-key-path" } ?? false
        }
        #expect(try store.json("people.age.@count", of: "Group/g") == 3)
    }

    @Test func operatorOverSelf_collectsTheValuesThemselves() throws {
        let store = try store()
        #expect(try store.json("tags.@distinctUnionOfObjects.self", of: "Person/tom") == ["a", "b"])
    }

    /// Distinct as `isEqual:` sees it: é as one character and as e and an accent are two values (Swift's `==` takes
    /// them for one), while 1 and 1.0 are one.
    @Test func distinctUnion_textByCodePoints_numbersByValue() throws {
        let store = try store()
        try store.transaction { tx in
            try tx.setValue(["\u{e9}", "e\u{301}", "\u{e9}", 1, 1.0], forKeyPath: "tags", of: id("Person/tom"))
        }
        let distinct = try store.json("tags.@distinctUnionOfObjects.self", of: "Person/tom").arrayValue ?? []
        #expect(
            distinct.map { $0.stringValue.map { Array($0.unicodeScalars) } } == [["\u{e9}"], ["e", "\u{301}"], nil])
        #expect(distinct.last == 1)
    }

    @Test func unionOfArraysOfPlainArrays() throws {
        let store = try store()
        #expect(try store.json("people.@unionOfArrays.tags", of: "Group/g") == ["a", "b", "b"])
        #expect(try store.json("people.@distinctUnionOfArrays.tags", of: "Group/g") == ["a", "b"])
        // The arrays' elements count as a to-many's do: 3 people and 3 tags.
        let counted = try KeyPathAllowance.withLimit(perEvaluation: 6) {
            try store.json("people.@unionOfArrays.tags", of: "Group/g")
        }
        #expect(counted.used == 6)
        let error = expectError("bad-key-path", status: 400) {
            _ = try KeyPathAllowance.withLimit(perEvaluation: 5) {
                try store.json("people.@distinctUnionOfArrays.tags", of: "Group/g")
            }
        }
        #expect(error?.message.contains("counts the elements of the arrays it collects") == true)
    }

    /// Numbers are the same by value in the distinct unions, as `NSNumber`s are: `3` and `3.0`.
    @Test func distinctUnionsCompareNumbersByValue() throws {
        let store = try store()
        try store.transaction { tx in
            try tx.setValue([3, 1], forKeyPath: "tags", of: ObjectID(reference: "Person/tom")!)
            try tx.setValue([3.0, 1.5], forKeyPath: "tags", of: ObjectID(reference: "Person/dick")!)
        }
        #expect(try store.json("people.@distinctUnionOfArrays.tags", of: "Group/g") == [3, 1, 1.5])
        #expect(try store.json("people.@distinctUnionOfObjects.tags", of: "Group/g") == [[3, 1], [3.0, 1.5]])
        try store.transaction { tx in
            try tx.setValue([3.0, 1.0], forKeyPath: "tags", of: ObjectID(reference: "Person/dick")!)
        }
        #expect(try store.json("people.@distinctUnionOfObjects.tags", of: "Group/g") == [[3, 1]])
        // A boolean is the number 0 or 1, as NSNumber's @YES equals @1 (and as predicates compare them).
        try store.transaction { tx in
            try tx.setValue([1], forKeyPath: "tags", of: ObjectID(reference: "Person/tom")!)
            try tx.setValue([true], forKeyPath: "tags", of: ObjectID(reference: "Person/dick")!)
        }
        #expect(try store.json("people.@distinctUnionOfArrays.tags", of: "Group/g") == [1])
    }

    @Test func nestedOperators() throws {
        let store = try store()
        // Cocoa: the right-hand key path of @sum ("people.@count") is evaluated on each group.
        #expect(try store.json("groups.@sum.people.@count", of: "Company/c") == 4)
        #expect(try store.json("groups.@max.people.@sum.age", of: "Company/c") == 105)
        // Cocoa applies keys one at a time: groups.people is an array of arrays, and @count counts the groups.
        #expect(try store.json("groups.people.@count", of: "Company/c") == 3)
        #expect(try store.json("groups.@sum.totalAge", of: "Company/c") == 132)
    }

    @Test func countIgnoresTheRightKeyPath() throws {
        let store = try store()
        #expect(try store.json("people.@count.age", of: "Group/g") == 3)
    }

    @Test func operatorsOnPlainValues() throws {
        let store = try store()
        let result = try store.read { view in
            try view.value(forKeyPath: "@sum.self", of: .value([1, 2, 3.5])).json
        }
        #expect(result == 6.5)
        let maximum = try store.read { view in
            try view.value(forKeyPath: "@max.self", of: .value(["b", "c", "a"])).json
        }
        #expect(maximum == "c")
    }

    @Test func operatorErrors() throws {
        let store = try store()
        expectError("type-mismatch") { _ = try store.value("people.@sum.name", of: "Group/g") }
        // Refused by the model's types, also where the collection is empty (evaluation would find nothing to refuse).
        expectError("type-mismatch") { _ = try store.value("people.@avg.group", of: "Group/empty") }
        expectError("undefined-key", status: 404) { _ = try store.value("name.@count", of: "Group/g") }
        expectError("undefined-key", status: 404) { _ = try store.value("company.@count", of: "Group/g") }
        expectError("bad-key-path", status: 400) { _ = try store.value("people.@median.age", of: "Group/g") }
        expectError("undefined-key", status: 404) { _ = try store.value("people.@sum.agee", of: "Group/g") }
    }
}
