import Foundation
import ObjectGraph
import PropertyList
import Synchronization

/// NSUserDefaultsController: the application's preferences, with initial values, pending changes and persistence
/// (API.md §5, `/defaults`).
///
/// A value is looked up in the pending changes, then the saved values, then the initial values. With
/// `appliesImmediately` a change is saved at once; else it is pending (`hasUnappliedChanges`) until `save`, and
/// `revert` drops it. Setting null removes the saved value (the initial value shows again). `revertToInitialValues`
/// makes every key that has an initial value show it again (pending when not `appliesImmediately`). Saved values live
/// in a JSON file (`{"values": {...}}`), written durably and atomically (a temporary file, fsynced, renamed over it);
/// without a path they live in memory.
public final class UserDefaultsController: Sendable {
    /// `defaults.json`: `{"appliesImmediately": true, "initialValues": {"key": value, ...}}`.
    public struct Configuration: Sendable, Hashable {
        public var appliesImmediately = true
        public var initialValues: [String: PropertyListValue] = [:]

        public init(appliesImmediately: Bool = true, initialValues: [String: PropertyListValue] = [:]) {
            self.appliesImmediately = appliesImmediately
            self.initialValues = initialValues
        }

        /// Reads the fixture form; 400 `bad-defaults` naming the field at fault.
        public init(json: PropertyListValue) throws(ObjectGraphError) {
            guard case .dictionary(let fields) = json else {
                throw Self.bad("defaults.json is {\"appliesImmediately\": true, \"initialValues\": {...}}.")
            }
            for key in fields.keys where key != "appliesImmediately" && key != "initialValues" {
                throw Self.bad("Unknown defaults field \"\(key)\".")
            }
            switch fields["appliesImmediately"] ?? .null {
            case .null: break
            case .boolean(let value): appliesImmediately = value
            default: throw Self.bad("\"appliesImmediately\" is true or false.")
            }
            switch fields["initialValues"] ?? .null {
            case .null: break
            case .dictionary(let values):
                for (key, value) in values {
                    if let problem = UserDefaultsController.problem(key: key, value: value) { throw Self.bad(problem) }
                }
                initialValues = values
            default: throw Self.bad("\"initialValues\" is a JSON object of keys and values.")
            }
        }

        static func bad(_ message: String) -> ObjectGraphError {
            ObjectGraphError(status: 400, code: "bad-defaults", message: message)
        }
    }

    /// A change of the defaults: the keys whose value changed, and the defaults as the change left them.
    public struct Change: Sendable {
        public var keys: [String]
        public var snapshot: Snapshot
    }

    /// The defaults as of one moment (a change, or a read), to read at leisure.
    public struct Snapshot: Sendable {
        fileprivate let state: State

        /// How many changes came before (every `setValue`, `save`, `revert` and `revertToInitialValues` counts one):
        /// of two snapshots, the one with the larger generation is the later.
        public var generation: Int64 { state.generation }

        /// Every key's current value (pending changes included).
        public var values: [String: PropertyListValue] { UserDefaultsController.values(of: state) }

        /// The key's current value; nil when no layer has it.
        public func value(forKey key: String) -> PropertyListValue? { values[key] }

        public var hasUnappliedChanges: Bool { !state.pending.isEmpty }

        /// `GET /defaults`: `{"values", "appliesImmediately", "hasUnappliedChanges", "pending", "initialValues"}`.
        public var json: PropertyListValue {
            [
                "values": .dictionary(values),
                "appliesImmediately": .boolean(state.configuration.appliesImmediately),
                "hasUnappliedChanges": .boolean(hasUnappliedChanges),
                "pending": .dictionary(state.pending),
                "initialValues": .dictionary(state.configuration.initialValues),
            ]
        }
    }

    fileprivate struct State: Sendable {
        var configuration: Configuration
        var saved: [String: PropertyListValue]
        var pending: [String: PropertyListValue] = [:]
        var generation: Int64 = 0
    }

    private struct Hooks {
        var observers: [@Sendable (Change) -> Void] = []
        var onNotification: (@Sendable (String, String?, PropertyListValue) -> Void)?
    }

    /// Where the saved values are kept; nil: in memory only.
    public let path: String?
    /// Runs before each write of the file; what it throws refuses the change (the document's check that its data
    /// directory is still in place).
    private let checkBeforeWriting: @Sendable () throws(ObjectGraphError) -> Void
    private let state: Mutex<State>
    private let hooks = Mutex(Hooks())
    /// Serializes changes: held around writing the file and telling the observers (who must not block; see
    /// `addObserver`), so that they hear of the changes in order.
    private let writing = Mutex(())

    /// Defaults kept in memory only.
    public init(configuration: Configuration) {
        self.path = nil
        self.checkBeforeWriting = {}
        state = Mutex(State(configuration: configuration, saved: [:]))
    }

    /// Loads the saved values from `path` when the file exists (500 `bad-defaults-file` naming it when it cannot be
    /// read or parsed: a missing file is the only one taken as no saved values).
    ///
    /// The serve command passes `<--data>/defaults.json` (the service uses the document's data directory), with the
    /// document's `checkDataDirectoryInPlace` as `checkBeforeWriting`.
    public init(
        configuration: Configuration, path: String,
        checkBeforeWriting: @escaping @Sendable () throws(ObjectGraphError) -> Void = {}
    ) throws(ObjectGraphError) {
        self.path = path
        self.checkBeforeWriting = checkBeforeWriting
        var saved: [String: PropertyListValue] = [:]
        let contents: [UInt8]?
        do {
            contents = try FileIO.readIfPresent(path)
        } catch {
            throw ObjectGraphError(
                status: 500, code: "bad-defaults-file", message: error.message, fields: ["file": .string(path)])
        }
        if let bytes = contents {
            func bad(_ message: String) -> ObjectGraphError {
                ObjectGraphError(
                    status: 500, code: "bad-defaults-file", message: "\(path): \(message)",
                    fields: ["file": .string(path)])
            }
            guard
                case .dictionary(let values)? =
                    (try? PropertyListValue(jsonBytes: bytes, maximumDepth: PropertyListValue.fileDepthLimit))?[
                        "values"]
            else { throw bad("expected {\"values\": {...}}.") }
            // What `setValue` refuses is refused here too: the file is read as if each value were set.
            for (key, value) in values {
                if let problem = Self.problem(key: key, value: value) { throw bad(problem) }
            }
            saved = values
        }
        state = Mutex(State(configuration: configuration, saved: saved))
    }

    // MARK: Observing

    /// Calls `observer` after every change, in the order of the changes: it is called while the next change waits,
    /// so it must not block or call back into the defaults (queue the work elsewhere).
    public func addObserver(_ observer: @escaping @Sendable (Change) -> Void) {
        hooks.withLock { $0.observers.append(observer) }
    }

    /// Receives `DefaultsDidChange` (object `defaults`, userInfo `{"keys": [...]}`) when values are applied.
    public var onNotification: (@Sendable (String, String?, PropertyListValue) -> Void)? {
        get { hooks.withLock { $0.onNotification } }
        set { hooks.withLock { $0.onNotification = newValue } }
    }

    // MARK: Reading

    /// The defaults now.
    public var snapshot: Snapshot {
        state.withLock { Snapshot(state: $0) }
    }

    /// Every key's current value (pending changes included).
    public var values: [String: PropertyListValue] { snapshot.values }

    /// The key's current value; nil when no layer has it.
    public func value(forKey key: String) -> PropertyListValue? { snapshot.value(forKey: key) }

    public var hasUnappliedChanges: Bool { snapshot.hasUnappliedChanges }

    public var appliesImmediately: Bool {
        state.withLock { $0.configuration.appliesImmediately }
    }

    /// `GET /defaults` (see `Snapshot.json`).
    public var json: PropertyListValue { snapshot.json }

    private static func values(of state: State) -> [String: PropertyListValue] {
        var values = appliedValues(of: state)
        for (key, value) in state.pending {
            values[key] = value.isNull ? state.configuration.initialValues[key] : value
        }
        return values
    }

    // MARK: Changing

    /// Why `key` cannot name a default or `value` cannot be one, or nil when both can.
    static func problem(key: String, value: PropertyListValue) -> String? {
        if key.isEmpty || key.hasPrefix("$") { return "\"\(key)\" cannot name a default." }
        if let reserved = value.reservedKey() {
            return "\(key) may not hold a dictionary key \"\(reserved)\" starting with $."
        }
        return nil
    }

    /// Throws 400 `bad-key-path` when `key` cannot name a default (empty, or starting with `$`).
    public static func checkName(_ key: String) throws(ObjectGraphError) {
        if let problem = problem(key: key, value: .null) {
            throw ObjectGraphError(
                status: 400, code: "bad-key-path", message: problem, fields: ["keyPath": .string(key)])
        }
    }

    /// Sets a value: saved at once with `appliesImmediately`, else pending. Null removes the key's saved value.
    /// Answers the defaults as this change left them. A pending value that is the saved one (or null where nothing
    /// is saved) is no unapplied change: the key's pending change is dropped, as NSUserDefaultsController's
    /// `hasUnappliedChanges` compares the cached values with the saved ones.
    ///
    /// With `present`, only if the key has a value (true) or has none (false) in the state it changes, else 412
    /// `precondition-failed` and nothing changes (HTTP's `If-Match: *` and `If-None-Match: *`).
    @discardableResult
    public func setValue(
        _ value: PropertyListValue, forKey key: String, onlyIfPresent present: Bool? = nil
    ) throws(ObjectGraphError) -> Snapshot {
        try Self.checkName(key)
        if let problem = Self.problem(key: key, value: value) { throw .typeMismatch(key, of: nil, problem) }
        return try change { state throws(ObjectGraphError) in
            if let present, (Self.values(of: state)[key] != nil) != present {
                throw ObjectGraphError(
                    status: 412, code: "precondition-failed",
                    message: present
                        ? "The default \(key) has no value, so If-Match: * fails."
                        : "The default \(key) has a value, so If-None-Match: * fails.",
                    fields: ["keyPath": .string(key)])
            }
            if state.configuration.appliesImmediately {
                Self.apply([key: value], to: &state.saved)
            } else if value.isNull ? state.saved[key] == nil : state.saved[key]?.isIdentical(to: value) == true {
                state.pending.removeValue(forKey: key)
            } else {
                state.pending[key] = value
            }
        }
    }

    /// Applies the pending changes and saves them.
    @discardableResult
    public func save() throws(ObjectGraphError) -> Snapshot {
        try change { state in
            Self.apply(state.pending, to: &state.saved)
            state.pending = [:]
        }
    }

    /// Drops the pending changes (nothing is written, so this cannot fail).
    @discardableResult
    public func revert() -> Snapshot {
        (try? change { state in state.pending = [:] }) ?? snapshot
    }

    /// NSUserDefaultsController's `revertToInitialValues:`: discards every pending change, and every key that has
    /// an initial value goes back to it (its saved value is dropped); keys without an initial value keep their saved
    /// values. The drops are pending (removals) unless `appliesImmediately`.
    @discardableResult
    public func revertToInitialValues() throws(ObjectGraphError) -> Snapshot {
        try change { state in
            state.pending = [:]
            for key in state.configuration.initialValues.keys where state.saved[key] != nil {
                if state.configuration.appliesImmediately {
                    state.saved.removeValue(forKey: key)
                } else {
                    state.pending[key] = .null
                }
            }
        }
    }

    private static func apply(_ changes: [String: PropertyListValue], to saved: inout [String: PropertyListValue]) {
        for (key, value) in changes {
            // Not `saved[key] = value.isNull ? nil : value`: `nil` would be PropertyListValue's own null literal.
            if value.isNull {
                saved.removeValue(forKey: key)
            } else {
                saved[key] = value
            }
        }
    }

    /// Runs `body` on a copy of the state, persists the saved values when they changed, and only then installs the
    /// copy (a failed write changes nothing); then tells observers. Answers the new state.
    ///
    /// Changes are serialized by `writing`, held around the file write and the observers' calls (so that they hear
    /// of the changes in order, each with the state it made: KVO reports every value, not the latest); readers take
    /// only `state`.
    ///
    /// Observers hear of the keys whose current value (pending changes included) changed; `DefaultsDidChange` names
    /// the keys whose applied value changed (a `save` applies what was pending) and is not posted when none did
    /// (setting a key to the value it has, or to null when it has no saved value, is no change).
    private func change(_ body: (inout State) throws(ObjectGraphError) -> Void) throws(ObjectGraphError) -> Snapshot {
        let (old, new) = try writing.withLock { _ throws(ObjectGraphError) in
            let old = state.withLock { $0 }
            var next = old
            try body(&next)
            next.generation += 1
            if !PropertyListValue.dictionary(next.saved).isIdentical(to: .dictionary(old.saved)) {
                try persist(next.saved)
            }
            state.withLock { [next] in $0 = next }
            let report = Change(
                keys: Self.changedKeys(Self.values(of: old), Self.values(of: next)), snapshot: Snapshot(state: next))
            for observer in hooks.withLock({ $0.observers }) { observer(report) }
            return (old, next)
        }
        let onNotification = hooks.withLock { $0.onNotification }
        let appliedKeys = Self.changedKeys(Self.appliedValues(of: old), Self.appliedValues(of: new))
        if !appliedKeys.isEmpty {
            onNotification?("DefaultsDidChange", "defaults", ["keys": .array(appliedKeys.map { .string($0) })])
        }
        return Snapshot(state: new)
    }

    /// The values without the pending changes.
    private static func appliedValues(of state: State) -> [String: PropertyListValue] {
        state.configuration.initialValues.merging(state.saved) { _, saved in saved }
    }

    /// The keys whose value differs between `before` and `after`, sorted.
    private static func changedKeys(
        _ before: [String: PropertyListValue], _ after: [String: PropertyListValue]
    ) -> [String] {
        Set(before.keys).union(after.keys).filter { key in
            guard let old = before[key], let new = after[key] else { return before[key] != after[key] }
            return !old.isIdentical(to: new)
        }.sorted()
    }

    /// Writes the saved values durably and atomically (`FileIO.writeDurably`: a temporary file, fsynced, renamed).
    private func persist(_ saved: [String: PropertyListValue]) throws(ObjectGraphError) {
        guard let path else { return }
        try checkBeforeWriting()
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try FileIO.makeDirectories(directory) }
        let bytes = PropertyListValue.dictionary(["values": .dictionary(saved)]).jsonBytes()
        do {
            try FileIO.writeDurably([bytes], to: path, directory: directory.isEmpty ? "." : directory)
        } catch {
            throw ObjectGraphError(
                status: error.status, code: "storage-error", message: "Cannot save the defaults: \(error.message)")
        }
    }
}
