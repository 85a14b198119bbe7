import PropertyList

/// What a long-poll gets: the JSON body and the seq it reflects, or an error.
public enum PollAnswer: Sendable {
    /// `{"changes": [...], "last": M}` or `{"notifications": [...], "last": M}`; `seq` is the store seq reflected.
    case items(PollItems, seq: Int64)
    /// 410 `history-compacted`: `since` is older than what is retained.
    case compacted(oldest: Int64, current: Int64)
    /// 404: the observer is gone (deleted or expired).
    case noSuchObserver(String)
    /// 503 `too-many-waiters`.
    case tooManyWaiters(retryAfter: Int)
}

/// What a long-poll asks for.
public struct PollRequest: Sendable {
    public enum Source: Sendable, Hashable {
        /// `/changes`, optionally of one entity.
        case store(entity: String?)
        /// `/observers/{id}/changes`.
        case observer(String)
        /// `/notifications`, optionally filtered by name and object.
        case notifications(name: String?, object: String?)
    }

    public var source: Source
    /// Nil: from now on (the current seq).
    public var since: Int64?
    /// Seconds to wait when there is nothing yet; 0 answers at once.
    public var timeout: Double
    /// The answer waits (up to a second) until the changes through this seq are processed; `ObservationCenter.poll`
    /// sets it to what a response may have told the client.
    public var notBefore: Int64 = 0

    public init(source: Source, since: Int64?, timeout: Double) {
        self.source = source
        self.since = since
        self.timeout = timeout
    }
}

/// An answer's body, encoded once however many waiters share it.
public final class PollItems: Sendable {
    public let json: PropertyListValue
    public let bytes: [UInt8]

    init(_ json: PropertyListValue) {
        self.json = json
        self.bytes = json.jsonBytes()
    }

    public subscript(key: String) -> PropertyListValue? { json[key] }
}
