import PropertyList

/// An error of the object graph that a client may see (API.md §2): a stable kebab-case code, a sentence, the HTTP
/// status it maps to, and extra fields (`keyPath`, `errors`, `column`, ...). The REST layer renders it as it is.
public struct ObjectGraphError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String
    public var fields: [String: PropertyListValue]

    public init(status: Int, code: String, message: String, fields: [String: PropertyListValue] = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields
    }

    public var description: String { "\(code): \(message)" }

    /// KVC's valueForUndefinedKey: 404 `undefined-key` naming the key.
    public static func undefinedKey(_ key: String, entity: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 404, code: "undefined-key", message: "\(entity) has no key \"\(key)\".",
            fields: ["keyPath": .string(key), "entity": .string(entity)])
    }
}
