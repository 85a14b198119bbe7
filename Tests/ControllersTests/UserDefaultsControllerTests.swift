import Controllers
import Foundation
import ObjectGraph
import PropertyList
import Synchronization
import Testing

final class UserDefaultsControllerTests {
    let initial: [String: PropertyListValue] = ["pageSize": 25, "theme": "light"]
    /// Where this test's defaults files go; removed when the test ends.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("defaults-\(UUID().uuidString)").path

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func temporaryPath() -> String { directory + "/\(UUID().uuidString)/defaults.json" }

    @Test func appliesImmediately_setValue_savedAndPersisted_notificationPosted() throws {
        let path = temporaryPath()
        let defaults = try UserDefaultsController(configuration: .init(initialValues: initial), path: path)
        let posted = Mutex<[String]>([])
        defaults.onNotification = { name, _, _ in posted.withLock { $0.append(name) } }
        try defaults.setValue("dark", forKey: "theme")
        #expect(defaults.value(forKey: "theme") == "dark")
        #expect(defaults.hasUnappliedChanges == false)
        #expect(posted.withLock { $0 } == ["DefaultsDidChange"])
        let reloaded = try UserDefaultsController(configuration: .init(initialValues: initial), path: path)
        #expect(reloaded.value(forKey: "theme") == "dark")
        #expect(reloaded.value(forKey: "pageSize") == 25)
    }

    /// `-0.0` and `0.0` are different values (as JSON carries them): one over the other is saved and posted.
    @Test func negativeZeroOverZero_isAChange() throws {
        let path = temporaryPath()
        let defaults = try UserDefaultsController(configuration: .init(initialValues: ["ratio": 0.0]), path: path)
        let posted = Mutex(0)
        defaults.onNotification = { _, _, _ in posted.withLock { $0 += 1 } }
        try defaults.setValue(-0.0, forKey: "ratio")
        #expect(posted.withLock { $0 } == 1)
        let reloaded = try UserDefaultsController(configuration: .init(initialValues: ["ratio": 0.0]), path: path)
        #expect(reloaded.value(forKey: "ratio")?.isIdentical(to: -0.0) == true)
        try defaults.setValue(-0.0, forKey: "ratio")
        #expect(posted.withLock { $0 } == 1)
    }

    /// A save that cannot be written is refused and changes nothing, neither the values nor the pending changes.
    @Test func failedWrite_changesNothing() throws {
        let path = temporaryPath()
        let configuration = UserDefaultsController.Configuration(appliesImmediately: false, initialValues: initial)
        let defaults = try UserDefaultsController(configuration: configuration, path: path)
        try defaults.setValue(50, forKey: "pageSize")
        // The temporary file's name taken by a directory: opening it for writing fails.
        try FileManager.default.createDirectory(atPath: path + ".tmp", withIntermediateDirectories: true)
        let failure = #expect(throws: ObjectGraphError.self) { try defaults.save() }
        #expect(failure?.status == 500)
        #expect(failure?.code == "storage-error")
        #expect(defaults.hasUnappliedChanges)
        #expect(defaults.value(forKey: "pageSize") == 50)
        try FileManager.default.removeItem(atPath: path + ".tmp")
        try defaults.save()
        #expect(!defaults.hasUnappliedChanges)
        #expect(try UserDefaultsController(configuration: configuration, path: path).value(forKey: "pageSize") == 50)
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
    }

    /// Setting the saved value again (or null where nothing is saved) leaves nothing unapplied, as in Cocoa.
    @Test func notAppliesImmediately_theSavedValueAgainIsNoUnappliedChange() throws {
        let configuration = UserDefaultsController.Configuration(appliesImmediately: false, initialValues: initial)
        let defaults = try UserDefaultsController(configuration: configuration, path: temporaryPath())
        try defaults.setValue(50, forKey: "pageSize")
        try defaults.save()
        try defaults.setValue(50, forKey: "pageSize")
        #expect(!defaults.hasUnappliedChanges)
        try defaults.setValue(60, forKey: "pageSize")
        #expect(defaults.hasUnappliedChanges)
        try defaults.setValue(50, forKey: "pageSize")
        #expect(!defaults.hasUnappliedChanges)
        #expect(defaults.value(forKey: "pageSize") == 50)
        try defaults.setValue(.null, forKey: "theme")
        #expect(!defaults.hasUnappliedChanges)
        try defaults.setValue(.real(50), forKey: "pageSize")  // not the same value: 50.0 is a real
        #expect(defaults.hasUnappliedChanges)
    }

    @Test func notAppliesImmediately_pendingUntilSave_revertDropsPending() throws {
        let path = temporaryPath()
        let configuration = UserDefaultsController.Configuration(appliesImmediately: false, initialValues: initial)
        let defaults = try UserDefaultsController(configuration: configuration, path: path)
        try defaults.setValue(50, forKey: "pageSize")
        #expect(defaults.hasUnappliedChanges)
        #expect(defaults.value(forKey: "pageSize") == 50)
        #expect(!FileManager.default.fileExists(atPath: path))
        defaults.revert()
        #expect(defaults.value(forKey: "pageSize") == 25)
        #expect(!defaults.hasUnappliedChanges)
        try defaults.setValue(75, forKey: "pageSize")
        try defaults.save()
        #expect(!defaults.hasUnappliedChanges)
        #expect(try UserDefaultsController(configuration: configuration, path: path).value(forKey: "pageSize") == 75)
    }

    @Test func revertToInitialValues_restoresInitialValues() throws {
        let defaults = UserDefaultsController(configuration: .init(initialValues: initial))
        try defaults.setValue("dark", forKey: "theme")
        try defaults.setValue(true, forKey: "extra")
        try defaults.revertToInitialValues()
        // A key without an initial value keeps its value (Cocoa reverts "the corresponding values" only).
        #expect(defaults.values == initial.merging(["extra": true]) { $1 })
        let pendingDefaults = UserDefaultsController(
            configuration: .init(appliesImmediately: false, initialValues: initial))
        try pendingDefaults.setValue("dark", forKey: "theme")
        try pendingDefaults.save()
        try pendingDefaults.revertToInitialValues()
        #expect(pendingDefaults.hasUnappliedChanges)
        #expect(pendingDefaults.value(forKey: "theme") == "light")
        pendingDefaults.revert()
        #expect(pendingDefaults.value(forKey: "theme") == "dark")
        // Every pending edit is discarded, also of keys without an initial value ("discard all edits").
        try pendingDefaults.setValue(1, forKey: "extra")
        try pendingDefaults.revertToInitialValues()
        #expect(pendingDefaults.value(forKey: "extra") == PropertyListValue?.none)
        try pendingDefaults.save()
        #expect(pendingDefaults.values == initial)
    }

    /// Reverting to the initial values while changes are pending removes the saved values at `save`: nothing of the
    /// initial values is copied into the file, so later initial values show through.
    @Test func revertToInitialValues_pending_savesRemovals() throws {
        let path = temporaryPath()
        let configuration = UserDefaultsController.Configuration(appliesImmediately: false, initialValues: initial)
        let defaults = try UserDefaultsController(configuration: configuration, path: path)
        try defaults.revertToInitialValues()
        #expect(!defaults.hasUnappliedChanges)
        try defaults.setValue("dark", forKey: "theme")
        try defaults.setValue(50, forKey: "pageSize")
        try defaults.save()
        try defaults.setValue(75, forKey: "pageSize")
        try defaults.revertToInitialValues()
        #expect(defaults.hasUnappliedChanges)
        #expect(defaults.values == initial)
        try defaults.save()
        let file = try PropertyListValue(jsonBytes: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(file == ["values": [:]])
        let later = UserDefaultsController.Configuration(appliesImmediately: false, initialValues: ["theme": "blue"])
        #expect(try UserDefaultsController(configuration: later, path: path).value(forKey: "theme") == "blue")
    }

    /// `DefaultsDidChange` names the keys whose applied value changed: a `save` names what it applied, and a change
    /// that applies nothing new posts nothing.
    @Test func defaultsDidChange_namesAppliedKeys() throws {
        let posted = Mutex<[PropertyListValue]>([])
        let pendingDefaults = UserDefaultsController(
            configuration: .init(appliesImmediately: false, initialValues: initial))
        pendingDefaults.onNotification = { _, _, info in posted.withLock { $0.append(info) } }
        try pendingDefaults.setValue("dark", forKey: "theme")
        try pendingDefaults.setValue(50, forKey: "pageSize")
        #expect(posted.withLock { $0 }.isEmpty)
        try pendingDefaults.save()
        #expect(posted.withLock { $0 } == [["keys": ["pageSize", "theme"]]])
        let defaults = UserDefaultsController(configuration: .init(initialValues: initial))
        defaults.onNotification = { _, _, info in posted.withLock { $0.append(info) } }
        try defaults.revertToInitialValues()
        #expect(posted.withLock { $0 }.count == 1)
        try defaults.setValue("dark", forKey: "theme")
        try defaults.revertToInitialValues()
        #expect(posted.withLock { $0 }.suffix(2) == [["keys": ["theme"]], ["keys": ["theme"]]])
        // Setting what is there already (the value, its initial value, null for a key without a value) is no change.
        let count = posted.withLock { $0 }.count
        try defaults.setValue("dark", forKey: "theme")
        try defaults.setValue("dark", forKey: "theme")
        try defaults.setValue(25, forKey: "pageSize")
        try defaults.setValue(.null, forKey: "never")
        #expect(posted.withLock { $0 }.count == count + 1)
    }

    @Test func configuration_badFixture_refused() throws {
        #expect(throws: ObjectGraphError.self) {
            try UserDefaultsController.Configuration(json: ["appliesImmediately": "yes"])
        }
        #expect(throws: ObjectGraphError.self) { try UserDefaultsController.Configuration(json: ["other": 1]) }
        // API.md §1: keys starting with $ are the tags'; the fixture's initial values follow the rule PUT follows.
        for initial: PropertyListValue in [["$x": 1], ["k": ["$x": 1]], ["k": [["$ref": "Employee/1"]]]] {
            let refused = #expect(throws: ObjectGraphError.self) {
                try UserDefaultsController.Configuration(json: ["initialValues": initial])
            }
            #expect(refused?.code == "bad-defaults", "\(initial)")
        }
    }

    /// The saved file is held to the rules `setValue` keeps (a hand-edited or older file): refused at start, naming
    /// the file, rather than served and written back.
    @Test func savedFile_withValuesSetValueRefuses_refused() throws {
        for values in [#"{"a": {"$x": 1}}"#, #"{"$a": 1}"#, #"{"": 1}"#, #"{"a": [{"$ref": "Employee/1"}]}"#] {
            let path = temporaryPath()
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(#"{"values": \#(values)}"#.utf8).write(to: URL(fileURLWithPath: path))
            let refused = #expect(throws: ObjectGraphError.self) {
                try UserDefaultsController(configuration: .init(), path: path)
            }
            #expect(refused?.code == "bad-defaults-file", "\(values)")
            #expect(refused?.message.contains(path) == true)
        }
    }

    /// Each change answers the state it left: concurrent writers each get their own value back, in that change's
    /// snapshot, and snapshots are ordered by generation.
    @Test func concurrentSetValue_eachAnswersItsOwnState() throws {
        let defaults = UserDefaultsController(configuration: .init(initialValues: initial))
        let mismatches = Mutex(0)
        let generations = Mutex<Set<Int64>>([])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for n in 0..<100 {
                let value = PropertyListValue.integer(Int64(worker * 1000 + n))
                guard let snapshot = try? defaults.setValue(value, forKey: "pageSize") else { continue }
                if snapshot.value(forKey: "pageSize") != value { mismatches.withLock { $0 += 1 } }
                generations.withLock { _ = $0.insert(snapshot.generation) }
            }
        }
        #expect(mismatches.withLock { $0 } == 0)
        #expect(generations.withLock { $0 } == Set(1...800))
        #expect(defaults.snapshot.generation == 800)
    }
}
