import HTTPServer
import Synchronization

/// Requests sent with an `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key-header): the answer to the
/// first request with a key is kept, and a request repeating the key with the same method, target and body gets that
/// answer again (with `Idempotent-Replayed: true`) instead of being carried out again; one that comes while the first
/// is still being answered (waiting for its group commit) waits for that answer. A repeat with another method, target
/// or body is `422 idempotency-key-reused`.
///
/// Browsers resend a request whose kept-alive connection closed before any answer byte came, whatever its method: a
/// dropped answer to `POST .../add` made two objects, and to `POST /actions/undo` undid two groups. The demo page
/// sends a new key with every change it makes.
///
/// Keys are kept in memory only (not across a restart) for `lifetime`, at most `maxEntries` of them and answers of
/// `maxAnswerBytes` together (with their keys and targets; a body is kept as a hash), the oldest answered ones going
/// first. A 5xx answer is not kept: what it refused may be
/// tried again (the change was not made, or was rolled back with the journal).
final class IdempotentRequests: Sendable {
    /// What a request with a key is to do.
    enum Start {
        /// The first with its key: carry it out and give the answer to `finish`.
        case first
        /// A repeat of an answered request: send this.
        case replay(HTTPResponse)
        /// A repeat of a request still being answered: suspend and `waitForAnswer`.
        case wait
        /// The key was used for another request.
        case mismatch
    }

    /// What makes two requests the same one: the body by its hash (the process's seeded `Hasher`), so that a kept
    /// key holds no body.
    struct Fingerprint: Equatable {
        let method: String
        let path: String
        let query: String?
        let bodyHash: Int
        let bodySize: Int

        init(method: String, path: String, query: String?, body: [UInt8]) {
            self.method = method
            self.path = path
            self.query = query
            var hasher = Hasher()
            body.withUnsafeBytes { hasher.combine(bytes: $0) }
            bodyHash = hasher.finalize()
            bodySize = body.count
        }

        /// The request's.
        init(_ request: borrowing HTTPRequest) {
            self.init(method: request.method, path: request.rawPath, query: request.rawQuery, body: request.body)
        }

        var size: Int { method.utf8.count + path.utf8.count + (query?.utf8.count ?? 0) + 64 }
    }

    private struct Entry {
        let fingerprint: Fingerprint
        let started: ContinuousClock.Instant
        var answer: HTTPResponse?
        var waiting: [HTTPSuspendedConnection] = []
        /// Repeats told to wait (`start` answered `.wait`) that have not called `waitForAnswer` yet: the entry is
        /// not evicted meanwhile, or they would find no answer.
        var repeatsComing = 0
        var bytes: Int
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Keys in the order they came (some may be gone from `entries`), from `head` on.
        var order: [String] = []
        var head = 0
        var bytes = 0
    }

    static let lifetime = Duration.seconds(300)
    static let maxEntries = 10_000
    static let maxAnswerBytes = 64 << 20
    /// Keys are visible ASCII (an `sf-string` of the draft, quoted or not), at most this long.
    static let maxKeyLength = 255

    private let state = Mutex(State())

    /// Whether `key` can be one: 1 to `maxKeyLength` visible ASCII characters.
    static func isValid(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.count <= maxKeyLength && key.utf8.allSatisfy { (0x21...0x7e).contains($0) }
    }

    func start(key: String, fingerprint: Fingerprint) -> Start {
        state.withLock { state in
            Self.evict(&state, now: .now)
            guard var entry = state.entries[key] else {
                let bytes = key.utf8.count + fingerprint.size
                state.entries[key] = Entry(fingerprint: fingerprint, started: .now, bytes: bytes)
                state.order.append(key)
                state.bytes += bytes
                return .first
            }
            guard entry.fingerprint == fingerprint else { return .mismatch }
            if let answer = entry.answer { return .replay(Self.replayed(answer)) }
            entry.repeatsComing += 1
            state.entries[key] = entry
            return .wait
        }
    }

    /// The kept answer to a repeat of an answered request, as `start` would replay it, without starting anything: nil
    /// when there is none (a first request, one still being answered, a mismatch).
    func keptAnswer(key: String, fingerprint: Fingerprint) -> HTTPResponse? {
        state.withLock { state in
            Self.evict(&state, now: .now)
            guard let entry = state.entries[key], entry.fingerprint == fingerprint, let answer = entry.answer else {
                return nil
            }
            return Self.replayed(answer)
        }
    }

    /// The answer to the first request with `key`: kept for repeats (unless 5xx), and sent to those waiting.
    func finish(key: String, answer: HTTPResponse) {
        let waiting: [HTTPSuspendedConnection] = state.withLock { state in
            guard var entry = state.entries[key], entry.answer == nil else { return [] }
            let waiting = entry.waiting
            if answer.status >= 500 {
                state.entries[key] = nil
                state.bytes -= entry.bytes
            } else {
                entry.waiting = []
                entry.answer = answer
                let size = Self.size(of: answer)
                entry.bytes += size
                state.bytes += size
                state.entries[key] = entry
            }
            return waiting
        }
        for connection in waiting { connection.resume(with: Self.replayed(answer)) }
    }

    /// Answers `connection` (a repeat that came while the first request was being answered) with the first's answer
    /// once there is one.
    func waitForAnswer(key: String, connection: HTTPSuspendedConnection) {
        let answer: HTTPResponse? = state.withLock { state in
            // Gone only when the first request's answer was a 5xx (an entry with repeats coming is not evicted).
            guard var entry = state.entries[key] else { return Self.gone }
            entry.repeatsComing -= 1
            if entry.answer == nil { entry.waiting.append(connection) }
            state.entries[key] = entry
            return entry.answer.map(Self.replayed)
        }
        if let answer { connection.resume(with: answer) }
    }

    /// The answer to a repeat whose first request got a 5xx meanwhile (its entry was dropped): it may be sent again.
    private static let gone = HTTPResponse.error(
        .serverBusy("The first request with this Idempotency-Key failed; send it again."))

    private static func replayed(_ answer: HTTPResponse) -> HTTPResponse {
        var answer = answer
        answer.headers.append(("Idempotent-Replayed", "true"))
        return answer
    }

    private static func size(of answer: HTTPResponse) -> Int {
        let headers = answer.headers.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count }
        switch answer.body {
        case .bytes(let bytes): return headers + bytes.count
        default: return headers
        }
    }

    /// Drops answered entries from the oldest while there are too many, they hold too much, or they are too old.
    /// Entries still being answered, or with repeats told to wait, are passed over (kept, moved to the end of the
    /// order); they hold no answer and no body, so the limits are met without them.
    private static func evict(_ state: inout State, now: ContinuousClock.Instant) {
        var passedOver: [String] = []
        while state.head < state.order.count {
            let key = state.order[state.head]
            guard let entry = state.entries[key] else {
                state.head += 1
                continue
            }
            guard
                state.entries.count - passedOver.count > maxEntries || state.bytes > maxAnswerBytes
                    || now - entry.started > lifetime
            else { break }
            state.head += 1
            if entry.answer == nil || entry.repeatsComing > 0 {
                passedOver.append(key)
            } else {
                state.entries[key] = nil
                state.bytes -= entry.bytes
            }
        }
        state.order.append(contentsOf: passedOver)
        if state.head > 1024 && state.head * 2 > state.order.count {
            state.order.removeFirst(state.head)
            state.head = 0
        }
    }
}
