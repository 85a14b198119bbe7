import ObjectGraph
import PropertyList
import Testing

// Helpers shared by the object-graph and controller tests.

/// A `{"$ref": "Entity/id"}` value.
public func ref(_ reference: String) -> PropertyListValue {
    ["$ref": .string(reference)]
}

/// The object id of an `Entity/id` reference.
public func id(_ reference: String) -> ObjectID {
    ObjectID(reference: reference)!
}

/// Expects `body` to throw an `ObjectGraphError` with `code` (and `status` when given); returns it.
@discardableResult
public func expectError(
    _ code: String, status: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> ObjectGraphError? {
    do {
        try body()
        Issue.record("expected \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as ObjectGraphError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        if let status { #expect(error.status == status, sourceLocation: sourceLocation) }
        return error
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// SplitMix64: a seeded generator, so a failing run can be replayed from the seed in its message.
public struct SeededGenerator: RandomNumberGenerator {
    public var state: UInt64

    public init(state: UInt64) {
        self.state = state
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
