import PropertyList

/// The errors of the model and the store, one constructor per failure (API.md §2).
extension ObjectGraphError {
    /// 404 `no-such-entity`.
    public static func noSuchEntity(_ entity: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 404, code: "no-such-entity", message: "The model has no entity \"\(entity)\".",
            fields: ["entity": .string(entity)])
    }

    /// 404 `no-such-controller`.
    public static func noSuchController(_ name: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 404, code: "no-such-controller", message: "There is no controller \"\(name)\".",
            fields: ["controller": .string(name)])
    }

    /// 404 `no-such-object`: the object a request addresses does not exist.
    public static func noSuchObject(_ object: ObjectID) -> ObjectGraphError {
        ObjectGraphError(
            status: 404, code: "no-such-object", message: "There is no object \(object).",
            fields: ["object": .string(object.description)])
    }

    /// 409 `duplicate-id`.
    public static func duplicateID(_ object: ObjectID) -> ObjectGraphError {
        ObjectGraphError(
            status: 409, code: "duplicate-id", message: "\(object) already exists.",
            fields: ["object": .string(object.description)])
    }

    /// 400 `bad-id`: an id that is not `[A-Za-z0-9_.-]{1,64}`.
    public static func badID(_ id: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 400, code: "bad-id",
            message: id == "." || id == ".."
                ? "\"\(id)\" cannot be an id: URL clients remove it from a path, so its object could not be addressed."
                : "\"\(id)\" is not a valid id ([A-Za-z0-9_.-]{1,64}, not . or ..).",
            fields: ["id": .string(id)])
    }

    /// 400 `bad-key-path`: a key path that cannot be parsed or used this way.
    public static func badKeyPath(_ keyPath: String, _ reason: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 400, code: "bad-key-path", message: "Key path \"\(keyPath)\": \(reason)",
            fields: ["keyPath": .string(keyPath)])
    }

    /// 400 `bad-key-path`: a collection operator other than `@count` that ends `keyPath`, so collects nothing (the KVC
    /// guide: every other operator needs the key path of what it collects).
    public static func operatorWithoutKeyPath(_ key: String, in keyPath: String) -> ObjectGraphError {
        badKeyPath(
            keyPath, "\(key) needs a key path after it, such as \(key).salary (\(key).self for the values themselves).")
    }

    /// 422 `type-mismatch`: a value of the wrong type for its key.
    public static func typeMismatch(_ key: String, of object: ObjectID?, _ reason: String) -> ObjectGraphError {
        invalid(code: "type-mismatch", key: key, object: object, reason)
    }

    /// 422 `validation-failed`: a value that breaks a constraint of the model.
    public static func validationFailed(_ key: String, of object: ObjectID?, _ reason: String) -> ObjectGraphError {
        invalid(code: "validation-failed", key: key, object: object, reason)
    }

    /// 422 `cardinality`: a relationship with too few or too many destinations.
    public static func cardinality(_ key: String, of object: ObjectID?, _ reason: String) -> ObjectGraphError {
        invalid(code: "cardinality", key: key, object: object, reason)
    }

    /// 422 `read-only-key`: an attempt to set a derived key.
    public static func readOnlyKey(_ key: String, of object: ObjectID?) -> ObjectGraphError {
        invalid(code: "read-only-key", key: key, object: object, "\(key) is a derived key and cannot be set.")
    }

    /// 409 `delete-denied`: a `deny` delete rule with destinations left.
    public static func deleteDenied(_ object: ObjectID, key: String, destination: ObjectID) -> ObjectGraphError {
        ObjectGraphError(
            status: 409, code: "delete-denied",
            message: "\(object) cannot be deleted: its \(key) key still holds \(destination) (delete rule deny).",
            fields: ["object": .string(object.description), "keyPath": .string(key)])
    }

    /// 500 `invalid-model`: a model file that cannot be used, naming the file, the entity and the key.
    public static func invalidModel(file: String, entity: String?, key: String?, _ reason: String) -> ObjectGraphError {
        var where_ = file
        var fields: [String: PropertyListValue] = ["file": .string(file)]
        if let entity {
            where_ += ": entity \(entity)"
            fields["entity"] = .string(entity)
        }
        if let key {
            where_ += ", key \(key)"
            fields["key"] = .string(key)
        }
        return ObjectGraphError(status: 500, code: "invalid-model", message: "\(where_): \(reason)", fields: fields)
    }

    /// The error as an entry of an `errors` list: its fields with its code, message and status.
    public var listEntry: PropertyListValue {
        var entry = fields
        entry["code"] = .string(code)
        entry["message"] = .string(message)
        entry["status"] = .integer(Int64(status))
        return .dictionary(entry)
    }

    /// 422 `validation-failed` gathering several errors in `errors` (each `{code, message, status, keyPath,
    /// object}`).
    ///
    /// One error is returned as it is; `keyPath` of the combined error is the first error's.
    static func combining(_ errors: [ObjectGraphError]) -> ObjectGraphError {
        if errors.count == 1 { return errors[0] }
        let list = errors.map(\.listEntry)
        var fields: [String: PropertyListValue] = ["errors": .array(list)]
        fields["keyPath"] = errors.first?.fields["keyPath"]
        let sentences = errors.prefix(3).map(\.message).joined(separator: " ")
        let more = errors.count > 3 ? " (and \(errors.count - 3) more)" : ""
        return ObjectGraphError(
            status: 422, code: "validation-failed", message: "\(errors.count) values are invalid: \(sentences)\(more)",
            fields: fields)
    }

    private static func invalid(code: String, key: String, object: ObjectID?, _ reason: String) -> ObjectGraphError {
        var fields: [String: PropertyListValue] = ["keyPath": .string(key)]
        if let object { fields["object"] = .string(object.description) }
        let prefix = object.map { "\($0): " } ?? ""
        return ObjectGraphError(status: 422, code: code, message: prefix + reason, fields: fields)
    }
}
