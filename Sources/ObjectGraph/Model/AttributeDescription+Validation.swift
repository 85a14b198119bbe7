import Foundation
import PropertyList

extension AttributeDescription {
    /// The stored form of a value a client sent for this attribute (API.md §1), or 422 `type-mismatch`.
    ///
    /// Accepts a real with no fraction for an integer, an integer for a real, a plain ISO 8601 string for a date, a
    /// plain base64 string for data. `any` takes every value whose dictionaries have no `$`-keys. Null passes (a
    /// missing required value is found when the transaction is validated).
    public func coerce(_ value: PropertyListValue, of object: ObjectID?) throws(ObjectGraphError) -> PropertyListValue {
        switch (type, value) {
        case (_, .null): return .null
        case (.string, .string), (.boolean, .boolean), (.integer, .integer), (.real, .real), (.date, .date),
            (.data, .data):
            return value
        case (.integer, .real):
            if let integer = value.integerValue { return .integer(integer) }
        case (.real, .integer(let integer)):
            return .real(Double(integer))
        case (.date, .string(let text)):
            if let date = ISO8601.date(from: text) { return .date(date) }
            throw .typeMismatch(name, of: object, "\(name) must be a date; \"\(text)\" is not ISO 8601.")
        case (.data, .string(let text)):
            if let data = Base64.decode(text) { return .data(data) }
            throw .typeMismatch(name, of: object, "\(name) must be data; the string is not base64.")
        case (.any, _):
            if let key = value.reservedKey() {
                throw .typeMismatch(
                    name, of: object, "\(name) may not hold a dictionary key \"\(key)\" starting with $.")
            }
            return value
        default:
            break
        }
        throw .typeMismatch(name, of: object, "\(name) must be \(Self.article(type.rawValue)), not \(value.typeName).")
    }

    /// The first constraint a stored value breaks, or nil. Null breaks only `required`.
    public func violation(of value: PropertyListValue, in object: ObjectID?) -> ObjectGraphError? {
        if value.isNull {
            return isRequired ? .validationFailed(name, of: object, "\(name) is required.") : nil
        }
        if let minimum, let order = Self.compare(value, minimum), order < 0 {
            return .validationFailed(name, of: object, "\(name) must be at least \(Self.describe(minimum)).")
        }
        if let maximum, let order = Self.compare(value, maximum), order > 0 {
            return .validationFailed(name, of: object, "\(name) must be at most \(Self.describe(maximum)).")
        }
        if minLength != nil || maxLength != nil, let length = Self.length(of: value) {
            if let minLength, length < minLength {
                return .validationFailed(name, of: object, "\(name) must be at least \(minLength) long.")
            }
            if let maxLength, length > maxLength {
                return .validationFailed(name, of: object, "\(name) must be at most \(maxLength) long.")
            }
        }
        if let pattern, case .string(let text) = value {
            do {
                if try !pattern.matchesWhole(text) {
                    return .validationFailed(name, of: object, "\(name) must match the pattern \(pattern.pattern).")
                }
            } catch {
                return .validationFailed(
                    name, of: object,
                    "\(name) could not be checked against the pattern \(pattern.pattern) within the matching limit.")
            }
        }
        if let allowedValues, case let key = value.equalityKey,
            !allowedValues.contains(where: { $0.equalityKey == key })
        {
            let list = allowedValues.map(Self.describe).joined(separator: ", ")
            return .validationFailed(name, of: object, "\(name) must be one of \(list).")
        }
        return nil
    }

    /// Orders two numbers (exactly, also an integer beyond 2^53 against a real bound) or two dates; nil for other
    /// pairs.
    static func compare(_ lhs: PropertyListValue, _ rhs: PropertyListValue) -> Int? {
        let order: ComparisonResult
        switch (lhs, rhs) {
        case (.date(let a), .date(let b)):
            order = ValueComparison.order(a.timeIntervalSince1970, b.timeIntervalSince1970)
        case (.boolean, _), (_, .boolean): return nil
        default:
            guard let a = ValueComparison.Number(lhs), let b = ValueComparison.Number(rhs) else { return nil }
            order = a.compare(b)
        }
        return switch order {
        case .orderedAscending: -1
        case .orderedSame: 0
        case .orderedDescending: 1
        }
    }

    /// UTF-16 code units of a string, as `NSString.length` (and so Core Data) counts them; bytes of data. Not
    /// characters: a letter followed by any number of combining marks is one character, so `maxLength` would not
    /// bound what is stored.
    static func length(of value: PropertyListValue) -> Int? {
        switch value {
        case .string(let text): text.utf16.count
        case .data(let data): data.count
        default: nil
        }
    }

    static func describe(_ value: PropertyListValue) -> String {
        if case .date(let date) = value { return ISO8601.string(from: date) }
        return value.jsonString()
    }

    static func article(_ word: String) -> String {
        (word.first.map { "aeiou".contains($0) } ?? false ? "an " : "a ") + word
    }
}
