import Bindery
import Foundation
import ObjectGraph
import PropertyList
import Synchronization

/// The package's root folder.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

let employeesFixture = packageRoot + "/Fixtures/employees"

/// A fresh, empty temporary directory, removed when `body` returns.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("bindery-tests-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// Collects report lines.
final class Reports: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    /// The lines that tell a problem recovered (`Document.problemsRecoveredAtOpen` counts them): all but the one that
    /// says the last run was not closed cleanly.
    var problems: [String] { all.filter { !$0.contains("was not closed cleanly") } }
    var report: @Sendable (String) -> Void { { line in self.lines.withLock { $0.append(line) } } }
}

func openDocument(
    _ path: String, fsync: FsyncPolicy = .never, snapshotRecords: Int = 50_000, reports: Reports = Reports()
) throws -> Document {
    try Document(
        fixtureDirectory: employeesFixture, dataDirectory: path,
        options: .init(fsync: fsync, snapshotRecords: snapshotRecords, report: reports.report))
}

/// Copies a data directory as a crash would leave it (the files as they are, the lock not held).
func crashCopy(of path: String) throws -> String {
    let copy = path + "-crash-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
    for name in try FileManager.default.contentsOfDirectory(atPath: path) where name != "lock" {
        try FileManager.default.copyItem(atPath: path + "/" + name, toPath: copy + "/" + name)
    }
    return copy
}

extension Document {
    func value(_ keyPath: String, of object: String) throws -> PropertyListValue {
        try store.read { view in try view.value(forKeyPath: keyPath, of: ObjectID(reference: object)!).json }
    }

    func set(_ value: PropertyListValue, _ keyPath: String, of object: String) throws {
        try transaction { try $0.setValue(value, forKeyPath: keyPath, of: ObjectID(reference: object)!) }
    }

    var graph: PropertyListValue { store.read { $0.exportGraph() } }

    /// Every object with its version: what a restart must keep exactly.
    var graphWithVersions: PropertyListValue { store.read { $0.snapshot() } }
}

extension PropertyListValue {
    /// A `graphWithVersions` as the first start after a crash has it: the same objects and versions, the seq moved
    /// on by `Document.seqsSkippedAfterACrash`.
    var afterCrash: PropertyListValue {
        guard case .dictionary(var fields) = self, case .integer(let seq) = fields["seq"] else { return self }
        fields["seq"] = .integer(seq + Document.seqsSkippedAfterACrash)
        // The id counter moves as far (ids of objects a crash lost are not handed out again).
        if case .integer(let ids) = fields["lastAssignedID"] {
            fields["lastAssignedID"] = .integer(ids + Document.seqsSkippedAfterACrash)
        }
        return .dictionary(fields)
    }
}

/// The journal segments of a data directory, oldest first.
func segments(in path: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasPrefix("journal-") }.sorted()
}
