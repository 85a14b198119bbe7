import BinderyHTTP
import Foundation
import HTTPTestSupport
import ObjectGraph
import PropertyList
import Synchronization
import Testing

extension TestResponse {
    var errorCode: String? { json?["error"]?["code"]?.stringValue }
}

/// `/model` and `/objects` through a real server on the employees fixture (API.md §3–4, §6).
struct ObjectRoutesTests {
    @Test func modelAndEntity() throws {
        try withService { client in
            let model = try client.request("GET", "/model")
            #expect(model.json?["entities"]?["Employee"]?["relationships"]?["department"]?["inverse"] == "employees")
            let entity = try client.request("GET", "/model/Department")
            #expect(entity.json?["derived"]?["payroll"] == "employees.@sum.salary")
            #expect(try client.request("GET", "/model/Nope").errorCode == "no-such-entity")
        }
    }

    @Test func listingFiltersSortsPagesAndProjects() throws {
        try withService { client in
            let all = try client.request("GET", "/objects/Employee")
            #expect(all.json?["count"] == 32)
            #expect(all.json?["objects"]?.arrayValue?.count == 32)
            let page = try client.request(
                "GET",
                "/objects/Employee?filter=salary%20%3E%20150000%20AND%20active%20%3D%3D%20TRUE"
                    + "&sort=-salary&keys=lastName,department.name&offset=1&limit=2")
            #expect(page.json?["count"] == 6)
            #expect(
                page.json?["objects"]
                    == [
                        ["$id": "Employee/12", "lastName": "Jobs", "department.name": "Sales"],
                        ["$id": "Employee/2", "lastName": "Kay", "department.name": "Engineering"],
                    ])
            let byName = try client.request(
                "GET", "/objects/Employee?filter=lastName%20BEGINSWITH%5Bc%5D%20'h'&sort=lastName&keys=lastName")
            #expect(
                byName.json?["objects"]?.arrayValue?.compactMap { $0["lastName"]?.stringValue } == [
                    "Hamilton", "Hertzfeld", "Hoffman", "Hopper",
                ])
            #expect(try client.request("GET", "/objects/Employee?filter=salary%20%3E").errorCode == "bad-predicate")
            #expect(try client.request("GET", "/objects/Employee?filter=salary%20%3E").json?["error"]?["column"] == 9)
            #expect(try client.request("GET", "/objects/Employee?filter=&sort=").json?["count"] == 32)
            let notACollection = try client.request("GET", "/objects/Employee?filter=ANY%20salary%20%3E%205")
            #expect(notACollection.errorCode == "bad-predicate")
            #expect(notACollection.json?["error"]?["column"] == 5)
            #expect(try client.request("GET", "/objects/Employee?limit=-1").errorCode == "bad-query")
            #expect(try client.request("GET", "/objects/Employee?keys=nope").errorCode == "undefined-key")
            #expect(try client.request("GET", "/objects/Nope").status == 404)
        }
    }

    @Test func aFilterWhoseMatchesBacktracksWithoutBoundIsRefused() throws {
        try withService { client in
            let run = String(repeating: "a", count: 40)
            #expect(try client.request("PUT", "/objects/Employee/1/lastName", json: "\"\(run)\"").status == 200)
            // `lastName MATCHES '(a+)+b'`: 2^40 ways to fail on the run of a's.
            let filter = "lastName%20MATCHES%20'(a%2B)%2Bb'"
            let refused = try client.request("GET", "/objects/Employee?filter=" + filter)
            #expect(refused.status == 400)
            #expect(refused.errorCode == "bad-predicate")
            #expect(refused.json?["error"]?["column"] == 18)
            #expect(refused.json?["error"]?["pattern"] == "(a+)+b")
            let controller = try client.request(
                "PUT", "/controllers/employees/filterPredicate", json: #""lastName MATCHES '(a+)+b'""#)
            #expect(controller.errorCode == "bad-predicate")
            #expect(try client.request("GET", "/healthz").status == 200)
        }
    }

    /// A listing of few objects whose projected key paths reach many values (each employee's department's employees),
    /// and an object's or a controller's key path that does, are made off the request threads, as a large listing is: made on them,
    /// 30 such listings of 90 MB each held `/healthz` for up to 25 s. Shown by holding the service's queue for slow
    /// answers: such a read waits for it, one that reaches few values does not.
    @Test(arguments: [
        ("/objects/Employee?keys=department.employees.lastName&limit=999", "/objects/Employee?keys=department.name"),
        ("/controllers/all/arrangedObjects/department.employees.lastName", "/controllers/all/arrangedObjects/lastName"),
        ("/objects/Department/1/employees.department.employees.lastName", "/objects/Department/1/employees.lastName"),
    ])
    func keyPathsThatReachManyValuesAreReadOffTheRequestThreads(many: String, few: String) throws {
        try withServiceParts { client, _, service in
            try Self.addEmployeesAndAController(400, client: client)
            try Self.expectMadeOffTheRequestThreads(many, notFew: few, client: client, service: service)
        }
    }

    /// A controller's large page of arranged objects, a key path read on each of them, and a large selection's
    /// objects and keys, are made off the request threads, as a large listing is: made on them, readers of two
    /// 300,000-object controllers held `/healthz` on a new connection for 12–13 s (a selection of 250,000, 15.8 s).
    /// Shown as above by holding the queue for slow answers.
    @Test(arguments: [
        ("/controllers/all/arrangedObjects", "/controllers/all/arrangedObjects?limit=1000"),
        ("/controllers/all/arrangedObjects/lastName", "/controllers/all/arrangedObjects/@count"),
        ("/controllers/tree/arrangedObjects", "/controllers/tree/arrangedObjects?limit=0"),
        ("/controllers/all/selectedObjects", "/controllers/tree/selectedObjects"),
        ("/controllers/all/selection", "/controllers/tree/selection"),
    ])
    func largePagesOfArrangedObjectsAreReadOffTheRequestThreads(many: String, few: String) throws {
        try withServiceParts { client, _, service in
            try Self.addEmployeesAndAController(1_000, client: client)
            let tree = #"{"name": "tree", "kind": "tree", "content": "Employee", "childrenKeyPath": "directReports"}"#
            #expect(try client.request("POST", "/controllers", json: tree).status == 201)
            // Every employee selected: the selected objects and the selection's keys are read from each of them.
            let everyone = "[" + (0..<1_032).map(String.init).joined(separator: ",") + "]"
            #expect(try client.request("PUT", "/controllers/all/selectionIndexes", json: everyone).status == 200)
            try Self.expectMadeOffTheRequestThreads(many, notFew: few, client: client, service: service)
        }
    }

    /// `count` employees in Department/1, and an array controller `all` over every employee.
    static func addEmployeesAndAController(_ count: Int, client: TestHTTPClient) throws {
        for index in 0..<count {
            let body = #"{"firstName": "F", "lastName": "L\#(index)", "department": {"$ref": "Department/1"}}"#
            #expect(try client.request("POST", "/objects/Employee", json: body).status == 201)
        }
        let all = #"{"name": "all", "kind": "array", "content": "Employee"}"#
        #expect(try client.request("POST", "/controllers", json: all).status == 201)
    }

    /// Holds the service's queue for slow answers while `many` is asked on another thread: it waits for the queue
    /// (made off the request threads), while `few`, asked meanwhile, is answered on a request thread.
    static func expectMadeOffTheRequestThreads(
        _ many: String, notFew few: String, client: TestHTTPClient, service: BinderyService
    ) throws {
        let held = DispatchSemaphore(value: 0)
        service.slowAnswers.async { held.wait() }
        let answers = asking([("GET", many, nil)], client: client)
        // (A `try` outside `#expect`: the closure is inferred as throwing only from one.)
        let small = try client.request("GET", few)
        #expect(small.status == 200)
        #expect(answers(0.5) == nil, "made on a request thread")
        held.signal()
        #expect(answers(30) == [200])
    }

    @Test func manyMatchesEachUnderTheirLimitAreRefusedTogether() throws {
        // The longest run of a's that `(a+)+b` decides within one match's limit: each match is slow but allowed.
        let expression = try RegularExpression("(a+)+b")
        var run = "aaaaaaaa"
        while run.count < 40, (try? expression.matchesWhole(run + "a")) != nil { run += "a" }
        try withService { client in
            for index in 0..<400 {
                let body =
                    #"{"$id": "R\#(index)", "firstName": "R", "lastName": "\#(run)", "#
                    + #""department": {"$ref": "Department/1"}}"#
                #expect(try client.request("POST", "/objects/Employee", json: body).status == 201)
            }
            let filter = "lastName%20MATCHES%20'(a%2B)%2Bb'"
            let listing = try client.request("GET", "/objects/Employee?filter=" + filter)
            #expect(listing.errorCode == "bad-predicate")
            #expect(listing.json?["error"]?["message"]?.stringValue?.contains("all its matches") == true)
            let created = try client.request(
                "POST", "/controllers", json: #"{"name": "all", "kind": "array", "content": "Employee"}"#)
            #expect(created.status == 201)
            let controller = try client.request(
                "PUT", "/controllers/all/filterPredicate", json: #""lastName MATCHES '(a+)+b'""#)
            #expect(controller.errorCode == "bad-predicate")
            // A pattern that does not backtrack is not limited, however many objects it is matched against.
            let plain = try client.request("GET", "/objects/Employee?filter=lastName%20MATCHES%20'a%2B'&limit=1")
            #expect(plain.json?["count"] == 400)
        }
    }

    @Test func aControllerFilterThatBacktracksPastItsFirstThousandObjectsIsRefused() throws {
        try withService { client in
            // Content whose first thousand objects match at once, and whose later ones each reach the match limit:
            // checked on the first thousand only, the filter was taken and paid every later one's limit at each
            // arrangement (42 s over 20,000), and was arranged before it was checked. Each string differs (a
            // string that reached the limit once is remembered, and throws at once after).
            let backtracking = String(repeating: "a", count: 40)
            for index in 0..<1_400 {
                let lastName = index < 1_000 ? "L" : backtracking + "\(index)"
                let body = #"{"firstName": "F", "lastName": "\#(lastName)", "department": {"$ref": "Department/1"}}"#
                #expect(try client.request("POST", "/objects/Employee", json: body).status == 201)
            }
            let created = try client.request(
                "POST", "/controllers",
                json:
                    #"{"name": "m", "kind": "array", "content": "Employee", "filterPredicate": "lastName MATCHES '(a+)+b'"}"#
            )
            #expect(created.status == 400)
            #expect(created.errorCode == "bad-predicate")
            #expect(created.json?["error"]?["pattern"] == "(a+)+b")
            #expect(try client.request("GET", "/controllers/m").status == 404)
            // So is the filter set on a controller that exists, which then keeps its own.
            let plain = try client.request(
                "POST", "/controllers",
                json:
                    #"{"name": "n", "kind": "array", "content": "Employee", "filterPredicate": "lastName MATCHES 'L'"}"#
            )
            #expect(plain.status == 201)
            let changed = try client.request(
                "PUT", "/controllers/n/filterPredicate", json: #""lastName MATCHES '(a+)+b'""#)
            #expect(changed.errorCode == "bad-predicate")
            #expect(try client.request("GET", "/controllers/n/arrangedObjects/@count").json == 1_000)
            // One object past the first thousand whose match reaches its own limit refuses the filter as one among
            // them does (it was left out), and as a listing does.
            let stuck =
                #"{"firstName": "F", "lastName": "\#(String(repeating: "x", count: 40))", "#
                + #""department": {"$ref": "Department/1"}}"#
            #expect(try client.request("POST", "/objects/Employee", json: stuck).status == 201)
            let oneStuck = try client.request(
                "POST", "/controllers",
                json:
                    #"{"name": "x", "kind": "array", "content": "Employee", "filterPredicate": "lastName MATCHES '(x+)+y|L|a.*'"}"#
            )
            #expect(oneStuck.status == 400)
            #expect(oneStuck.json?["error"]?["message"]?.stringValue?.contains("the matching limit") == true)
        }
    }

    /// A filter whose matches each backtrack within their own limit, on a few hundred objects, is taken when a
    /// controller is created with it as when it is set or listed: created, it was arranged and checked under one
    /// shared limit, which two passes over the content used up.
    @Test func aControllerIsCreatedWithAFilterThatItWouldTakeWhenSet() throws {
        try withService { client in
            for index in 0..<200 {
                let lastName = String(repeating: "a", count: 15) + "c\(index)"
                let body = #"{"firstName": "F", "lastName": "\#(lastName)", "department": {"$ref": "Department/1"}}"#
                #expect(try client.request("POST", "/objects/Employee", json: body).status == 201)
            }
            let filter = "lastName MATCHES '(a|a)*b'"
            let listing = try client.request(
                "GET",
                "/objects/Employee?limit=1&filter=" + filter.addingPercentEncoding(
                    withAllowedCharacters: .alphanumerics)!)
            #expect(listing.status == 200)
            for (name, kind, extra) in [("a", "array", ""), ("t", "tree", #", "childrenKeyPath": "directReports""#)] {
                let created = try client.request(
                    "POST", "/controllers",
                    json:
                        #"{"name": "\#(name)", "kind": "\#(kind)", "content": "Employee", "filterPredicate": "\#(filter)"\#(extra)}"#
                )
                #expect(created.status == 201, "\(kind): \(created.json ?? .null)")
            }
        }
    }

    /// Unknown keys in `filter` and `sort` are errors whatever the data: not only when an object reaches them.
    @Test func unknownKeysInFilterAndSortAreRefusedWhateverTheData() throws {
        try withService { client in
            for query in [
                "filter=salary%20%3D%3D%20999%20AND%20nosuch%20%3D%3D%201", "filter=department.nosuch%20%3D%3D%201",
                "filter=lastName.foo%20%3D%3D%201", "filter=lastName%20%3D%3D%20'Kay'&sort=nosuch",
            ] {
                let answer = try client.request("GET", "/objects/Employee?" + query)
                #expect(answer.status == 404, "\(query)")
                #expect(answer.errorCode == "undefined-key", "\(query)")
            }
            // So are the keys projected, also when no object is listed.
            for query in [
                "keys=bogus&limit=0", "keys=lastName,bogus&offset=1000",
                "keys=department.bogus&filter=salary%20%3C%200", "keys=lastName.@sum&limit=0",
            ] {
                #expect(
                    try client.request("GET", "/objects/Employee?" + query).errorCode == "undefined-key", "\(query)")
            }
            for query in ["keys=a..b&limit=0", "keys=@sum&limit=0"] {
                #expect(try client.request("GET", "/objects/Employee?" + query).errorCode == "bad-key-path", "\(query)")
            }
            // Keys the model does not describe the insides of are left to evaluation.
            for query in [
                "filter=%23lastName%20%3D%3D%20'Kay'", "filter=directReports.@count%20%3E%202",
                "filter=SELF%20%3D%3D%20nil", "sort=department.name",
            ] {
                #expect(try client.request("GET", "/objects/Employee?" + query).status == 200, "\(query)")
            }
        }
    }

    @Test func keyPathsThatFanOutAreRefusedAtTheFirstObject() throws {
        try withService { client in
            // Six to-many steps: about 1.8 million values from one Engineering employee, in a store of 37 objects: far
            // beyond what one evaluation of a client's key path may reach in it (100,000), refused at the first object.
            let path = "department" + String(repeating: ".employees.department", count: 5) + ".employees.salary"
            let query = "filter=ANY \(path) > 0".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let started = Date()
            let answer = try client.request("GET", "/objects/Employee?keys=lastName&filter=" + query.dropFirst(9))
            #expect(answer.errorCode == "bad-key-path", "\(answer.status) \(answer.text.prefix(200))")
            #expect(Date().timeIntervalSince(started) < 5)
            // A path that stays small is answered as before.
            let small = "department.employees.department.employees.salary"
            let fine = "filter=ANY \(small) > 0".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            #expect(
                try client.request("GET", "/objects/Employee?keys=lastName&filter=" + fine.dropFirst(9)).status == 200)
        }
    }

    /// Reading a large relationship from every object (each employee's department's headcount) is linear in the
    /// data, not a fan-out: it is answered, however many objects read it.
    @Test func aLargeRelationshipReadFromEveryObjectIsAnswered() throws {
        try withService { client in
            var objects = [#"{"$id": "Department/a", "name": "A"}"#, #"{"$id": "Department/b", "name": "B"}"#]
            for index in 0..<4_000 {
                let department = index.isMultiple(of: 2) ? "a" : "b"
                objects.append(
                    #"{"$id": "Employee/\#(index)", "firstName": "F", "lastName": "L\#(index)", "#
                        + #""department": {"$ref": "Department/\#(department)"}}"#)
            }
            let put = try client.request("PUT", "/store", json: #"{"objects": [\#(objects.joined(separator: ","))]}"#)
            #expect(put.status == 200, "\(put.text.prefix(200))")
            for query in ["filter=department.headcount%20%3E%205", "sort=-department.payroll,lastName"] {
                let answer = try client.request("GET", "/objects/Employee?keys=lastName&limit=1&" + query)
                #expect(answer.status == 200, "\(query): \(answer.text.prefix(200))")
                #expect(answer.json?["count"] == 4_000, "\(query)")
            }
            // A derived key of a related object is evaluated once per listing for each object it is read on: each
            // department's payroll is its own.
            #expect(try client.request("PUT", "/objects/Employee/1/salary", json: "100").status == 200)
            let richest = try client.request(
                "GET", "/objects/Employee?keys=department&limit=1&sort=-department.payroll")
            #expect(richest.json?["objects"]?.arrayValue?.first?["department"] == ["$ref": "Department/b"])
            let paid = try client.request("GET", "/objects/Employee?limit=0&filter=department.payroll%20%3E%200")
            #expect(paid.json?["count"] == 2_000)
            // Listings this long are made off the request threads: the same answers, errors included.
            let all = try client.request("GET", "/objects/Employee")
            #expect(all.json?["objects"]?.arrayValue?.count == 4_000 && all.header("X-Store-Seq") != nil)
            #expect(try client.request("GET", "/objects/Employee?sort=nosuch").errorCode == "undefined-key")
        }
    }

    @Test func aggregatesOverOneValueAndSortsByAToManyAreRefused() throws {
        try withService { client in
            func get(_ query: String) throws -> TestResponse {
                let encoded = query.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed.subtracting(["+"]))!
                return try client.request("GET", "/objects/Employee?keys=lastName&" + encoded)
            }
            for filter in ["ALL salary > 1", "ANY department.name == 'x'", "NONE lastName == 'x'"] {
                let answer = try get("filter=" + filter)
                #expect(answer.errorCode == "bad-predicate", "\(filter)")
            }
            #expect(try get("filter=salary IN 5").errorCode == "bad-predicate")
            #expect(try get("filter=ANY directReports.salary > 100000").status == 200)
            #expect(try get("filter=ALL directReports.active == true").status == 200)
            #expect(try get("filter=ANY department.employees.lastName == 'Hopper'").status == 200)
            #expect(try get("sort=directReports").errorCode == "bad-query")
            #expect(try get("sort=-department.employees.salary").errorCode == "bad-query")
            #expect(try get("sort=directReports.@count,lastName").status == 200)
            // By static type: a derived key and a collection operator are one value or a collection.
            #expect(try get("filter=ANY departmentName == 'Sales'").errorCode == "bad-predicate")
            #expect(try get("filter=SOME directReports.@count > 1").errorCode == "bad-predicate")
            #expect(try get("filter=ANY directReports.@distinctUnionOfObjects.salary > 1").status == 200)
            let departments = try client.request(
                "GET", "/objects/Department?sort=employees.@distinctUnionOfObjects.salary")
            #expect(departments.errorCode == "bad-query")
            #expect(try client.request("GET", "/objects/Department?sort=-headcount,payroll").status == 200)
            #expect(try get("sort=department.name").status == 200)
            #expect(try get("sort=manager").errorCode == "bad-query")
            #expect(try get("sort=self").errorCode == "bad-query")
            // The same through a controller: a well-formed body of the wrong type there (API.md §2's 422).
            let sorted = try client.request(
                "PUT", "/controllers/departments/sortDescriptors", json: #"[{"key": "employees", "ascending": true}]"#)
            #expect(sorted.status == 422)
            #expect(sorted.errorCode == "type-mismatch")
            #expect(sorted.json?["error"]?["keyPath"] == "employees")
            let filtered = try client.request(
                "PUT", "/controllers/departments/filterPredicate", json: #""ALL name == 'x'""#)
            #expect(filtered.errorCode == "bad-predicate")
            // And when a controller is created, a tree as an array.
            for (kind, extra) in [("array", ""), ("tree", #", "childrenKeyPath": "directReports""#)] {
                let sortsByToMany = try client.request(
                    "POST", "/controllers",
                    json: #"{"name": "s\#(kind)", "kind": "\#(kind)", "content": "Employee", "#
                        + #""sortDescriptors": [{"key": "directReports"}]\#(extra)}"#)
                #expect(sortsByToMany.errorCode == "bad-query", "\(kind)")
                let allOverOne = try client.request(
                    "POST", "/controllers",
                    json: #"{"name": "f\#(kind)", "kind": "\#(kind)", "content": "Employee", "#
                        + #""filterPredicate": "ALL salary > 1"\#(extra)}"#)
                #expect(allOverOne.errorCode == "bad-predicate", "\(kind)")
            }
        }
    }

    /// A literal a typed key path cannot be compared with is refused as Foundation raises, with its column; a date
    /// compared with a string that is not ISO 8601 too (it would match nothing, where writing it is refused).
    @Test func quantifiersLookThroughNestedToManys() throws {
        try withService { client in
            func ids(_ filter: String) throws -> [String] {
                let encoded = filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let answer = try client.request("GET", "/objects/Employee?keys=lastName&filter=" + encoded)
                #expect(answer.status == 200, "\(filter): \(answer.text)")
                return (answer.json?["objects"]?.arrayValue ?? []).compactMap { $0["$id"]?.stringValue }.sorted()
            }
            // Employee/1's reports' reports earn 154000, 158500 and 149000 (one collection per report).
            #expect(try ids("ANY directReports.directReports.salary > 150000") == ["Employee/1"])
            let none = try ids("NONE directReports.directReports.salary > 150000")
            #expect(none.count == 31 && !none.contains("Employee/1"))
            let all = try ids("ALL directReports.directReports.salary > 120000")
            #expect(all.count == 25 && all.contains("Employee/1"))  // 24 have no reports' reports at all
            #expect(try ids("ALL directReports.directReports.salary > 150000").count == 24)
            #expect(
                try ids("ANY directReports.directReports.lastName BEGINSWITH 'T'")
                    == ["Employee/1", "Employee/12", "Employee/2", "Employee/27"])
            #expect(try ids("ANY directReports.directReports.directReports.salary == 116000") == ["Employee/1"])
        }
    }

    @Test func literalsOfTheWrongTypeAreRefused() throws {
        try withService { client in
            func get(_ filter: String) throws -> TestResponse {
                let query = "filter=" + filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                return try client.request("GET", "/objects/Employee?keys=&" + query)
            }
            let refused: [(filter: String, column: Int64)] = [
                ("hireDate > '2015-1-1'", 12), ("hireDate == '2015'", 13), ("'2015' < hireDate", 1),
                ("hireDate IN {'2015-01-01', 'bad'}", 13), ("salary < 'abc'", 10), ("lastName >= 5", 13),
                ("salary BETWEEN {1, 'x'}", 16), ("salary BEGINSWITH '1'", 19), ("lastName CONTAINS 5", 19),
                ("salary IN 'abc'", 11), ("ANY directReports.salary > 'x'", 28), ("directReports.@count < 'x'", 24),
                ("department.headcount LIKE '1*'", 27),
                // Mirrored, and on objects.
                ("'garbage' == hireDate", 1), ("{'garbage'} CONTAINS hireDate", 1), ("'1' BEGINSWITH salary", 1),
                ("5 BEGINSWITH lastName", 1), ("manager BEGINSWITH 'x'", 20), ("ANY directReports > 5", 21),
            ]
            for (filter, column) in refused {
                let answer = try get(filter)
                #expect(answer.errorCode == "bad-predicate", "\(filter)")
                #expect(answer.json?["error"]?["column"] == .integer(column), "\(filter)")
            }
            let taken = [
                "hireDate > '2015-01-01'", "hireDate BETWEEN {'2010-01-01', '2020-01-01T00:00:00Z'}",
                "salary < 5.5", "5 < salary", "salary == 'abc'", "salary IN {1, 'x'}", "lastName IN 'Hopper'",
                "salary < nil", "lastName CONTAINS nil", "departmentName BEGINSWITH 'S'", "active == 1",
                "'2015-01-01' < hireDate", "{1, 'x'} CONTAINS salary", "'Hopperx' CONTAINS lastName",
                "'Hop' IN lastName", "manager == nil", "manager != nil",
            ]
            for filter in taken { #expect(try get(filter).status == 200, "\(filter)") }
            // The same through a controller.
            let filtered = try client.request(
                "PUT", "/controllers/employees/filterPredicate", json: #""hireDate < '31/12/2015'""#)
            #expect(filtered.errorCode == "bad-predicate")
        }
    }

    /// A request head that would leave too little of the connection's 16 KiB pool for the answer's header fields is
    /// refused (431) before anything is done: libmicrohttpd would have let it be handled and then sent nothing, so a
    /// client retrying a POST would have created the object twice. Many small fields fill the pool as surely as a
    /// long head: each takes a record of its own.
    @Test func aRequestHeadNearThePoolSizeIsRefusedBeforeItIsHandled() throws {
        try withService { client in
            let body = #"{"firstName": "Big", "lastName": "Head", "department": {"$ref": "Department/2"}}"#
            func fields(_ count: Int) -> String { (0..<count).map { "X-\($0): v\r\n" }.joined() }
            // (what pads the head, whether the object is created, whether the answer must be 431: beyond, even the
            // 431 may not fit, and the connection is closed without an answer, but nothing is done)
            let cases: [(name: String, padding: String, fields: String, created: Bool, refused: Bool)] = [
                ("5,000 bytes", String(repeating: "A", count: 5_000), "", true, false),
                ("12,500 bytes", String(repeating: "A", count: 12_500), "", false, true),
                ("15,990 bytes", String(repeating: "A", count: 15_990), "", false, false),
                ("100 fields", "", fields(100), true, false),
                ("190 fields", "", fields(190), false, true),
                ("217 fields", "", fields(217), false, false),
            ]
            for (name, padding, fields, created, refused) in cases {
                let request =
                    "POST /objects/Employee?pad=\(padding) HTTP/1.1\r\nHost: x\r\n\(fields)"
                    + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
                let before = try client.request("GET", "/objects/Employee?limit=0").json?["count"]?.integerValue ?? 0
                let answer = String(decoding: try client.exchange(Array(request.utf8)), as: UTF8.self)
                let after = try client.request("GET", "/objects/Employee?limit=0").json?["count"]?.integerValue ?? 0
                #expect(after == before + (created ? 1 : 0), "\(name)")
                if created {
                    #expect(answer.hasPrefix("HTTP/1.1 201"), "\(name)")
                } else if refused {
                    #expect(answer.hasPrefix("HTTP/1.1 431"), "\(name): \(answer.prefix(200))")
                    #expect(answer.contains("header-too-large"), "\(name)")
                }
            }
        }
    }

    @Test func theLargestLimitPagesWithoutOverflowing() throws {
        try withService { client in
            let listing = try client.request("GET", "/objects/Employee?offset=1&limit=9223372036854775807")
            #expect(listing.status == 200)
            #expect(listing.json?["objects"]?.arrayValue?.count == 31)
            let arranged = try client.request(
                "GET", "/controllers/departments/arrangedObjects?offset=2&limit=9223372036854775807")
            #expect(arranged.status == 200)
            #expect(arranged.json?.arrayValue?.count == 3)
            #expect(try client.request("GET", "/objects/Employee?limit=9223372036854775808").status == 400)
            #expect(try client.request("GET", "/healthz").status == 200)
        }
    }

    @Test func objectWithETagAndNotModified() throws {
        try withService { client in
            let department = try client.request("GET", "/objects/Department/1")
            #expect(department.status == 200)
            #expect(department.json?["$id"] == "Department/1")
            #expect(department.json?["headcount"] == 11)
            #expect(department.json?["employees"]?.arrayValue?.first == ["$ref": "Employee/1"])
            let etag = try #require(department.header("ETag"))
            #expect(etag == "\"1\"")
            let again = try client.request("GET", "/objects/Department/1", headers: ["If-None-Match": etag])
            #expect(again.status == 304)
            #expect(try client.request("GET", "/objects/Department/99").errorCode == "no-such-object")
            // A change read by a derived key (departmentName, payroll) is a change of the object's representation.
            let employee = try client.request("GET", "/objects/Employee/4")
            let employeeTag = try #require(employee.header("ETag"))
            #expect(try client.request("PUT", "/objects/Department/1/name", json: #""Eng""#).status == 200)
            let renamed = try client.request("GET", "/objects/Employee/4", headers: ["If-None-Match": employeeTag])
            #expect(renamed.status == 200)
            #expect(renamed.json?["departmentName"] == "Eng")
            #expect(renamed.header("ETag") != employeeTag)
            let stale = try client.request(
                "PUT", "/objects/Employee/4/salary", headers: ["If-Match": employeeTag], json: "1")
            #expect(stale.status == 412)
            _ = try client.request("PUT", "/objects/Employee/1/salary", json: "1")
            let payroll = try client.request("GET", "/objects/Department/1", headers: ["If-None-Match": etag])
            #expect(payroll.status == 200)
        }
    }

    @Test func aChangeThroughAKeyPathAnswersTheObjectsCurrentETag() throws {
        try withService { client in
            // department.name is read by Employee/6's derived departmentName: its ETag moves; manager.lastName and
            // department.budget are not read by any of its derived keys, nor are the department's employees: it
            // stays. DELETE through a to-one removes Employee/6 from its manager's reports: its own change.
            let writes: [(String, String, String?, moves: Bool)] = [
                ("PUT", "/objects/Employee/6/department/name", #""EngX""#, true),
                ("PUT", "/objects/Employee/6/manager/lastName", #""Hopper-Smith""#, false),
                ("PUT", "/objects/Employee/6/department/budget", "5", false),
                ("PUT", "/objects/Employee/6/salary", "123", true),
                ("POST", "/objects/Employee/6/department/employees", #"{"$ref": "Employee/12"}"#, false),
                ("DELETE", "/objects/Employee/6/manager/directReports/0", nil, true),
            ]
            for (method, path, body, moves) in writes {
                let before = try #require(try client.request("GET", "/objects/Employee/6").header("ETag"))
                let answer = try client.request(method, path, body: body.map { Array($0.utf8) })
                #expect(answer.status == 200, "\(method) \(path): \(answer.text)")
                let current = try client.request("GET", "/objects/Employee/6").header("ETag")
                #expect(answer.header("ETag") == current, "\(method) \(path)")
                #expect((current != before) == moves, "\(method) \(path)")
                let next = try client.request(
                    "PUT", "/objects/Employee/6/firstName", headers: ["If-Match": answer.header("ETag") ?? ""],
                    json: #""Ann""#)
                #expect(next.status == 200, "If-Match after \(method) \(path)")
            }
        }
    }

    @Test func keyPathsInBothSpellingsWithOperators() throws {
        try withService { client in
            #expect(try client.request("GET", "/objects/Employee/4/department/name").json == "Engineering")
            #expect(try client.request("GET", "/objects/Employee/4/department.name").json == "Engineering")
            #expect(try client.request("GET", "/objects/Department/1/employees.@count").json == 11)
            #expect(
                try client.request("GET", "/objects/Department/5/employees/@avg/salary").json == PropertyListValue.null)
            #expect(try client.request("GET", "/objects/Department/5/employees/@sum/salary").json == 0)
            #expect(try client.request("GET", "/objects/Employee/1/manager/lastName").json == PropertyListValue.null)
            let names = try client.request("GET", "/objects/Department/3/employees/lastName")
            #expect(names.json == ["Kenneth Keller", "Sutherland", "Easley", "Engelbart", "Sammet", "Borg"])
            let missing = try client.request("GET", "/objects/Employee/4/department/nope")
            #expect(missing.status == 404)
            #expect(missing.errorCode == "undefined-key")
            #expect(missing.json?["error"]?["keyPath"] == "nope")
        }
    }

    /// Each to-many after another multiplies the values (11 employees of a department: 11^n); the evaluation stops
    /// at a budget instead of exhausting memory, and key paths are at most 100 keys long (compiling recursed per key).
    @Test func keyPathsThatFanOutOrRunLong_areRefused() throws {
        try withService { client in
            let twice = try client.request("GET", "/objects/Employee/4/department/employees/department/employees")
            #expect(twice.json?.arrayValue?.count == 11)
            let path = Array(repeating: "department/employees", count: 7).joined(separator: "/")
            let fanOut = try client.request("GET", "/objects/Employee/4/\(path)/lastName")
            #expect(fanOut.status == 400)
            #expect(fanOut.errorCode == "bad-key-path")
            let long = Array(repeating: "directReports", count: 101).joined(separator: ".")
            let observer = try client.request(
                "POST", "/observers", json: #"{"target": "Employee/1", "keyPath": "\#(long)"}"#)
            #expect(observer.status == 400)
            #expect(observer.errorCode == "bad-key-path")
            let filter = try client.request("PUT", "/controllers/employees/filterPredicate", json: "\"\(long) == nil\"")
            #expect(filter.status == 400)
            #expect(try client.request("GET", "/healthz").status == 200)
        }
    }

    @Test func putValueHonoursIfMatchAndValidates() throws {
        try withService { client in
            let put = try client.request("PUT", "/objects/Employee/4/salary", json: "160000")
            #expect(put.status == 200)
            #expect(put.json == 160000)
            #expect(put.header("ETag") == "\"2\"")
            #expect(put.header("X-Store-Seq") == "2")
            let stale = try client.request(
                "PUT", "/objects/Employee/4/salary", headers: ["If-Match": "\"1\""], json: "1")
            #expect(stale.status == 412)
            #expect(stale.errorCode == "precondition-failed")
            #expect(stale.json?["error"]?["current"] == 160000)
            #expect(stale.header("ETag") == "\"2\"")
            // If-Match compares strongly: a weak tag never matches, and an empty list names nothing.
            for condition in ["W/\"2\"", ""] {
                let weak = try client.request(
                    "PUT", "/objects/Employee/4/salary", headers: ["If-Match": condition], json: "1")
                #expect(weak.status == 412, "If-Match: \(condition)")
            }
            // If-None-Match compares weakly; on a change, a match fails the precondition (RFC 9110 §13.1.2).
            #expect(
                try client.request("GET", "/objects/Employee/4", headers: ["If-None-Match": "W/\"2\""]).status == 304)
            for condition in ["*", "\"2\"", "W/\"2\""] {
                let matched = try client.request(
                    "PATCH", "/objects/Employee/4", headers: ["If-None-Match": condition], json: #"{"salary": 1}"#)
                #expect(matched.status == 412, "If-None-Match: \(condition)")
                #expect(matched.json?["error"]?["current"]?["salary"] == 160000)
            }
            // If-Match holds on a GET too (RFC 9110 §13.1.1).
            let readStale = try client.request("GET", "/objects/Employee/4", headers: ["If-Match": "\"1\""])
            #expect(readStale.status == 412)
            #expect(readStale.header("ETag") == "\"2\"")
            #expect(try client.request("GET", "/objects/Employee/4", headers: ["If-Match": "\"2\""]).status == 200)
            let fresh = try client.request(
                "PUT", "/objects/Employee/4/salary", headers: ["If-Match": "\"2\""], json: "1")
            #expect(fresh.status == 200)
            let negative = try client.request("PUT", "/objects/Employee/4/salary", json: "-1")
            #expect(negative.status == 422)
            #expect(negative.errorCode == "validation-failed")
            #expect(
                try client.request("PUT", "/objects/Employee/4/salary", json: "\"lots\"").errorCode == "type-mismatch")
            #expect(try client.request("PUT", "/objects/Employee/4/salary", json: "12.0").json == 12)
            #expect(
                try client.request("PUT", "/objects/Employee/4/hireDate", json: "\"2020-01-02\"").json
                    == .date(try #require(ISO8601.date(from: "2020-01-02T00:00:00.000Z"))))
            #expect(try client.request("PUT", "/objects/Employee/4/headcount", json: "1").status == 404)
            #expect(try client.request("PUT", "/objects/Employee/4/department/name", json: "\"R&D\"").json == "R&D")
            #expect(try client.request("GET", "/objects/Employee/5/departmentName").json == "R&D")
        }
    }

    @Test func patchIsAtomic() throws {
        try withService { client in
            let bad = try client.request(
                "PATCH", "/objects/Employee/4", json: #"{"firstName": "Kenneth", "salary": -5}"#)
            #expect(bad.status == 422)
            #expect(try client.request("GET", "/objects/Employee/4/firstName").json == "Ken")
            let unknown = try client.request(
                "PATCH", "/objects/Employee/4", json: #"{"firstName": "Kenneth", "nope": 1}"#)
            #expect(unknown.status == 404)
            #expect(try client.request("GET", "/objects/Employee/4/firstName").json == "Ken")
            let good = try client.request(
                "PATCH", "/objects/Employee/4",
                json: #"{"firstName": "Kenneth", "department": {"$ref": "Department/5"}}"#)
            #expect(good.status == 200)
            #expect(good.json?["firstName"] == "Kenneth")
            #expect(good.json?["departmentName"] == "Research")
            #expect(try client.request("GET", "/objects/Department/5/employees").json == [["$ref": "Employee/4"]])
            #expect(try client.request("GET", "/objects/Department/1/headcount").json == 10)
            #expect(try client.request("PATCH", "/objects/Employee/4", json: "[1]").status == 422)
        }
    }

    @Test func everyInvalidValueIsReportedAtOnce() throws {
        try withService { client in
            func reported(_ response: TestResponse) -> [String] {
                (response.json?["error"]?["errors"]?.arrayValue ?? []).compactMap {
                    guard let code = $0["code"]?.stringValue, let keyPath = $0["keyPath"]?.stringValue else {
                        return nil
                    }
                    return "\(code) \(keyPath)"
                }.sorted()
            }
            let types = try client.request(
                "PATCH", "/objects/Employee/4", json: #"{"salary": "x", "hireDate": "y", "lastName": "Changed"}"#)
            #expect(types.status == 422)
            #expect(types.errorCode == "validation-failed")
            #expect(reported(types) == ["type-mismatch hireDate", "type-mismatch salary"])
            // Each entry has the shape of commitEditing's: code, message, status and keyPath.
            #expect(types.json?["error"]?["errors"]?.arrayValue?.allSatisfy { $0["status"] == 422 } == true)
            let mixed = try client.request("PATCH", "/objects/Employee/4", json: #"{"salary": "x", "firstName": null}"#)
            #expect(reported(mixed) == ["type-mismatch salary", "validation-failed firstName"])
            #expect(try client.request("GET", "/objects/Employee/4/lastName").json != "Changed")
            let insert = try client.request(
                "POST", "/objects/Employee",
                json: #"{"$id": "bad", "salary": true, "active": 3, "department": {"$ref": "Department/1"}}"#)
            #expect(insert.status == 422)
            #expect(
                reported(insert) == [
                    "type-mismatch active", "type-mismatch salary", "validation-failed firstName",
                    "validation-failed lastName",
                ])
            #expect(try client.request("GET", "/objects/Employee/bad").status == 404)
            // A key starting with $ other than $id is reserved (API.md §1), not an undefined key.
            let reserved = try client.request("PATCH", "/objects/Employee/4", json: #"{"$foo": 1}"#)
            #expect(reserved.status == 422)
            #expect(reserved.json?["error"]?["keyPath"] == "$foo")
            let reservedInsert = try client.request(
                "POST", "/objects/Department", json: #"{"name": "Ops", "$bar": {"x": 1}}"#)
            #expect(reservedInsert.status == 422)
            // One bad value is reported as itself.
            let one = try client.request("PATCH", "/objects/Employee/4", json: #"{"salary": "x"}"#)
            #expect(one.errorCode == "type-mismatch")
            #expect(one.json?["error"]?["keyPath"] == "salary")
        }
    }

    /// The target of a create is the entity's collection, which has no entity tag: `If-Match` with a tag can never
    /// match it and is 412, changing nothing (RFC 9110 §13.1.1), rather than ignored; `*` matches the collection.
    @Test func insertWithIfMatchTagFailsTheCondition() throws {
        try withService { client in
            let body = #"{"firstName": "New", "lastName": "Hire", "department": {"$ref": "Department/5"}}"#
            let before = try client.request("GET", "/objects/Employee?limit=0").json?["count"]
            for condition in [#""1""#, #"W/"1""#, #""1", "2""#] {
                let refused = try client.request(
                    "POST", "/objects/Employee", headers: ["If-Match": condition], json: body)
                #expect(refused.status == 412, "\(condition)")
                #expect(refused.errorCode == "precondition-failed", "\(condition)")
            }
            #expect(try client.request("GET", "/objects/Employee?limit=0").json?["count"] == before)
            let any = try client.request("POST", "/objects/Employee", headers: ["If-Match": "*"], json: body)
            #expect(any.status == 201)
        }
    }

    @Test func insertWithLocationDuplicateAndCreateOnly() throws {
        try withService { client in
            let body =
                #"{"$id": "E99", "firstName": "New", "lastName": "Hire", "department": {"$ref": "Department/5"}}"#
            let created = try client.request("POST", "/objects/Employee", json: body)
            #expect(created.status == 201)
            #expect(created.header("Location") == "/objects/Employee/E99")
            #expect(created.json?["active"] == true)
            #expect(created.json?["$id"] == "Employee/E99")
            #expect(try client.request("POST", "/objects/Employee", json: body).errorCode == "duplicate-id")
            let createOnly = try client.request(
                "POST", "/objects/Employee", headers: ["If-None-Match": "*"], json: body)
            #expect(createOnly.status == 412)
            #expect(createOnly.header("ETag") == created.header("ETag"))
            #expect(createOnly.json?["error"]?["etag"] == .string(created.header("ETag") ?? ""))
            #expect(createOnly.json?["error"]?["current"]?["firstName"] == "New")
            let assigned = try client.request(
                "POST", "/objects/Employee",
                json: #"{"firstName": "A", "lastName": "B", "department": {"$ref": "Department/5"}}"#)
            #expect(assigned.status == 201)
            let location = try #require(assigned.header("Location"))
            #expect(try client.request("GET", location).json?["firstName"] == "A")
            // "$id": null is no id: the server assigns one, create-only or not.
            for headers in [[:], ["If-None-Match": "*"]] {
                let unnamed = try client.request(
                    "POST", "/objects/Employee", headers: headers,
                    json: #"{"$id": null, "firstName": "C", "lastName": "D", "department": {"$ref": "Department/5"}}"#)
                #expect(unnamed.status == 201, "\(unnamed.text)")
                #expect(unnamed.header("Location")?.hasPrefix("/objects/Employee/") == true)
            }
            for id in [".", ".."] {
                let dots = try client.request(
                    "POST", "/objects/Employee",
                    json:
                        #"{"$id": "\#(id)", "firstName": "C", "lastName": "D", "department": {"$ref": "Department/5"}}"#
                )
                #expect(dots.errorCode == "bad-id")
                #expect(dots.json?["error"]?["message"]?.stringValue?.contains("addressed") == true)
            }
            let orphan = try client.request("POST", "/objects/Employee", json: #"{"firstName": "A", "lastName": "B"}"#)
            #expect(orphan.status == 422)
            #expect(orphan.errorCode == "cardinality")
            #expect(try client.request("GET", "/objects/Employee").json?["count"] == 36)
        }
    }

    @Test func deleteAppliesRules() throws {
        try withService { client in
            let denied = try client.request("DELETE", "/objects/Department/1")
            #expect(denied.status == 409)
            #expect(denied.errorCode == "delete-denied")
            #expect(try client.request("DELETE", "/objects/Department/5").status == 204)
            #expect(try client.request("GET", "/objects/Department/5").status == 404)
            // Employee/2 manages 4 and 5: deleting it nullifies their manager.
            #expect(try client.request("DELETE", "/objects/Employee/2", headers: ["If-Match": "\"7\""]).status == 412)
            #expect(try client.request("DELETE", "/objects/Employee/2").status == 204)
            #expect(try client.request("GET", "/objects/Employee/4/manager").json == PropertyListValue.null)
            #expect(try client.request("GET", "/objects/Department/1/headcount").json == 10)
        }
    }

    @Test func toManyInsertAndRemove() throws {
        try withService { client in
            let moved = try client.request(
                "POST", "/objects/Department/5/employees?index=0", json: #"{"$ref": "Employee/4"}"#)
            #expect(moved.status == 200)
            #expect(moved.json == [["$ref": "Employee/4"]])
            #expect(try client.request("GET", "/objects/Employee/4/department").json == ["$ref": "Department/5"])
            let reports = try client.request(
                "POST", "/objects/Employee/1/directReports?index=1", json: #"{"$ref": "Employee/7"}"#)
            #expect(reports.json == [["$ref": "Employee/2"], ["$ref": "Employee/7"], ["$ref": "Employee/3"]])
            let removed = try client.request("DELETE", "/objects/Employee/1/directReports/1")
            #expect(removed.json == [["$ref": "Employee/2"], ["$ref": "Employee/3"]])
            #expect(try client.request("GET", "/objects/Employee/7/manager").json == PropertyListValue.null)
            // Through a to-one that the change itself clears (Employee/3 leaves its manager's directReports), the
            // answer is still the relationship's new value, read from its owner.
            let left = try client.request("DELETE", "/objects/Employee/3/manager/directReports/1")
            #expect(left.status == 200)
            #expect(left.json == [["$ref": "Employee/2"]])
            #expect(try client.request("GET", "/objects/Employee/3/manager").json == PropertyListValue.null)
            // Employee.department is required: removing from Department.employees is refused, nothing changes.
            let refused = try client.request("DELETE", "/objects/Department/5/employees/0")
            #expect(refused.status == 422)
            #expect(try client.request("GET", "/objects/Department/5/employees").json == [["$ref": "Employee/4"]])
            #expect(try client.request("POST", "/objects/Department/5/employees", json: "{}").status == 422)
            // A reference is `{"$ref"}` alone: nothing beside it (API.md §1).
            let extra = try client.request(
                "POST", "/objects/Employee/1/directReports", json: #"{"$ref": "Employee/7", "$x": 1}"#)
            #expect(extra.status == 422)
            #expect(try client.request("GET", "/objects/Employee/7/manager").json == PropertyListValue.null)
            #expect(try client.request("DELETE", "/objects/Department/5/employees/9").status == 422)
        }
    }

    /// A body saved by a tool that writes a UTF-8 byte order mark (Windows' .NET, PowerShell 5.1) is read as JSON.
    @Test func aJSONBodyAfterAByteOrderMarkIsRead() throws {
        try withService { client in
            let mark: [UInt8] = [0xEF, 0xBB, 0xBF]
            let set = try client.request(
                "PUT", "/objects/Employee/4/salary", headers: ["Content-Type": "application/json"],
                body: mark + Array("123456".utf8))
            #expect(set.status == 200, "\(set.text)")
            #expect(try client.request("GET", "/objects/Employee/4/salary").json == 123456)
        }
    }

    @Test func malformedBodiesChangeNothing() throws {
        try withService(maxBody: 4096) { client in
            let duplicate = try client.request("PUT", "/objects/Employee/4/salary", json: #"{"a": 1, "a": 2}"#)
            #expect(duplicate.status == 400)
            #expect(duplicate.errorCode == "malformed-json")
            #expect(duplicate.json?["error"]?["line"] == 1)
            let broken = try client.request("PATCH", "/objects/Employee/4", json: "{\"firstName\": ")
            #expect(broken.status == 400)
            #expect(broken.json?["error"]?["column"] != nil)
            let huge = try client.request(
                "PATCH", "/objects/Employee/4", json: "{\"firstName\": \"\(String(repeating: "x", count: 5000))\"}")
            #expect(huge.status == 413)
            let xml = try client.request(
                "PATCH", "/objects/Employee/4", headers: ["Content-Type": "application/xml"], json: "<a/>")
            #expect(xml.status == 415)
            for type in [
                "application/json; charset=ISO-8859-1", "text/plain;charset=\"utf-16\"", "application/jsonx",
                "text/plain",
                "text/plain; charset=utf-8",
            ] {
                let refused = try client.request(
                    "PUT", "/objects/Employee/4/lastName", headers: ["Content-Type": type], json: #""Zoë""#)
                #expect(refused.status == 415, "\(type)")
                #expect(refused.errorCode == "unsupported-media-type")
            }
            #expect(try client.request("GET", "/objects/Employee/4").header("ETag") == "\"1\"")
            for (index, type) in [
                "application/json; charset=UTF-8", "application/merge-patch+json",
                "application/x-www-form-urlencoded; charset=\"utf-8\"",
            ].enumerated() {
                let taken = try client.request(
                    "PUT", "/objects/Employee/4/lastName", headers: ["Content-Type": type], json: "\"Zoë \(index)\"")
                #expect(taken.status == 200, "\(type)")
            }
            #expect(try client.request("GET", "/healthz").header("X-Store-Seq") == "4")
        }
    }
}
