import PropertyList

extension ObjectModel {
    /// Throws 404 `undefined-key` when `keyPath` names a key that objects of `entityName` (or the relationships on the
    /// way) cannot have, however the data stands: what evaluating it would throw on any object (and 400 `bad-key-path`
    /// when it ends in an operator that collects nothing). Keys after an `any` attribute, a derived key or a collection
    /// operator are not checked (they apply to values the model does not describe).
    public func checkReadable(_ keyPath: String, on entityName: String) throws(ObjectGraphError) {
        let keys = try KeyPathCompiler.keys(of: keyPath)
        var entity = entities[try entityIndex(entityName)]
        for (position, key) in keys.enumerated() where key != "self" {
            if key.hasPrefix("@") {
                if key != "@count" && position + 1 == keys.count { throw .operatorWithoutKeyPath(key, in: keyPath) }
                return
            }
            switch entity.properties[key] {
            case .relationship(let index):
                entity = entities[entity.relationships[index].destinationIndex]
            case .attribute(let slot):
                let attribute = entity.attributes[slot]
                guard attribute.type != .any, position + 1 < keys.count else { return }
                throw .undefinedKey(keys[position + 1], entity: attribute.type.rawValue)
            case .derived:
                return
            case nil:
                throw .undefinedKey(key, entity: entity.name)
            }
        }
    }

    /// Throws what `Transaction.setValue(_:forKeyPath:of:)` would throw for the shape of `keyPath` on any object of
    /// `entityName`, without a transaction: 400 `bad-key-path` through an attribute or at a collection operator,
    /// `read-only-key` at a derived key, 404 `undefined-key` for a key the entity does not have. (Values, and nil
    /// to-ones on the way, are checked when the value is set.) Returns whether the key path ends at a relationship
    /// (its values are references) rather than an attribute.
    @discardableResult
    public func checkSettable(_ keyPath: String, on entityName: String) throws(ObjectGraphError) -> Bool {
        let keys = try KeyPathCompiler.keys(of: keyPath)
        var entity = entities[try entityIndex(entityName)]
        for (position, key) in keys.enumerated() {
            let isLast = position == keys.count - 1
            switch entity.properties[key] {
            case .relationship(let index):
                if isLast { return true }
                entity = entities[entity.relationships[index].destinationIndex]
            case .attribute:
                guard isLast else {
                    throw .badKeyPath(
                        keyPath, "\(key) is an attribute; only relationships can be gone through to set a value.")
                }
            case .derived:
                throw .readOnlyKey(keyPath, of: nil)
            case nil:
                if key.hasPrefix("@") { throw .badKeyPath(keyPath, "a collection operator cannot be set.") }
                throw .undefinedKey(key, entity: entity.name)
            }
        }
        return false
    }

    /// Whether `keyPath` on `entityName` gives a number, as far as the model tells (an integer or real attribute,
    /// `@count`, `@sum`, `@avg`): false for other attributes, objects and collections, and for a key path that cannot
    /// be evaluated on it (`@count` of an object, `@sum` of objects); nil when the model cannot tell (below an `any`
    /// attribute).
    public func givesNumber(_ keyPath: String, on entityName: String) -> Bool? {
        switch try? compile(keyPath, for: entityName).resultType {
        case .scalar(let type)?: return type == .any ? nil : type == .integer || type == .real
        case .entity?, .collection?, nil: return false
        case .dynamic?: return nil
        }
    }

    /// Checks a filter and sort keys on `entityName` before any object is read (listings and controllers alike): every
    /// key path is `checkReadable` (an unknown key is 404 whatever the objects hold: evaluation alone would miss one
    /// behind a false `AND`, on empty content, or a sort key with one object to sort); then what Foundation refuses by
    /// shape: `ANY`, `ALL`, `NONE` or `SOME` over a key path of one value, or a literal a typed key path cannot be
    /// compared with (`checkLiterals`), is 400 `bad-predicate`, and a sort key that gives several values (a to-many)
    /// or an object 400 `bad-query`. What the model cannot tell is left to evaluation.
    public func checkArrangement(
        filter: Predicate?, sortKeys: [String], on entityName: String
    ) throws(ObjectGraphError) {
        for keyPath in (filter?.keyPaths ?? []) + sortKeys { try checkReadable(keyPath, on: entityName) }
        // By the key path's static type: a collection (through a to-many, an array-valued collection operator, a
        // derived key that is one), one value or one object; below an `any` attribute (`.dynamic`) nobody can tell.
        func type(of keyPath: String) -> StaticType? { try? compile(keyPath, for: entityName).resultType }
        for (keyPath, column) in filter?.aggregatedKeyPaths ?? [] {
            switch type(of: keyPath) {
            case .scalar?, .entity?:
                throw ObjectGraphError(
                    status: 400, code: "bad-predicate",
                    message: "ANY, ALL and NONE need a collection; \(keyPath) is one value of \(entityName).",
                    fields: ["keyPath": .string(keyPath), "column": .integer(Int64(column))])
            default:
                continue
            }
        }
        if let filter { try checkLiterals(of: filter, type: type) }
        for keyPath in sortKeys {
            switch type(of: keyPath) {
            case .collection?:
                throw .badQuery(
                    "\(keyPath) gives several values (a collection) and cannot be sorted by; sort by one value of "
                        + "them, such as their @count.",
                    fields: ["keyPath": .string(keyPath)])
            case .entity?:
                throw .badQuery(
                    "\(keyPath) gives an object, which has no order (compare: is not defined on it); sort by one of "
                        + "its attributes, such as \(keyPath == "self" ? "" : keyPath + ".")name.",
                    fields: ["keyPath": .string(keyPath)])
            default:
                continue
            }
        }
    }

    /// Refuses, as Foundation raises, a literal that a key path of a typed attribute cannot be compared with, on
    /// either side: an order (`<`, `>=`, `BETWEEN`) across types (`salary < 'abc'`, `lastName > 5`), a string
    /// operator (`BEGINSWITH`, `LIKE`, `MATCHES`, `CONTAINS` and `IN` of a string) on a value that is not a string or
    /// with a literal that is not one, an order or string operator on an object (`manager BEGINSWITH 'x'`), and a
    /// `date` compared with a string that is not ISO 8601 (`hireDate > '2015-1-1'`), which would match nothing where
    /// writing that string is refused. `==`, `!=` and membership (`IN {...}`, `{...} CONTAINS`) across other types
    /// stay NO and YES, as `isEqual:` answers. `NIL` compares with anything.
    private func checkLiterals(of filter: Predicate, type: (String) -> StaticType?) throws(ObjectGraphError) {
        for comparison in filter.comparisons {
            let op = comparison.op
            let keyPath: String
            let literal: PropertyListValue
            let column: Int
            let literalFirst: Bool
            switch (comparison.left, comparison.right) {
            case (.keyPath(let path), .constant(let value)):
                (keyPath, literal, column, literalFirst) = (path, value, comparison.rightColumn, false)
            case (.constant(let value), .keyPath(let path)) where comparison.modifier == .direct:
                (keyPath, literal, column, literalFirst) = (path, value, comparison.leftColumn, true)
            default:
                continue
            }
            // Membership compares elements with isEqual:; IN and CONTAINS of a string look for a substring.
            let isMembership =
                (op == .in && !literalFirst && literal.arrayValue != nil)
                || (op == .contains && literalFirst && literal.arrayValue != nil)
            let isStringOperator = (op.isStringOperator || op == .in) && !isMembership
            var keyType = type(keyPath)
            if comparison.modifier != .direct, case .collection(let element)? = keyType { keyType = element }
            func refuse(_ message: String) -> ObjectGraphError {
                ObjectGraphError(
                    status: 400, code: "bad-predicate", message: message,
                    fields: ["keyPath": .string(keyPath), "column": .integer(Int64(column))])
            }
            if case .entity? = keyType, isStringOperator || op.isOrdering || op == .between {
                throw refuse("\(keyPath) is an object, which has no order and is not a string.")
            }
            guard case .scalar(let attributeType)? = keyType, attributeType != .any else { continue }
            if isStringOperator {
                guard attributeType == .string else {
                    throw refuse(
                        "\(keyPath) is of type \(attributeType.rawValue), not string: a string operator cannot apply "
                            + "to it.")
                }
                guard literal.stringValue != nil || literal.isNull else {
                    throw refuse(
                        "A string operator needs a string to compare \(keyPath) with, not \(literal.typeName).")
                }
                continue
            }
            let literals = isMembership || op == .between ? literal.arrayValue ?? [literal] : [literal]
            for value in literals where !value.isNull {
                if attributeType == .date, let text = value.stringValue, ISO8601.date(from: text) == nil {
                    throw refuse(
                        "\(keyPath) is a date; \"\(text)\" is not ISO 8601 (such as 2015-01-31 or "
                            + "2015-01-31T09:00:00Z).")
                }
                if op.isOrdering || op == .between, !attributeType.orders(with: value) {
                    throw refuse(
                        "\(keyPath) is of type \(attributeType.rawValue) and cannot be ordered against "
                            + "\(value.typeName).")
                }
            }
        }
    }
}

extension AttributeType {
    /// Whether a value of this type can be ordered against `literal` (`compare:` between them is defined); dates
    /// against ISO 8601 strings.
    fileprivate func orders(with literal: PropertyListValue) -> Bool {
        switch (self, literal) {
        case (.integer, .integer), (.integer, .real), (.integer, .boolean), (.real, .integer), (.real, .real),
            (.real, .boolean), (.boolean, .integer), (.boolean, .real), (.boolean, .boolean), (.string, .string),
            (.date, .string), (.date, .date):
            true
        default:
            false
        }
    }
}
