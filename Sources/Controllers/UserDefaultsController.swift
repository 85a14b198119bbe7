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
                    if key.isEmpty || key.hasPrefix("$") { throw Self.bad("\"\(key)\" cannot name a default.") }
                    if let reserved = value.reservedKey(allowingReferences: false) {
                        throw Self.bad("\(key) may not hold a dictionary key \"\(reserved)\" starting with $.")
                    }
                }
                initialValues = values
            default: throw Self.bad("\"initialValues\" is a JSON object of keys and values.")
            }
        }

        static func bad(_ message: String) -> ObjectGraphError {
            ObjectGraphError(status: 400, code: "bad-defaults", message: message)
        }
    }

    /// A change of the defaults: the keys whose value may have changed, and whether changes are pending now.
    public struct Change: Sendable, Hashable {
        public var keys: [String]
        public var hasUnappliedChanges: Bool
    }

    private struct State {
        var configuration: Configuration
        var saved: [String: PropertyListValue]
        var pending: [String: PropertyListValue] = [:]
    }

    private struct Hooks {
        var observers: [@Sendable (Change) -> Void] = []
        var onNotification: (@Sendable (String, String?, PropertyListValue) -> Void)?
    }

    /// Where the saved values are kept; nil: in memory only.
    public let path: String?
    private let state: Mutex<State>
    private let hooks = Mutex(Hooks())
    /// Serializes changes (held around writing the file; nothing calls out under it).
    private let writing = Mutex(())

    /// Defaults kept in memory only.
    public init(configuration: Configuration) {
        self.path = nil
        state = Mutex(State(configuration: configuration, saved: [:]))
    }

    /// Loads the saved values from `path` when the file exists (500 `bad-defaults-file` naming it when it cannot be
    /// read or parsed: a missing file is the only one taken as no saved values).
    ///
    /// The serve command passes `<--data>/defaults.json` (the service uses the document's data directory).
    public init(configuration: Configuration, path: String) throws(ObjectGraphError) {
        self.path = path
        var saved: [String: PropertyListValue] = [:]
        let contents: [UInt8]?
        do {
            contents = try FileIO.readIfPresent(path)
        } catch {
            throw ObjectGraphError(
                status: 500, code: "bad-defaults-file", message: error.message, fields: ["file": .string(path)])
        }
        if let bytes = contents {
            guard
                case .dictionary(let values)? =
                    (try? PropertyListValue(jsonBytes: bytes, maximumDepth: PropertyListValue.fileDepthLimit))?[
                        "values"]
            else {
                throw ObjectGraphError(
                    status: 500, code: "bad-defaults-file", message: "\(path): expected {\"values\": {...}}.",
                    fields: ["file": .string(path)])
            }
            saved = values
        }
        state = Mutex(State(configuration: configuration, saved: saved))
    }

    // MARK: Observing

    /// Calls `observer` after every change of the values or of `hasUnappliedChanges` (outside the lock).
    public func addObserver(_ observer: @escaping @Sendable (Change) -> Void) {
        hooks.withLock { $0.observers.append(observer) }
    }

    /// Receives `DefaultsDidChange` (object `defaults`, userInfo `{"keys": [...]}`) when values are applied.
    public var onNotification: (@Sendable (String, String?, PropertyListValue) -> Void)? {
        get { hooks.withLock { $0.onNotification } }
        set { hooks.withLock { $0.onNotification = newValue } }
    }

    // MARK: Reading

    /// Every key's current value (pending changes included).
    public var values: [String: PropertyListValue] {
        state.withLock { Self.values(of: $0) }
    }

    /// The key's current value; nil when no layer has it.
    public func value(forKey key: String) -> PropertyListValue? {
        state.withLock { Self.values(of: $0)[key] }
    }

    public var hasUnappliedChanges: Bool {
        state.withLock { !$0.pending.isEmpty }
    }

    public var appliesImmediately: Bool {
        state.withLock { $0.configuration.appliesImmediately }
    }

    /// `GET /defaults`: `{"values", "appliesImmediately", "hasUnappliedChanges", "pending", "initialValues"}`.
    public var json: PropertyListValue {
        state.withLock { state in
            [
                "values": .dictionary(Self.values(of: state)),
                "appliesImmediately": .boolean(state.configuration.appliesImmediately),
                "hasUnappliedChanges": .boolean(!state.pending.isEmpty),
                "pending": .dictionary(state.pending),
                "initialValues": .dictionary(state.configuration.initialValues),
            ]
        }
    }

    private static func values(of state: State) -> [String: PropertyListValue] {
        var values = appliedValues(of: state)
        for (key, value) in state.pending {
            values[key] = value.isNull ? state.configuration.initialValues[key] : value
        }
        return values
    }

    // MARK: Changing

    /// Sets a value: saved at once with `appliesImmediately`, else pending. Null removes the key's saved value.
    public func setValue(_ value: PropertyListValue, forKey key: String) throws(ObjectGraphError) {
        guard !key.isEmpty, !key.hasPrefix("$") else {
            throw ObjectGraphError(
                status: 400, code: "bad-key-path", message: "\"\(key)\" cannot name a default.",
                fields: ["keyPath": .string(key)])
        }
        if let reserved = value.reservedKey(allowingReferences: false) {
            throw .typeMismatch(key, of: nil, "\(key) may not hold a dictionary key \"\(reserved)\" starting with $.")
        }
        try change { state in
            if state.configuration.appliesImmediately {
                Self.apply([key: value], to: &state.saved)
            } else {
                state.pending[key] = value
            }
        }
    }

    /// Applies the pending changes and saves them.
    public func save() throws(ObjectGraphError) {
        try change { state in
            Self.apply(state.pending, to: &state.saved)
            state.pending = [:]
        }
    }

    /// Drops the pending changes.
    public func revert() {
        try? change { state in state.pending = [:] }
    }

    /// NSUserDefaultsController's `revertToInitialValues:`: discards every pending change, and every key that has
    /// an initial value goes back to it (its saved value is dropped); keys without an initial value keep their saved
    /// values. The drops are pending (removals) unless `appliesImmediately`.
    public func revertToInitialValues() throws(ObjectGraphError) {
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
    /// copy (a failed write changes nothing); then tells observers.
    ///
    /// Changes are serialized by `writing`, held around the file write; readers take only `state`.
    ///
    /// Observers hear of the keys whose current value (pending changes included) changed; `DefaultsDidChange` names
    /// the keys whose applied value changed (a `save` applies what was pending) and is not posted when none did
    /// (setting a key to the value it has, or to null when it has no saved value, is no change).
    private func change(_ body: (inout State) -> Void) throws(ObjectGraphError) {
        let (old, new) = try writing.withLock { _ throws(ObjectGraphError) in
            let old = state.withLock { $0 }
            var next = old
            body(&next)
            if !PropertyListValue.dictionary(next.saved).isIdentical(to: .dictionary(old.saved)) {
                try persist(next.saved)
            }
            state.withLock { [next] in $0 = next }
            return (old, next)
        }
        let (observers, onNotification) = hooks.withLock { ($0.observers, $0.onNotification) }
        let report = Change(
            keys: Self.changedKeys(Self.values(of: old), Self.values(of: new)),
            hasUnappliedChanges: !new.pending.isEmpty)
        for observer in observers { observer(report) }
        let appliedKeys = Self.changedKeys(Self.appliedValues(of: old), Self.appliedValues(of: new))
        if !appliedKeys.isEmpty {
            onNotification?("DefaultsDidChange", "defaults", ["keys": .array(appliedKeys.map { .string($0) })])
        }
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
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw FileIO.error("mkdir", directory)
            }
        }
        let bytes = PropertyListValue.dictionary(["values": .dictionary(saved)]).jsonBytes()
        do {
            try FileIO.writeDurably([bytes], to: path, directory: directory.isEmpty ? "." : directory)
        } catch {
            throw ObjectGraphError(
                status: 500, code: "internal-error", message: "Cannot save the defaults: \(error.message)")
        }
    }
}
