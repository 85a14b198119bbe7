/// Substring search over bytes in time linear in both lengths (`CONTAINS`, `LIKE`'s segments): a naive search takes
/// their product, which a filter over long texts made minutes of the store's lock. glibc's `memmem` is not visible
/// to Swift (it is a GNU extension), so this is Knuth–Morris–Pratt, with the naive search kept for needles short
/// enough that it is linear anyway and allocates nothing.
enum ByteSearch {
    /// Needles up to this long are searched naively (at most this many comparisons per byte).
    static let shortNeedle = 16

    /// The offset of the first occurrence of `needle` (not empty) in `haystack`, or nil.
    static func firstOffset(of needle: UnsafeBufferPointer<UInt8>, in haystack: UnsafeBufferPointer<UInt8>) -> Int? {
        firstOffset(of: needle, in: haystack) { _ in true }
    }

    /// The offset of the first occurrence of `needle` (not empty) in `haystack` that `accept` takes, or nil: it is
    /// asked about each occurrence in order, overlapping ones too. One pass, linear however many it refuses.
    static func firstOffset(
        of needle: UnsafeBufferPointer<UInt8>, in haystack: UnsafeBufferPointer<UInt8>, where accept: (Int) -> Bool
    ) -> Int? {
        let n = needle.count
        guard n > 0, haystack.count >= n else { return nil }
        if n <= shortNeedle {
            let first = needle[0]
            for start in 0...(haystack.count - n) where haystack[start] == first {
                var offset = 1
                while offset < n, haystack[start + offset] == needle[offset] { offset += 1 }
                if offset == n, accept(start) { return start }
            }
            return nil
        }
        // failure[i]: the length of the longest proper prefix of needle[0...i] that is also its suffix.
        var failure = [Int](repeating: 0, count: n)
        var length = 0
        for index in 1..<n {
            while length > 0, needle[index] != needle[length] { length = failure[length - 1] }
            if needle[index] == needle[length] { length += 1 }
            failure[index] = length
        }
        var matched = 0
        for (index, byte) in haystack.enumerated() {
            while matched > 0, byte != needle[matched] { matched = failure[matched - 1] }
            if byte == needle[matched] { matched += 1 }
            if matched == n {
                if accept(index - n + 1) { return index - n + 1 }
                matched = failure[n - 1]
            }
        }
        return nil
    }
}
