/// A compiled `LIKE` pattern: `*` matches any run of characters, `?` exactly one, `\` escapes the next one.
///
/// The pattern is compiled once (already folded for `[c]`/`[d]`); matching walks the Unicode scalars of the composed
/// forms (NFC, so that both spellings of `é` match, and `?` takes `é` whole) with the classic backtrack-to-the-last-star
/// algorithm: O(n·m) at worst, no allocation for ASCII.
struct LikePattern: Sendable, Hashable {
    enum Element: Sendable, Hashable {
        case scalar(Unicode.Scalar)
        case any
        case star
    }

    let elements: [Element]

    init(_ pattern: String) {
        var elements: [Element] = []
        var escaped = false
        for scalar in StringFolding.composed(pattern).unicodeScalars {
            if escaped {
                elements.append(.scalar(scalar))
                escaped = false
                continue
            }
            switch scalar {
            case "\\": escaped = true
            case "*": if elements.last != .star { elements.append(.star) }
            case "?": elements.append(.any)
            default: elements.append(.scalar(scalar))
            }
        }
        if escaped { elements.append(.scalar("\\")) }
        self.elements = elements
    }

    /// Whether the whole of `string` matches.
    func matches(_ string: String) -> Bool {
        let scalars = StringFolding.composed(string).unicodeScalars
        var position = scalars.startIndex
        var element = 0
        var starElement: Int? = nil
        var starPosition = position
        while position != scalars.endIndex {
            if element < elements.count {
                switch elements[element] {
                case .star:
                    starElement = element
                    starPosition = position
                    element += 1
                    continue
                case .any:
                    element += 1
                    position = scalars.index(after: position)
                    continue
                case .scalar(let expected):
                    if scalars[position] == expected {
                        element += 1
                        position = scalars.index(after: position)
                        continue
                    }
                }
            }
            guard let star = starElement else { return false }
            element = star + 1
            starPosition = scalars.index(after: starPosition)
            position = starPosition
        }
        while element < elements.count, elements[element] == .star { element += 1 }
        return element == elements.count
    }
}
