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
