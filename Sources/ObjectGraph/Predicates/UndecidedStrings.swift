import Synchronization

/// The strings a pattern's matches could not decide within their own limit (`RegularExpression`, `LikePattern`),
/// remembered so that a filter applied again and again to the same strings (a controller's, at every arrangement
/// after any insert) pays that limit once per string rather than at every arrangement: a match takes the same steps
/// every time, so it would reach the limit again. Strings are kept as two 64-bit hashes of their UTF-8 (each with
/// the process's own random seed), at most `capacity` of them; past that, matches are simply made again.
final class UndecidedStrings: Sendable {
    /// At most this many strings are remembered per pattern (about 3 MB).
    static let capacity = 100_000

    private struct Key: Hashable {
        let first: Int
        let second: Int
    }

    private let keys = Mutex<Set<Key>>([])

    /// Whether a match of `string` reached its own limit before.
    func contains(_ string: String) -> Bool {
        guard !keys.withLock(\.isEmpty) else { return false }
        let key = Self.key(of: string)
        return keys.withLock { $0.contains(key) }
    }

    /// Remembers that a match of `string` reached its own limit.
    func insert(_ string: String) {
        let key = Self.key(of: string)
        keys.withLock { keys in
            if keys.count < Self.capacity { keys.insert(key) }
        }
    }

    /// Hashes of the bytes, not of the `String` (which hashes canonically equivalent spellings alike, while a match
    /// sees the code units).
    private static func key(of string: String) -> Key {
        var first = Hasher()
        var second = Hasher()
        second.combine(0x9E37_79B9 as UInt32)
        var string = string  // (native UTF-8 for `withUTF8`, which a bridged string may need to copy into)
        string.withUTF8 { bytes in
            first.combine(bytes: UnsafeRawBufferPointer(bytes))
            second.combine(bytes: UnsafeRawBufferPointer(bytes))
        }
        return Key(first: first.finalize(), second: second.finalize())
    }
}
