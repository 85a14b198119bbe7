import Foundation

/// Case and diacritic folding for the `[c]` and `[d]` options and the case-insensitive sort selectors.
///
/// ASCII strings take a fast path that allocates nothing when there is nothing to fold (and nothing at all for
/// strings of up to 15 bytes, which Swift stores inline); other strings go through Foundation's folding.
enum StringFolding {
    /// `string` folded: lower-cased when `caseInsensitive`, stripped of diacritics when `diacriticInsensitive`.
    static func fold(_ string: String, caseInsensitive: Bool, diacriticInsensitive: Bool) -> String {
        guard caseInsensitive || diacriticInsensitive else { return string }
        var hasUpper = false
        for byte in string.utf8 {
            if byte >= 0x80 {
                return foldUnicode(string, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
            }
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { hasUpper = true }
        }
        guard caseInsensitive, hasUpper else { return string }
        let utf8 = string.utf8
        return String(unsafeUninitializedCapacity: utf8.count) { buffer in
            var index = 0
            for byte in utf8 {
                buffer[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                index += 1
            }
            return index
        }
    }

    private static func foldUnicode(_ string: String, caseInsensitive: Bool, diacriticInsensitive: Bool) -> String {
        var options: String.CompareOptions = []
        if caseInsensitive { options.insert(.caseInsensitive) }
        if diacriticInsensitive { options.insert(.diacriticInsensitive) }
        // Folding can leave a string decomposed; compose it so equal texts compare equal byte for byte.
        return string.folding(options: options, locale: nil).precomposedStringWithCanonicalMapping
    }

    /// `fold` that keeps every character one character, for `LIKE`, whose `?` matches one: a character whose full
    /// case folding is longer (`ß` to `ss`) is lower-cased instead, as ICU's case-insensitive `.` takes it whole.
    static func foldKeepingCharacters(_ string: String, caseInsensitive: Bool, diacriticInsensitive: Bool) -> String {
        let folded = fold(string, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
        guard caseInsensitive, !isASCII(string), folded.count != string.count else { return folded }
        var result = ""
        for character in string {
            let one = fold(String(character), caseInsensitive: true, diacriticInsensitive: diacriticInsensitive)
            result +=
                one.count == 1
                ? one : fold(character.lowercased(), caseInsensitive: false, diacriticInsensitive: diacriticInsensitive)
        }
        return result.precomposedStringWithCanonicalMapping
    }

    /// Whether `needle` occurs in `haystack` (`CONTAINS`). An empty needle occurs nowhere, as with
    /// `-rangeOfString:`. ASCII compares byte for byte; other text in its composed form (NFC), so that canonically
    /// equivalent spellings match, and only where the match begins and ends on characters' boundaries, so that it
    /// never splits a character (`e` does not occur in `e` and a combining accent that has no composed form).
    /// Linear in both lengths: one `ByteSearch` pass, which goes on past matches that split characters.
    static func contains(_ haystack: String, _ needle: String) -> Bool {
        guard !needle.isEmpty else { return false }
        let ascii = isASCII(haystack) && isASCII(needle)
        var haystack = ascii ? haystack : composed(haystack)
        var needle = ascii ? needle : composed(needle)
        var boundaries: Set<Int>?
        return haystack.withUTF8 { h in
            needle.withUTF8 { n in
                ByteSearch.firstOffset(of: n, in: h) { found in
                    if ascii { return true }
                    let characterStarts = boundaries ?? characterBoundaries(h)
                    boundaries = characterStarts
                    return characterStarts.contains(found) && characterStarts.contains(found + n.count)
                }
            } != nil
        }
    }

    /// Whether `string` starts with `prefix` (`BEGINSWITH`); never for an empty prefix, as with `-hasPrefix:`.
    static func hasPrefix(_ string: String, _ prefix: String) -> Bool {
        guard !prefix.isEmpty else { return false }
        guard isASCII(string), isASCII(prefix) else { return string.hasPrefix(prefix) }
        return string.utf8.starts(with: prefix.utf8)
    }

    /// Whether `string` ends with `suffix` (`ENDSWITH`); never for an empty suffix, as with `-hasSuffix:`.
    static func hasSuffix(_ string: String, _ suffix: String) -> Bool {
        guard !suffix.isEmpty else { return false }
        guard isASCII(string), isASCII(suffix) else { return string.hasSuffix(suffix) }
        return string.utf8.reversed().starts(with: suffix.utf8.reversed())
    }

    /// The string in its composed form (NFC), so that canonically equivalent spellings have the same scalars; ASCII
    /// as it is.
    static func composed(_ string: String) -> String {
        isASCII(string) ? string : string.precomposedStringWithCanonicalMapping
    }

    static func isASCII(_ string: String) -> Bool {
        string.utf8.allSatisfy { $0 < 0x80 }
    }

    /// The UTF-8 offsets where the characters of the UTF-8 text `utf8` start, and its end.
    private static func characterBoundaries(_ utf8: UnsafeBufferPointer<UInt8>) -> Set<Int> {
        var boundaries: Set<Int> = [0]
        var offset = 0
        for character in String(decoding: utf8, as: UTF8.self) {
            offset += character.utf8.count
            boundaries.insert(offset)
        }
        return boundaries
    }
}
