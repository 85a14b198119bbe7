import PropertyList

extension ObjectGraphError {
    /// 400 `bad-predicate`: a predicate format string that does not parse; `column` is 1-based.
    public static func badPredicate(_ message: String, column: Int) -> ObjectGraphError {
        ObjectGraphError(
            status: 400, code: "bad-predicate", message: message, fields: ["column": .integer(Int64(column))])
    }

    /// 400 `bad-query`: a sort specification (or other query parameter) that does not parse.
    public static func badQuery(_ message: String, fields: [String: PropertyListValue] = [:]) -> ObjectGraphError {
        ObjectGraphError(status: 400, code: "bad-query", message: message, fields: fields)
    }
}
