/// Why a JSON text could not become a property-list value.
///
/// `line` and `column` are 1-based (column counts characters, as jansson does): for a syntax error, where it was
/// found; for a bad `$date` or `$data` tag, the `{` of its dictionary.
public struct JSONDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var line: Int?
    public var column: Int?
    public var position: Int?

    public init(message: String, line: Int? = nil, column: Int? = nil, position: Int? = nil) {
        self.message = message
        self.line = line
        self.column = column
        self.position = position
    }

    public var description: String {
        if let line, let column { return "\(message) (line \(line), column \(column))" }
        return message
    }
}
