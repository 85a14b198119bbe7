import PropertyList

/// Key-value coding over the stored graph: evaluating compiled key paths (Cocoa semantics, API.md §4).
///
/// A key applied to a collection is applied to each element (NSArray's `valueForKey:`), one key at a time, so
/// `departments.employees.@count` counts departments, exactly as Cocoa does; an operator takes the collection built so
/// far and applies the rest of the path to each element, so `employees.@sum.directReports.@count` sums each
/// employee's direct-report count. A nil to-one gives null and null propagates (messaging nil).
///
/// One evaluation produces at most `maximumValues` values from to-many relationships: each to-many after another
/// multiplies them (`department.employees.department.employees`), so a short key path could otherwise exhaust memory.
extension GraphState {
    /// The most to-many elements one evaluation may produce (400 `bad-key-path` beyond).
    static let maximumValues = 2_000_000

    func evaluate(_ steps: [KeyStep], on node: KeyPathNode) throws(ObjectGraphError) -> KeyPathNode {
        var evaluation = KeyPathEvaluation()
        return try evaluate(steps, on: node, evaluation: &evaluation)
    }

    func evaluate(_ steps: [KeyStep], on node: KeyPathNode, evaluation: inout KeyPathEvaluation)
        throws(ObjectGraphError) -> KeyPathNode
    {
        var current = node
        for (index, step) in steps.enumerated() {
            switch step {
            case .this:
                continue
            case .key(let lookup):
                // A to-many's `@count` straight after it is its length: no collection is made, and none of the run's
                // allowance is taken (`sort=department.employees.@count` over many objects costs a count each).
                if index + 1 == steps.count - 1, case .collectionOperator(.count, let rest) = steps[index + 1],
                    rest.isEmpty, case .object(let handle) = current,
                    case .relationship(let slot)? = lookup.properties[handle.entity],
                    relationship(handle, slot).isToMany
                {
                    noteRead(of: handle, evaluation: &evaluation)
                    return .value(.integer(Int64(toManyRows(handle, relationship(handle, slot)).count)))
                }
                current = try value(of: lookup, on: current, evaluation: &evaluation)
            case .collectionOperator(let op, let rest):
                return try apply(op, rest: rest, to: current, evaluation: &evaluation)
            }
        }
        return current
    }

    func value(of lookup: KeyLookup, on node: KeyPathNode, evaluation: inout KeyPathEvaluation) throws(ObjectGraphError)
        -> KeyPathNode
    {
        switch node {
        case .object(let handle):
            guard let property = lookup.properties[handle.entity] else {
                throw .undefinedKey(lookup.key, entity: model.entities[handle.entity].name)
            }
            return try value(of: property, on: handle, evaluation: &evaluation)
        case .collection(let elements):
            var values: [KeyPathNode] = []
            values.reserveCapacity(elements.count)
            for element in elements { values.append(try value(of: lookup, on: element, evaluation: &evaluation)) }
            return .collection(values)
        case .value(let value):
            switch value {
            case .null: return .null
            case .dictionary(let dictionary): return .value(dictionary[lookup.key] ?? .null)
            case .array(let elements):
                var values: [KeyPathNode] = []
                values.reserveCapacity(elements.count)
                for element in elements {
                    values.append(try self.value(of: lookup, on: .value(element), evaluation: &evaluation))
                }
                return .collection(values)
            default:
                throw .undefinedKey(lookup.key, entity: value.typeName)
            }
        }
    }

    func value(of property: Property, on handle: ObjectHandle) throws(ObjectGraphError) -> KeyPathNode {
        var evaluation = KeyPathEvaluation()
        return try value(of: property, on: handle, evaluation: &evaluation)
    }

    func value(of property: Property, on handle: ObjectHandle, evaluation: inout KeyPathEvaluation)
        throws(ObjectGraphError)
        -> KeyPathNode
    {
        noteRead(of: handle, evaluation: &evaluation)
        switch property {
        case .attribute(let slot):
            return .value(attribute(handle, slot))
        case .relationship(let index):
            let relationship = self.relationship(handle, index)
            if relationship.isToMany {
                let destination = relationship.destinationIndex
                let rows = toManyRows(handle, relationship)
                try evaluation.take(
                    rows.count, at: relationship.name, why: "each to-many relationship after another multiplies them")
                return .collection(rows.map { .object(ObjectHandle(entity: destination, row: Int($0))) })
            }
            return toOne(handle, relationship).map(KeyPathNode.object) ?? .null
        case .derived(let index):
            let steps = model.entities[handle.entity].derivedKeys[index].steps
            // A value kept from another object's evaluation would hide the reads it took.
            guard evaluation.reads == nil, let allowance = evaluation.allowance,
                allowance.derivedValues != nil
            else {
                return try evaluate(steps, on: .object(handle), evaluation: &evaluation)
            }
            let key = KeyPathAllowance.DerivedValueKey(object: handle, derivedKey: index)
            if let known = allowance.derivedValues?[key] { return known }
            let value = try evaluate(steps, on: .object(handle), evaluation: &evaluation)
            allowance.derivedValues?[key] = value
            return value
        }
    }

    /// A property of `handle` is read: the read is noted (when asked for).
    private func noteRead(of handle: ObjectHandle, evaluation: inout KeyPathEvaluation) {
        evaluation.reads?.append(handle.key)
    }

    // MARK: Collection operators

    func apply(
        _ op: CollectionOperator, rest: [KeyStep], to node: KeyPathNode, evaluation: inout KeyPathEvaluation
    ) throws(ObjectGraphError) -> KeyPathNode {
        let elements: [KeyPathNode]
        switch node {
        case .collection(let nodes): elements = nodes
        case .value(.array(let values)): elements = values.map(KeyPathNode.value)
        case .value(.null): return .null
        // NSDictionary's `valueForKey:` strips a key's `@` and asks its own `count`: the number of its entries.
        case .value(.dictionary(let dictionary)) where op == .count: return .value(.integer(Int64(dictionary.count)))
        case .object(let handle): throw .undefinedKey(op.rawValue, entity: model.entities[handle.entity].name)
        case .value(let value): throw .undefinedKey(op.rawValue, entity: value.typeName)
        }
        if op == .count { return .value(.integer(Int64(elements.count))) }
        var values = elements
        if !rest.isEmpty {
            values = []
            values.reserveCapacity(elements.count)
            for element in elements { values.append(try evaluate(rest, on: element, evaluation: &evaluation)) }
        }
        switch op {
        case .count:
            return .value(.integer(Int64(elements.count)))
        case .sum:
            // A sum past the largest double is no value (JSON has no infinity): null for predicates and sorts too,
            // not infinity behind a null.
            let total = try sum(values, op)
            return total.doubleValue?.isFinite == false ? .null : .value(total)
        case .avg:
            guard !elements.isEmpty, let total = try sum(values, op).doubleValue else { return .null }
            let count = Double(elements.count)
            if total.isFinite { return .value(.real(total / count)) }
            // The sum overflowed, but a mean of finite terms lies between them: the sum of each term's share (the
            // terms are numbers, booleans and nulls: `sum` checked them), which can still round past the largest
            // double when the mean is within rounding of it.
            let mean = values.reduce(0.0) { mean, value in
                guard case .value(let term) = value else { return mean }
                return mean + (term.doubleValue ?? (term.boolValue == true ? 1 : 0)) / count
            }
            return .value(
                .real(mean.isFinite ? mean : mean.sign == .minus ? -.greatestFiniteMagnitude : .greatestFiniteMagnitude)
            )
        case .min, .max:
            return try extreme(values, op)
        case .unionOfObjects:
            return .collection(values.filter { !$0.isNull })
        case .distinctUnionOfObjects:
            return .collection(Self.distinct(values.filter { !$0.isNull }))
        case .unionOfArrays:
            return .collection(try flatten(values, op, evaluation: &evaluation))
        case .distinctUnionOfArrays:
            return .collection(Self.distinct(try flatten(values, op, evaluation: &evaluation)))
        }
    }

    /// Sum of numbers (booleans count as 0/1, nulls are skipped): an integer when every term is one and the total
    /// fits in 64 bits (the integers are added exactly, so a running total may pass 2^63 on the way), else a real
    /// (infinite when it is beyond the largest double); 0 for none. Reals are added with compensation, so that the
    /// order of the terms barely matters ([1e16, 1, 1] and [1, 1, 1e16] both 1e16 + 2, as Foundation's decimal sum).
    private func sum(_ values: [KeyPathNode], _ op: CollectionOperator) throws(ObjectGraphError) -> PropertyListValue {
        var integers: Int128 = 0  // (2^64 terms of 2^63 could not overflow it)
        var reals = CompensatedSum()
        // The same sum of the terms scaled down by a power of two at least their count: it never overflows, so where
        // the running total does but the whole does not (1e308 + 1.7e308 - 1e308, in any order), scaled up again it
        // is the sum.
        let exponent = max(2, Int.bitWidth - values.count.leadingZeroBitCount)
        let scale = Double(sign: .plus, exponent: -exponent, significand: 1)
        var scaled = CompensatedSum()
        var hasReal = false
        for value in values {
            switch value {
            case .value(.null): continue
            case .value(.boolean(let flag)): integers += flag ? 1 : 0
            case .value(.integer(let integer)): integers += Int128(integer)
            case .value(let number) where number.doubleValue != nil:
                reals.add(number.doubleValue!)
                scaled.add(number.doubleValue! * scale)
                hasReal = true
            default: throw typeMismatch(op, value, "numbers")
            }
        }
        if !hasReal, let integer = Int64(exactly: integers) { return .integer(integer) }
        reals.add(Double(integers))
        scaled.add(Double(integers) * scale)
        let total = reals.value
        return .real(total.isFinite ? total : scaled.value / scale)
    }

    /// The least or greatest value by `compare:` (numbers, strings, dates, booleans); nulls skipped; null for none.
    private func extreme(_ values: [KeyPathNode], _ op: CollectionOperator) throws(ObjectGraphError) -> KeyPathNode {
        var best: PropertyListValue?
        for node in values {
            guard case .value(let value) = node else { throw typeMismatch(op, node, "comparable values") }
            if value.isNull { continue }
            guard let current = best else {
                guard ValueComparison.order(value, value) != nil else {
                    throw typeMismatch(op, node, "comparable values")
                }
                best = value
                continue
            }
            // `compare:` as sorting and predicates have it: strings by canonical decomposition, numbers by value
            // (booleans as 0 and 1).
            guard let order = ValueComparison.order(value, current) else {
                throw typeMismatch(op, node, "values of one type")
            }
            if op == .min ? order == .orderedAscending : order == .orderedDescending { best = value }
        }
        return .value(best ?? .null)
    }

    /// The collections' elements, one after another. The elements of arrays (values of `any` attributes, which no
    /// to-many step counted) count against the evaluation's budget and allowance as a to-many's do.
    private func flatten(
        _ values: [KeyPathNode], _ op: CollectionOperator, evaluation: inout KeyPathEvaluation
    ) throws(ObjectGraphError) -> [KeyPathNode] {
        var result: [KeyPathNode] = []
        for value in values {
            switch value {
            case .collection(let elements): result.append(contentsOf: elements)
            case .value(.array(let elements)):
                try evaluation.take(
                    elements.count, at: op.rawValue, why: "\(op.rawValue) counts the elements of the arrays it collects"
                )
                result.append(contentsOf: elements.map(KeyPathNode.value))
            case .value(.null): continue
            default: throw typeMismatch(op, value, "collections")
            }
        }
        return result
    }

    /// Keeps the first occurrence of each value, in order (Cocoa's order is unspecified; ours is stable); numbers
    /// are the same by value (`3` and `3.0`), as `NSNumber`s are.
    static func distinct(_ values: [KeyPathNode]) -> [KeyPathNode] {
        var seen: Set<KeyPathNode.Equality> = []
        return values.filter { seen.insert($0.equality).inserted }
    }

    private func typeMismatch(_ op: CollectionOperator, _ node: KeyPathNode, _ wanted: String) -> ObjectGraphError {
        let found: String
        switch node {
        case .object(let handle): found = "an object (\(objectID(of: handle)))"
        case .collection: found = "a collection"
        case .value(let value): found = value.typeName
        }
        return .typeMismatch(op.rawValue, of: nil, "\(op.rawValue) needs \(wanted), not \(found).")
    }

    // MARK: Conversions

    func keyValue(_ node: KeyPathNode) -> KeyValue {
        switch node {
        case .object(let handle): .object(objectID(of: handle))
        case .value(let value): .value(value)
        case .collection(let elements): .collection(elements.map(keyValue))
        }
    }

    /// A `KeyValue` as a node; objects must exist (404 `no-such-object`).
    func node(_ value: KeyValue) throws(ObjectGraphError) -> KeyPathNode {
        switch value {
        case .object(let id): return .object(try handle(of: id))
        case .value(let value): return .value(value)
        case .collection(let elements):
            var nodes: [KeyPathNode] = []
            for element in elements { nodes.append(try node(element)) }
            return .collection(nodes)
        }
    }

    /// The JSON-ready form of a node (objects as `{"$ref"}`).
    func json(_ node: KeyPathNode) -> PropertyListValue {
        switch node {
        case .object(let handle): ["$ref": .string(objectID(of: handle).description)]
        case .value(let value): value
        case .collection(let elements): .array(elements.map(json))
        }
    }
}

/// Neumaier's compensated sum: the rounding error of each addition is kept aside and added at the end (NaN once the
/// running sum has overflowed).
private struct CompensatedSum {
    private var sum = 0.0
    private var compensation = 0.0

    mutating func add(_ term: Double) {
        let total = sum + term
        compensation += abs(sum) >= abs(term) ? (sum - total) + term : (term - total) + sum
        sum = total
    }

    var value: Double { sum + compensation }
}
