// The core figures of issue 3: inserting 1,000,000 objects (seconds, RSS per object) and filtering + sorting
// 100,000 with a two-clause predicate (milliseconds, median of several runs), through the code path that
// `GET /objects/{Entity}?filter=..&sort=..` uses.
//
//   swift build -c release --scratch-path .build-bench --product ObjectGraphBenchmarks
//   .build-bench/release/ObjectGraphBenchmarks [--inserts N] [--objects N] [--runs N] [--skip-inserts]
//                                               [--listing-only] [--verify]
//
// Exit status 1 when the insert overhead is 400 B per object or more, or when --verify finds a difference.
import Foundation
import ObjectGraph
import PropertyList

/// Two entities, as the issue asks: `Member` has 3 attributes and a to-one `team` whose inverse is `Team.members`.
let modelJSON = """
    {"entities": {
      "Team": {"attributes": {"name": {"type": "string"}},
        "relationships": {"members": {"destination": "Member", "toMany": true, "inverse": "team"}}},
      "Member": {"attributes": {"name": {"type": "string"}, "city": {"type": "string"},
                                "salary": {"type": "integer"}},
        "relationships": {"team": {"destination": "Team", "inverse": "members"}}}}}
    """
let filterFormat = "salary > 300 AND team.name != 'Team 3'"
let sortQuery = "city,-salary"

struct Options {
    var inserts = 1_000_000
    var objects = 100_000
    var runs = 7
    var skipInserts = false
    /// Only the REST listing's path (for profiling).
    var listingOnly = false
    /// Only check that the listing's path answers as the general path does, on a small store with nulls and mixed
    /// kinds of values.
    var verify = false

    init(arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--inserts": inserts = iterator.next().flatMap { Int($0) } ?? inserts
            case "--objects": objects = iterator.next().flatMap { Int($0) } ?? objects
            case "--runs": runs = iterator.next().flatMap { Int($0) } ?? runs
            case "--skip-inserts": skipInserts = true
            case "--listing-only": listingOnly = true
            case "--verify": verify = true
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
                exit(2)
            }
        }
    }
}

/// Resident set size in bytes (the second field of /proc/self/statm, in pages).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func seconds(_ duration: Duration) -> Double {
    let (whole, attoseconds) = duration.components
    return Double(whole) + Double(attoseconds) / 1e18
}

func milliseconds(_ duration: Duration) -> Double { seconds(duration) * 1000 }

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

/// 10 teams, then `count` members in transactions of `batch` (each member joins a team: the inverse is maintained).
func fill(_ store: ObjectStore, count: Int, batch: Int = 10_000) throws {
    try store.transaction { transaction in
        for team in 0..<10 {
            try transaction.insert("Team", id: "t\(team)", values: ["name": .string("Team \(team)")])
        }
    }
    var next = 0
    while next < count {
        let end = min(count, next + batch)
        try store.transaction { transaction in
            for n in next..<end {
                try transaction.insert(
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

func benchmarkInserts(count: Int) throws {
    let model = try ObjectModel(jsonBytes: Array(modelJSON.utf8))
    let before = residentBytes()
    let start = ContinuousClock.now
    let store = ObjectStore(model: model)
    try fill(store, count: count)
    let elapsed = ContinuousClock.now - start
    let after = residentBytes()
    let stored = try store.read { view in try view.count(of: "Member") }
    precondition(stored == count)
    let perObject = Double(after - before) / Double(count)
    let values = 3 * MemoryLayout<PropertyListValue>.stride
    print(
        "insert \(count) objects: \(format(seconds(elapsed), 2)) s (\(format(Double(count) / seconds(elapsed), 0))/s); "
            + "RSS +\(format(Double(after - before) / 1_048_576)) MiB = \(format(perObject)) B/object, "
            + "of which values \(values) B, overhead \(format(perObject - Double(values))) B (target < 400)")
    if perObject - Double(values) >= 400 {
        print("overhead per object over the 400 B target")
        exit(1)
    }
}

/// CPU time of the calling thread in ms: unlike wall time, not inflated by other processes on a shared machine.
func threadCPUMilliseconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1e6
}

/// Runs `body` `runs` times and prints every wall time in ms, the median, and the median thread CPU time.
func measure(_ label: String, runs: Int, _ body: () throws -> Int) rethrows {
    var times: [Double] = []
    var cpuTimes: [Double] = []
    var result = 0
    for _ in 0..<runs {
        let start = ContinuousClock.now
        let cpuStart = threadCPUMilliseconds()
        result = try body()
        cpuTimes.append(threadCPUMilliseconds() - cpuStart)
        times.append(milliseconds(ContinuousClock.now - start))
    }
    let all = times.map { format($0) }.joined(separator: " ")
    print(
        "\(label): median \(format(median(times))) ms, CPU \(format(median(cpuTimes))) ms (runs: \(all)) -> \(result)")
}

func benchmarkFilterAndSort(count: Int, runs: Int, listingOnly: Bool) throws {
    let store = ObjectStore(model: try ObjectModel(jsonBytes: Array(modelJSON.utf8)))
    try fill(store, count: count)
    let predicate = try ObjectGraph.Predicate(format: filterFormat)
    let ordering = SortOrdering(try SortDescriptor.descriptors(query: sortQuery))
    print("filter \"\(filterFormat)\", sort \"\(sortQuery)\" over \(count) Member objects:")

    // Ids and `KeyPathResolving` (what array controllers use; the REST listing used it before the handle path).
    if !listingOnly {
        try measure("  ids + KeyPathResolving        ", runs: runs) {
            try store.read { view in
                let ids = try view.objects(of: "Member")
                let filtered = try predicate.filter(ids, subject: { .object($0) }, resolver: view)
                return try ordering.sorted(filtered, subject: { .object($0) }, resolver: view).count
            }
        }
    }
    // The REST listing's path (`BinderyService.listObjects`): handles, key paths compiled per entity.
    try measure("  listing path (handles)        ", runs: runs) {
        try store.read { view in try view.handles(of: "Member", matching: predicate, sortedBy: ordering).count }
    }
    if listingOnly { return }
    try measure("    of which filter alone       ", runs: runs) {
        try store.read { view in try view.handles(of: "Member", matching: predicate, sortedBy: nil).count }
    }
    // What `GET /objects/Member?filter=..&sort=..&limit=20` does between the router and the socket: parse the
    // query, filter and sort, render the first page and encode the response body.
    try measure("  REST listing, limit=20, no I/O", runs: runs) {
        let predicate = try ObjectGraph.Predicate(format: filterFormat)
        let ordering = SortOrdering(try SortDescriptor.descriptors(query: sortQuery))
        let (objects, count) = try store.read { view throws -> ([PropertyListValue], Int) in
            let handles = try view.handles(of: "Member", matching: predicate, sortedBy: ordering)
            return (try handles.prefix(20).map { try view.json(of: $0) }, handles.count)
        }
        let body: PropertyListValue = ["objects": .array(objects), "count": .integer(Int64(count))]
        return body.jsonBytes().count
    }
}

/// Checks that `ReadView.handles(of:matching:sortedBy:)` gives the objects (or the error) that `Predicate.filter` and
/// `SortOrdering.sorted` over `.object` subjects give, for predicates and orderings that take every path: dense ranks
/// packed or not, the general comparator (reals, objects, numeric-aware strings), nulls, `SELF`, operators, errors.
func verifyListing() throws {
    let model = try ObjectModel(
        jsonBytes: Array(
            """
            {"entities": {
              "Team": {"attributes": {"name": {"type": "string"}},
                "relationships": {"members": {"destination": "Member", "toMany": true, "inverse": "team"}}},
              "Member": {"attributes": {"name": {"type": "string"}, "city": {"type": "string"},
                                        "salary": {"type": "integer"}, "score": {"type": "real"},
                                        "flag": {"type": "boolean"}},
                "relationships": {"team": {"destination": "Team", "inverse": "members"}}}}}
            """.utf8))
    let store = ObjectStore(model: model)
    try store.transaction { transaction in
        for team in 0..<5 {
            try transaction.insert("Team", id: "t\(team)", values: ["name": .string(team == 4 ? "" : "Team \(team)")])
        }
        for n in 0..<2_000 {
            var values: [String: PropertyListValue] = [
                "name": .string(["N\(n % 37)", "n\(n % 11)", "Émile \(n % 13)", "N 5", "N 10"][n % 5]),
                "salary": n % 7 == 0 ? .null : .integer(Int64((n * 7919) % 1000) - 300),
                "score": n % 5 == 0 ? .null : .real(Double(n % 17) / 4),
                "flag": n % 3 == 0 ? .null : .boolean(n % 2 == 0),
            ]
            if n % 9 != 0 { values["city"] = .string(["Oslo", "rome", "Lima", "Zürich"][n % 4]) }
            if n % 6 != 0 { values["team"] = ["$ref": .string("Team/t\(n % 5)")] }
            try transaction.insert("Member", id: "m\(n)", values: values)
        }
    }
    let filters = [
        nil, "salary > 300 AND team.name != 'Team 3'", "name BEGINSWITH[c] 'n1' OR salary == nil", "team == nil",
        "SELF == 'Member/m5' OR team.members.@count > 399",
        "ANY team.members.salary > 698 AND city IN {'Oslo', 'rome'}",
        "NOT (score BETWEEN {1, 2}) && flag == TRUE", "name LIKE[cd] 'emile*'", "nokey > 1", "team.nokey == 1",
    ]
    let sorts = [
        "", "city,-salary", "-name:caseInsensitiveCompare:", "name:localizedStandardCompare:,salary", "score,-name",
        "-team,name", "-team.name,city,salary", "flag,-city,salary,name", "team.members.@count,-salary", "nokey",
        // Ranks too wide to pack into 64 bits: compared column by column.
        "name,city,salary,name,city,-salary,name,city,salary,-name",
    ]
    var checked = 0
    for filter in filters {
        let predicate = try filter.map { try ObjectGraph.Predicate(format: $0) }
        for sort in sorts {
            let descriptors = try SortDescriptor.descriptors(query: sort)
            let ordering = descriptors.isEmpty ? nil : SortOrdering(descriptors)
            let general = store.read { view in
                Result { () throws -> [ObjectID] in
                    var ids = try view.objects(of: "Member")
                    if let predicate { ids = try predicate.filter(ids, subject: { .object($0) }, resolver: view) }
                    if let ordering { ids = try ordering.sorted(ids, subject: { .object($0) }, resolver: view) }
                    return ids
                }
            }
            let listing = store.read { view in
                Result { () throws -> [ObjectID] in
                    try view.handles(of: "Member", matching: predicate, sortedBy: ordering).map(view.objectID(of:))
                }
            }
            // The sort itself against the comparator of prepared keys: each neighbour in order, ties in input order.
            let sortedStably = store.read { view in
                Result { () throws -> Bool in
                    guard let ordering, case .success(let sorted) = general, sorted.count > 1 else { return true }
                    let input = try view.objects(of: "Member")
                    let position = Dictionary(uniqueKeysWithValues: input.enumerated().map { ($1, $0) })
                    let keys = try sorted.map { try ordering.keys(of: .object($0), resolver: view) }
                    return keys.indices.dropFirst().allSatisfy { index in
                        switch ordering.compare(keys[index - 1], keys[index]) {
                        case .orderedAscending: true
                        case .orderedSame: position[sorted[index - 1]]! < position[sorted[index]]!
                        case .orderedDescending: false
                        }
                    }
                }
            }
            guard (try? sortedStably.get()) == true else {
                print("MISORDERED filter \(filter ?? "none"), sort \"\(sort)\"")
                exit(1)
            }
            switch (general, listing) {
            case (.success(let expected), .success(let found)) where expected == found: break
            case (.failure(let expected), .failure(let found)) where "\(expected)" == "\(found)": break
            default:
                print("MISMATCH filter \(filter ?? "none"), sort \"\(sort)\"")
                exit(1)
            }
            checked += 1
        }
    }
    print("verify: the listing path agrees with the general path in \(checked) cases")
}

let options = Options(arguments: CommandLine.arguments)
if options.verify {
    try verifyListing()
    exit(0)
}
print("ObjectGraphBenchmarks: \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(loadAverage())")
if !options.skipInserts { try benchmarkInserts(count: options.inserts) }
try benchmarkFilterAndSort(count: options.objects, runs: options.runs, listingOnly: options.listingOnly)

func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3)
        .joined(separator: " ") ?? "?"
}
