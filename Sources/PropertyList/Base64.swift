import Foundation

/// Strict base64 (RFC 4648 §4): the standard alphabet, padded with `=` to a multiple of four characters, the unused
/// bits of the last group zero, no white space. Foundation's `Data(base64Encoded:)` on Linux also takes some text
/// that is none (`====` as one zero byte, `QUJ=`), which would store bytes the client never sent.
public enum Base64 {
    /// The bytes `text` encodes, or nil when it is not strict base64.
    public static func decode(_ text: some StringProtocol) -> Data? {
        let characters = Array(text.utf8)
        guard characters.count % 4 == 0 else { return nil }
        var data = Data(capacity: characters.count / 4 * 3)
        var group = 0
        while group < characters.count {
            let isLast = group + 4 == characters.count
            var values: [UInt8] = []
            for character in characters[group..<(group + 4)] {
                if let value = value(of: character) {
                    // A character after padding is no base64.
                    guard values.count < 4 else { return nil }
                    values.append(value)
                } else if character == UInt8(ascii: "=") && isLast {
                    values.append(0xFF)
                } else {
                    return nil
                }
            }
            let padding = values.count(where: { $0 == 0xFF })
            // `=` only at the end of the last group, at most two.
            guard padding <= 2, values.prefix(4 - padding).allSatisfy({ $0 != 0xFF }) else { return nil }
            let bits = values.prefix(4 - padding).reduce(UInt32(0)) { $0 << 6 | UInt32($1) } << (6 * UInt32(padding))
            let bytes = [UInt8(bits >> 16 & 0xFF), UInt8(bits >> 8 & 0xFF), UInt8(bits & 0xFF)]
            // The bits the padding leaves unused are zero (`QUI=`, not `QUJ=`).
            guard bytes[(3 - padding)...].allSatisfy({ $0 == 0 }) else { return nil }
            data.append(contentsOf: bytes.prefix(3 - padding))
            group += 4
        }
        return data
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
