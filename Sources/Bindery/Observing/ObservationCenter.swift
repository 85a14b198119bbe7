import Dispatch
import ObjectGraph
import PropertyList
import Synchronization

/// Everything that feeds long-poll clients: the change history, KVO observers, notifications, and the waiting
/// connections (DESIGN.md, "The flow of one change").
///
/// `@unchecked Sendable`: every stored property below `queue` is touched only on `queue` (a serial queue: the main
/// queue in the server), so that state needs no lock. The public methods may be called from any thread; they hop to
/// the queue. Committed records arrive through the `Receptionist`, in seq order. Waiting clients cost no thread:
/// a waiter is a closure that answers a suspended connection.
public final class ObservationCenter: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// Changes retained for `/changes` (and per observer), and notifications retained.
        public var historyCapacity: Int
        /// About how many bytes of values `/changes` retains (older seqs beyond are dropped: 410); each observer's
        /// own history keeps at most a sixteenth of it.
        public var historyBytes: Int
        /// Seconds after which an observer that nobody polls expires.
        public var observerTTL: Double
        /// Waiting long-polls (and event streams) at once; beyond, 503 `too-many-waiters`.
        public var maxWaiters: Int
        /// Seconds between heartbeats on idle event streams.
        public var heartbeatInterval: Double
        /// Observers at once; beyond, 503 `too-many-observers`. Every commit is matched against every observer, so
        /// the limit bounds the work per commit as well as memory.
        public var maxObservers: Int
        /// Seconds an `asap` notification waits for others to coalesce with: the queue's turn, for notifications.
        /// A run loop's turn is one event; over HTTP a client's posts come one after another's answer, each a turn
        /// of its own, so that a turn of the queue's own would coalesce nothing a client can send.
        public var asapTurn: Double
        /// Seconds after the first queued `whenIdle` notification that the queued ones are posted (the queue's idle).
        public var idleTurn: Double

        public init(
            historyCapacity: Int = 100_000, historyBytes: Int = 256 << 20, observerTTL: Double = 300,
            maxWaiters: Int = 16_000, heartbeatInterval: Double = 15, maxObservers: Int = 10_000,
            asapTurn: Double = 0.02, idleTurn: Double = 0.05
        ) {
            self.historyCapacity = historyCapacity
            self.historyBytes = historyBytes
            self.observerTTL = observerTTL
            self.maxWaiters = maxWaiters
            self.heartbeatInterval = heartbeatInterval
            self.maxObservers = maxObservers
            self.asapTurn = asapTurn
            self.idleTurn = idleTurn
        }
    }

    private struct Waiter {
        var request: PollRequest
        var since: Int64
        var deadline: Double
        var deliver: @Sendable (PollAnswer) -> Void
        /// Whether its client has gone (closed or reset its connection) while it waits.
        var isAbandoned: (@Sendable () -> Bool)?
        /// A poll with no timeout of its own (`timeout=0`), waiting only for what is due to it (`notBefore`, an
        /// `initial` change): answered, changes or not, as soon as that is processed.
        var answersWhenDue = false
    }

    /// What an event stream (server-sent events) is sent.
    public enum StreamEvent: Sendable {
        /// One change or notification. `id` is its seq on the last item of that seq only (a transaction's changes,
        /// a prior notification and its change share one): a client that resumes from `Last-Event-ID` after losing
        /// the connection in the middle of a seq is sent the whole seq again rather than miss the rest of it. Every
        /// feed's items are one event, `change` (API.md §7), notifications too. `json`: the item, rendered once for
        /// every stream of the same feed.
        case item(id: Int64?, json: [UInt8])
        /// The stream cannot go on (history compacted, observer gone): the error body; the stream then ends.
        case error(PropertyListValue)
        /// A comment when the stream is idle; with `lastEventID` when its cursor has moved past changes that were not
        /// for it (a filter's): an `id:` without data moves the client's `Last-Event-ID` and fires no event, so that
        /// it resumes from there, not from before changes that may have left the retained history meanwhile.
        case heartbeat(lastEventID: Int64?)
    }

    private struct Subscriber {
        var source: PollRequest.Source
        /// Its cursor: everything through it was sent or was not for it.
        var since: Int64
        /// The last `id:` it was sent (or the `since` it started from).
        var toldID: Int64
        var lastSent: Double
        /// Returns false when the client has gone. With a `whenSent` (more is retained than one push sends), it is
        /// called once the events written have gone to the client, for the next page.
        var send: @Sendable (_ events: [StreamEvent], _ whenSent: (@Sendable () -> Void)?) -> Bool
        var close: @Sendable () -> Void
        /// Whether its client has gone while nothing is being sent (looked at as for waiters).
        var isAbandoned: (@Sendable () -> Bool)?
        /// A page of its backlog is on its way (its `whenSent` not called yet): nothing more is pushed until it went,
        /// so that a client catching up holds one page unread, not a page per change made meanwhile.
        var pageInFlight = false
    }

    public let queue: DispatchQueue
    public let configuration: Configuration
    private let store: ObjectStore
    /// The seq a response may tell a client now (`Document.acknowledgedSeq` of the store's): a poll is answered no
    /// earlier than the queue has processed it (see `poll`).
    private let toldSeq: @Sendable () -> Int64
    private var history: ChangeHistory
    /// The seq of the last record processed here: the `last` of every answer.
    private var processedSeq: Int64
    /// `statistics` as the last tick left them (`recentStatistics`).
    private let publishedStatistics: Mutex<Statistics>
    private var observers: [String: KeyValueObserver] = [:]
    private var nextObserverID = 0
    /// Part of every observer id, different in every run: observers do not outlive the process, and a client still
    /// polling one from before a restart must get 404, not the changes of another observer that took its number.
    private let runToken = String(UInt32.random(in: 0..<(1 << 30)), radix: 36)
    private var waiters: [Int: Waiter] = [:]
    /// Answers (nil: nothing yet) by source and `since`, built and encoded once for every poll and waiter that asks
    /// the same until the next change: emptied by `wakeWaiters`, which follows every change of what answers hold.
    /// Bounded in bytes: an answer from far back in the history can be megabytes, and clients asking from many
    /// `since`s (300 polls of 12 MB answers) would otherwise keep them all (gigabytes) until the next change.
    private var answerCache: [AnswerKey: PollAnswer?] = [:]
    /// The encoded bytes of the answers in `answerCache`.
    private var answerCacheBytes = 0
    /// The cache is emptied before it would hold more than this (a larger answer is then kept alone: thousands of
    /// waiters of one `since` still share it).
    static let answerCacheMaxBytes = 16 << 20
    private var nextWaiterID = 0
    private var lastAbandonedSweep = 0.0
    /// Seconds between looks for waiters whose clients have gone (a peek at each one's socket).
    private static let abandonedSweepInterval = 2.0
    private var subscribers: [Int: Subscriber] = [:]
    /// Items rendered for event streams, by feed and place: a change sent to many streams is rendered once (300
    /// streams rendering each change of a 500 KB value kept the queue busy for 40 s). Dropped past `renderedLimit`.
    private var renderedItems: [RenderedItem: [UInt8]] = [:]
    private var renderedBytes = 0
    private static let renderedLimit = 64 << 20

    /// An item's place: the feed (with its filter), its seq, and its place among that seq's items of the feed.
    private struct RenderedItem: Hashable {
        var source: PollRequest.Source
        var seq: Int64
        var ordinal: Int
    }

    /// The item's JSON (UTF-8), rendered once per feed and place.
    private func rendered(_ item: PropertyListValue, _ key: RenderedItem) -> [UInt8] {
        if let json = renderedItems[key] { return json }
        let json = Array(item.jsonString().utf8)
        if renderedBytes + json.count > Self.renderedLimit {
            renderedItems = [:]
            renderedBytes = 0
        }
        renderedItems[key] = json
        renderedBytes += json.count
        return json
    }
    private let notificationCenter: NotificationCenter
    /// Whether the service's own notifications are being dropped (their seqs cannot be reserved); reported once.
    private var droppingNotifications = false
    private let report: @Sendable (String) -> Void
    private let notificationQueue = NotificationQueue()
    private var idleFlushScheduled = false
    private var asapFlushScheduled = false
    /// Counts the `asap` turns scheduled: a turn's timer posts only if its turn is the one scheduled now, not one that
    /// a `now` post ended early (whose timer would otherwise end the next turn early).
    private var asapTurns = 0
    /// Polls of notifications that came while `asap` ones were queued: started once those are posted.
    private var pollsAfterAsapFlush: [() -> Void] = []
    private var timer: (any DispatchSourceTimer)?
    /// Bounces committed records (and the service's own notifications, in order with them) to the queue.
    private var receptionist: Receptionist?

    /// The object observers' key paths, read under the store's lock at every commit (`capture`), so that each
    /// committed state is seen exactly even when the queue lags behind several commits.
    private struct WatchedKeyPath {
        var observerID: String
        var object: ObjectID
        var keyPath: String
        /// The to-many values its evaluation took at registration (at least 1): what it may cost a commit.
        var weight: Int
        /// What its last evaluation read (nil: it failed): a commit that changed none of it is not evaluated.
        var reads: ObjectReads?
        /// One stored key of the object (`KeyValueObserver.storedKey`): its changes come with the records.
        var storedKey = false

        /// What a read reads: observers of the same key path of the same object share it.
        struct Read: Hashable {
            var object: ObjectID
            var keyPath: String
        }
    }

    /// The to-many values all observed key paths may reach together in a store of `objectCount` objects, as measured
    /// at their registration (503 `too-many-observers` beyond): every commit evaluates every observed key path under
    /// the store's lock. Each one alone may reach `KeyPathAllowance.perEvaluation` (400 `bad-key-path` at
    /// registration beyond; read as null at a commit after it grew beyond).
    static func observedValuesTotal(objectCount: Int) -> Int { max(2_000_000, 4 * objectCount) }

    /// Reads an observed key path within the bound every observed key path has: `KeyPathAllowance.perEvaluation`
    /// for the whole read (a controller's key path evaluates one per arranged object). Answers the value and the
    /// to-many values the read took (its weight, at least 1).
    private static func boundedRead(
        objectCount: Int, _ read: () throws -> PropertyListValue
    ) throws -> (value: PropertyListValue, weight: Int) {
        let bound = KeyPathAllowance.perEvaluation(objectCount: objectCount)
        let (value, used) = try KeyPathAllowance.withLimit(total: bound, perEvaluation: bound, read)
        return (value, max(1, used))
    }

    /// The values in `value`, at least 1: an array's or dictionary's are those of its elements. A controller's key
    /// path is weighed by them when they are more than its read's to-many values: its arranged objects are no to-many
    /// relationship of the store (`arrangedObjects.salary` takes none and holds one value per object).
    private static func valueCount(_ value: PropertyListValue) -> Int {
        switch value {
        case .array(let elements): max(1, elements.reduce(0) { $0 + valueCount($1) })
        case .dictionary(let entries): max(1, entries.values.reduce(0) { $0 + valueCount($1) })
        default: 1
        }
    }

    /// The weights of the observers of controllers and the defaults (re-read on the queue when their target
    /// changes), by observer id; on the queue only.
    private var externalWeights: [String: Int] = [:]

    /// 503 `too-many-observers` when an observer of `weight` would take the observed key paths beyond
    /// `observedValuesTotal`. `objects` are the object observers' entries (read under `watched`'s lock).
    private func checkObservedWeight(
        adding weight: Int, objects: [WatchedKeyPath], objectCount: Int
    ) throws(ObjectGraphError) {
        let limit = Self.observedValuesTotal(objectCount: objectCount)
        let total = objects.reduce(0) { $0 + $1.weight } + externalWeights.values.reduce(0, +)
        guard total + weight > limit else { return }
        throw ObjectGraphError(
            status: 503, code: "too-many-observers",
            message: "The observed key paths reach \(total) values together; this one would add \(weight), beyond "
                + "\(limit). Delete observers of key paths that fan out through to-many relationships.",
            fields: ["limit": .integer(Int64(limit))])
    }

    private let watched = Mutex<[WatchedKeyPath]>([])
    /// How many observers (and registrations under way) each controller and the defaults have, by target: read by
    /// `externalTargetDidChange` on the reporting thread, so that a change nobody observes costs no trip to the queue
    /// and no read of the store (controllers report several for every commit). A registration counts itself before it
    /// reads its first value, so a change either is reported to the queue or happened before that read.
    private let externalInterest = Mutex<[String: Int]>([:])
    /// The ids of the observers of a controller or the defaults (`observesExternalTarget`): only their polls settle
    /// the controllers' reports first (`settleExternalReports`).
    private let externalObservers = Mutex<Set<String>>([])
    /// Hands every change report and notification made so far by the controllers on (set by the service): a poll of
    /// an observer of a controller or the defaults runs it first, a poll of notifications always
    /// (`settleExternalReports`).
    private let externalReportsFlusher = Mutex<(@Sendable () -> Void)?>(nil)
    /// The targets read live whose change report waits on the queue (`externalTargetDidChange`).
    private let liveReadsDue = Mutex<Set<String>>([])
    /// Values captured at commit, by seq and observer id, until the queue processes that record.
    private let captured = Mutex<[Int64: [String: PropertyListValue]]>([:])
    /// Observed key paths read again at commits so far (`capture`).
    private let keyPathReads = Atomic(0)

    /// Starts observing the document's commits; answers go out on `queue`.
    public init(document: Document, queue: DispatchQueue, configuration: Configuration = Configuration()) {
        self.queue = queue
        self.configuration = configuration
        self.store = document.store
        self.toldSeq = { [weak document] in document.map { $0.acknowledgedSeq($0.store.seq) } ?? 0 }
        self.report = document.options.report
        let seq = document.store.seq
        // Seeding is the store's initial state, not a change (nobody observes it): on a store this run seeded and
        // nothing changed since, the history covers every `since` from 0. Otherwise it starts where the run did.
        let start = document.storage.seededSeq == seq ? 0 : seq
        history = ChangeHistory(
            capacity: configuration.historyCapacity, maxBytes: configuration.historyBytes, startingAt: start,
            tracksFilterKeys: true)
        processedSeq = seq
        publishedStatistics = Mutex((0, 0, 0, 0, seq, 0))
        notificationCenter = NotificationCenter(
            capacity: configuration.historyCapacity,
            directory: document.storage.directory)
        queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(self))
        let receptionist = Receptionist(queue: queue) { [weak self] items in self?.receive(items) }
        self.receptionist = receptionist
        document.addCommitObserver(receptionist.observe)
        document.addCommitCapture { [weak self] record, view in self?.capture(record, view) }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 0.1, repeating: 0.1, leeway: .milliseconds(20))
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.resume()
        self.timer = timer
    }

    deinit {
        timer?.cancel()
    }

    // MARK: Long-poll

    /// Answers `request` now if there is something to answer (or its timeout is 0), else when there is, or when the
    /// timeout passes (with an empty list and the current `last`). `deliver` is called exactly once, on the queue.
    ///
    /// `isAbandoned` tells whether the client has gone meanwhile: such waiters are answered (so that their
    /// connection is let go) every `abandonedSweepInterval` seconds, and at once when the waiters are at their limit,
    /// so that clients who left hold no place.
    public func poll(
        _ request: PollRequest, isAbandoned: (@Sendable () -> Bool)? = nil,
        deliver: @escaping @Sendable (PollAnswer) -> Void
    ) {
        // A seq some answer may already have told the client (a write's, a no-op's): its records are durable and on
        // their way to the queue. A poll answered before they are processed would tell a lower `last`. So may
        // `since` itself, when committed: an ETag is the seq of a change that may not be durable yet (`batch`).
        var told = request
        if case .notifications = request.source {
        } else {
            told.notBefore = max(request.notBefore, toldSeq(), min(request.since ?? 0, store.seq))
        }
        settleExternalReports(for: request.source)
        queue.async { [self, told] in
            // An `asap` notification queued before the poll is due to it as a posted one is (it was answered 202).
            if case .notifications = told.source, asapFlushScheduled {
                pollsAfterAsapFlush.append { [self] in startPoll(told, isAbandoned: isAbandoned, deliver: deliver) }
            } else {
                startPoll(told, isAbandoned: isAbandoned, deliver: deliver)
            }
        }
    }

    /// On the queue: `poll`'s work once the request reaches the queue.
    private func startPoll(
        _ told: PollRequest, isAbandoned: (@Sendable () -> Bool)?, deliver: @escaping @Sendable (PollAnswer) -> Void
    ) {
        var request = told
        // Changes to controllers and the defaults reported before the poll (`settleExternalReports`) whose seqs
        // are not processed yet: due to this poll as any change it could have been told about is.
        if case .observer(let id) = request.source, observers[id]?.target.isExternal == true,
            let pending = pendingExternal.keys.max()
        {
            request.notBefore = max(request.notBefore, pending)
        }
        let since = request.since ?? currentSeq(of: request.source)
        // An observer's `initial` change whose record is not processed yet (with `batch`, not yet flushed) is
        // waited for, up to a second, even by a poll that would answer at once: it is due from `since`; so are
        // the records of a seq the client may have been told (`notBefore`).
        var timeout = request.timeout
        if awaitsInitial(request.source, since: since) { timeout = max(timeout, 1) }
        let early = request.notBefore > processedSeq
        if early { timeout = max(timeout, 1) }
        let force = timeout <= 0
        if !early,
            let answer = force ? answer(request.source, since: since, force: true) : sharedAnswer(request, since)
        {
            deliver(answer)
            return
        }
        if isFull { releaseAbandonedWaitersWhenFull() }
        guard !isFull else {
            deliver(.tooManyWaiters(retryAfter: 1))
            return
        }
        nextWaiterID += 1
        if case .observer(let id) = request.source { observers[id]?.activeWaiters += 1 }
        waiters[nextWaiterID] = Waiter(
            request: request, since: since, deadline: Self.now() + timeout, deliver: deliver,
            isAbandoned: isAbandoned, answersWhenDue: request.timeout <= 0)
    }

    /// Whether an observer's `initial` change, due from `since`, waits for its record to be processed.
    private func awaitsInitial(_ source: PollRequest.Source, since: Int64) -> Bool {
        guard case .observer(let id) = source, let initialSeq = observers[id]?.initialSeq else { return false }
        return initialSeq > processedSeq && since < initialSeq
    }

    /// Posts the queued `asap` notifications, then starts the polls that waited for them.
    private func flushAsap() {
        asapFlushScheduled = false
        flush(\.asap)
        let polls = pollsAfterAsapFlush
        pollsAfterAsapFlush = []
        for poll in polls { poll() }
    }

    /// Answers every waiting client at once (with what there is, usually nothing) and ends every event stream:
    /// before the server stops. Callable from any thread, the queue included. Queued notifications (`asap`,
    /// `whenIdle`) are posted first: their posts were answered `202`.
    public func answerAllWaiters() {
        onQueue {
            flushAsap()
            flush(\.idle)
            for id in waiters.keys.sorted() { finish(waiter: id, force: true) }
            for id in subscribers.keys.sorted() { endSubscription(id) }
        }
    }

    /// Streams `request`'s changes (or notifications) after its `since` as they arrive, until `send` returns false
    /// or the stream is ended; returns an id for `unsubscribe`. `close` is called when the center ends the stream.
    /// `isAbandoned` is looked at as a waiter's is, so that a client that left between events (and heartbeats) holds
    /// no place.
    public func subscribe(
        _ request: PollRequest, isAbandoned: (@Sendable () -> Bool)? = nil,
        send: @escaping @Sendable (_ events: [StreamEvent], _ whenSent: (@Sendable () -> Void)?) -> Bool,
        close: @escaping @Sendable () -> Void
    ) -> Int {
        onQueue {
            nextWaiterID += 1
            let id = nextWaiterID
            guard waiters.count + subscribers.count < configuration.maxWaiters else {
                _ = send(
                    [.error(["error": ["code": "too-many-waiters", "message": "Too many clients are waiting."]])], nil)
                close()
                return id
            }
            if case .observer(let observerID) = request.source { observers[observerID]?.activeWaiters += 1 }
            let since = request.since ?? currentSeq(of: request.source)
            subscribers[id] = Subscriber(
                source: request.source, since: since, toldID: since, lastSent: Self.now(), send: send, close: close,
                isAbandoned: isAbandoned)
            push(to: id)
            return id
        }
    }

    /// Ends an event stream (the client went away); asynchronous, so any thread may call it.
    public func unsubscribe(_ id: Int) {
        queue.async { [self] in endSubscription(id) }
    }

    private func endSubscription(_ id: Int) {
        guard let subscriber = subscribers.removeValue(forKey: id) else { return }
        if case .observer(let observerID) = subscriber.source { release(observerID) }
        subscriber.close()
    }

    /// How many changes (or notifications) one push sends at most, more when one seq has more: a stream that starts
    /// far back (`Last-Event-ID`) is sent its backlog page by page as the client reads it, not all at once (which
    /// held the whole history in the stream's buffer, per stream, rendered while its request waited).
    public static let streamPage = 1_000

    /// A page ends (at the end of a seq) once its items pass this many bytes: 1,000 large values would otherwise be
    /// one write of tens of megabytes, held for the client however slowly it reads.
    public static let streamPageBytes = 1 << 20

    /// The first `limit` of `items` (seq order), extended to the end of the last one's seq (a seq is never split).
    static func page<Item>(_ items: [Item], limit: Int, seq: (Item) -> Int64) -> ArraySlice<Item> {
        guard items.count > limit, limit > 0 else { return items[...] }
        var end = limit
        while end < items.count, seq(items[end]) == seq(items[end - 1]) { end += 1 }
        return items[..<end]
    }

    /// Sends a subscriber what arrived since its cursor, a page at a time: when more is retained, the next page
    /// follows once the client has read this one (or with the next change).
    private func push(to id: Int) {
        guard var subscriber = subscribers[id], !subscriber.pageInFlight else { return }
        var events: [StreamEvent]
        var morePending = false
        switch answer(subscriber.source, since: subscriber.since, force: false, limit: Self.streamPage) {
        case nil:
            // Nothing for it up to now: its cursor moves on all the same, as a long-poll's `last` does, so that a
            // filtered stream that keeps up never falls behind the retained history.
            subscribers[id]?.since = max(subscriber.since, currentSeq(of: subscriber.source))
            return
        case .items(let json, _)?:
            let isNotification = if case .notifications = subscriber.source { true } else { false }
            let items = (isNotification ? json["notifications"] : json["changes"])?.arrayValue ?? []
            let seqs = items.map { $0["seq"]?.integerValue ?? 0 }
            var ordinal = 0
            var bytes = 0
            events = []
            for index in items.indices {
                // Past `streamPageBytes`, the page ends with the seq before (never within a seq).
                if bytes > Self.streamPageBytes, seqs[index] != seqs[index - 1] { break }
                ordinal = index > 0 && seqs[index - 1] == seqs[index] ? ordinal + 1 : 0
                let json = rendered(
                    items[index], RenderedItem(source: subscriber.source, seq: seqs[index], ordinal: ordinal))
                bytes += json.count
                let last = index == items.count - 1 || seqs[index + 1] != seqs[index]
                events.append(.item(id: last ? seqs[index] : nil, json: json))
            }
            let sent = events.count < items.count ? seqs[events.count - 1] : nil
            let last = sent ?? json["last"]?.integerValue ?? subscriber.since
            subscriber.since = last
            if let told = seqs[..<events.count].last { subscriber.toldID = told }
            // A page that ends before the current seq: more is retained than this push sent.
            morePending = last < currentSeq(of: subscriber.source)
        case .compacted(let oldest, let current)?:
            events = [
                .error([
                    "error": [
                        "code": "history-compacted", "message": "The stream fell behind the retained history.",
                        "oldest": .integer(oldest), "current": .integer(current),
                    ]
                ])
            ]
        case .noSuchObserver(let observerID)?:
            events = [Self.noSuchObserverEvent(observerID)]
        case .tooManyWaiters?:
            return
        }
        subscriber.lastSent = Self.now()
        subscribers[id] = subscriber
        var whenSent: (@Sendable () -> Void)?
        if morePending {
            subscribers[id]?.pageInFlight = true
            whenSent = { [weak self] in
                guard let self else { return }
                queue.async {
                    self.subscribers[id]?.pageInFlight = false
                    self.push(to: id)
                }
            }
        }
        let alive = subscriber.send(events, whenSent)
        if !alive || events.contains(where: { if case .error = $0 { true } else { false } }) { endSubscription(id) }
    }

    /// The event that ends a stream of an observer deleted or expired.
    private static func noSuchObserverEvent(_ id: String) -> StreamEvent {
        .error(["error": ["code": "no-such-observer", "message": .string("No observer \(id).")]])
    }

    private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    /// Runs `body` on the queue and waits for it; runs it directly when already there.
    private func onQueue<T>(_ body: () throws -> T) rethrows -> T {
        if DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self) { return try body() }
        return try queue.sync(execute: body)
    }

    /// Counts for `/metrics`: waiting long-polls, event streams, observers, what their histories cost together
    /// (`keepObserverHistoriesInBudget`), the seq last processed, and how many times commits read an observed key path
    /// again (`capture`).
    public typealias Statistics = (
        waiters: Int, streams: Int, observers: Int, observerHistoryBytes: Int, processedSeq: Int64, keyPathReads: Int
    )

    /// The counts as they are now (waits for the queue).
    public var statistics: Statistics {
        onQueue { currentStatistics() }
    }

    /// The counts as the queue's last tick (every 0.1 s) left them, without waiting for the queue, which a commit of
    /// many changes keeps busy for seconds (`/metrics`, read by monitors exactly then).
    public var recentStatistics: Statistics {
        var recent = publishedStatistics.withLock { $0 }
        recent.keyPathReads = keyPathReads.load(ordering: .relaxed)
        return recent
    }

    private func currentStatistics() -> Statistics {
        let historyBytes = observers.values.reduce(0) { $0 + $1.history.memoryBytes }
        return (
            waiters.count, subscribers.count, observers.count, historyBytes, processedSeq,
            keyPathReads.load(ordering: .relaxed)
        )
    }

    private func currentSeq(of source: PollRequest.Source) -> Int64 {
        if case .notifications = source { return notificationCenter.lastSeq }
        return processedSeq
    }

    /// The answer for a source after `since`, or nil when there is nothing yet and `force` is false.
    ///
    /// A `since` beyond every seq handed out (one from before a restart: notifications start again at 0, and a
    /// crash with `--fsync never` can lose the last changes) is 410 like one older than the history: never a
    /// silent gap. With a `limit` (event streams), at most that many items (`page`), and `last` is then the seq of
    /// the last one sent when more remain.
    private func answer(
        _ source: PollRequest.Source, since: Int64, force: Bool, limit: Int = .max
    ) -> PollAnswer? {
        if let refusal = refusal(source, since: since) { return refusal }
        switch source {
        case .store(let entity):
            let all = history.changes(after: since) { change in
                entity == nil || change.entity?.elementsEqual(entity!) == true
            }
            if all.isEmpty && !force { return nil }
            let changes = Self.page(all, limit: limit, seq: \.seq)
            let last = changes.count < all.count ? changes.last!.seq : processedSeq
            return .items(
                PollItems(["changes": .array(changes.map { $0.json() }), "last": .integer(last)]), seq: processedSeq)
        case .observer(let id):
            guard let observer = observers[id] else { return .noSuchObserver(id) }
            observer.lastActivity = Self.now()
            if !observer.hasChanges(after: since) && !force { return nil }
            let (changes, lastSent) = observer.answer(after: since, limit: limit)
            return .items(
                PollItems(["changes": .array(changes), "last": .integer(lastSent ?? processedSeq)]), seq: processedSeq)
        case .notifications(let name, let object):
            let center = notificationCenter
            let all = center.notifications(after: since, name: name, object: object)
            if all.isEmpty && !force { return nil }
            let found = Self.page(all, limit: limit, seq: \.seq)
            let last = found.count < all.count ? found.last!.seq : center.lastSeq
            return .items(
                PollItems(["notifications": .array(found.map(\.json)), "last": .integer(last)]), seq: processedSeq)
        }
    }

    /// Why a poll or stream from `since` cannot be answered at all: the observer is gone, or `since` is outside
    /// what is retained (older than the history, or beyond every seq handed out); nil when it can. A filter by
    /// entity or notification name is refused only when the history dropped an item it wanted: so a filtered
    /// reader that lags while others' changes fill the history (a burst in one turn of the queue) is not 410.
    private func refusal(_ source: PollRequest.Source, since: Int64) -> PollAnswer? {
        switch source {
        case .store(let entity):
            guard history.covers(since: since, filterKey: entity), since <= store.seq else {
                return .compacted(oldest: history.compactedThrough, current: processedSeq)
            }
        case .observer(let id):
            guard let observer = observers[id] else { return .noSuchObserver(id) }
            if since > store.seq || !observer.covers(since: since) {
                return .compacted(oldest: observer.history.compactedThrough, current: processedSeq)
            }
        case .notifications(let name, _):
            let center = notificationCenter
            guard center.history.covers(since: since, filterKey: name), since <= center.lastSeq else {
                return .compacted(oldest: center.history.compactedThrough, current: center.lastSeq)
            }
        }
        return nil
    }

    /// `refusal` for a request about to become an event stream, so that it can be answered with a status (410,
    /// 404) instead of a stream that ends at once: a browser's EventSource reconnects after such a stream, forever.
    /// It is a use of the observer, as a poll is: the observer cannot expire before the stream starts.
    public func refusal(of request: PollRequest) -> PollAnswer? {
        onQueue {
            if let refusal = refusal(request.source, since: request.since ?? currentSeq(of: request.source)) {
                return refusal
            }
            if case .observer(let id) = request.source { observers[id]?.lastActivity = Self.now() }
            if isFull { releaseAbandonedWaitersWhenFull() }
            return isFull ? .tooManyWaiters(retryAfter: 1) : nil
        }
    }

    /// Whether long-polls and event streams together are at `maxWaiters`.
    private var isFull: Bool {
        waiters.count + subscribers.count >= configuration.maxWaiters
    }

    /// At `maxWaiters`, frees the places of clients that have gone before refusing a new one, at most every 0.1 s:
    /// a sweep looks at every waiting socket (22 ms at 16,000), and a burst of refusals must not each pay for one.
    private func releaseAbandonedWaitersWhenFull() {
        if Self.now() - lastAbandonedSweep >= 0.1 { releaseAbandonedWaiters() }
    }

    /// Answers the waiters and ends the event streams whose clients have gone, so that their connections are closed
    /// and their places freed.
    private func releaseAbandonedWaiters() {
        lastAbandonedSweep = Self.now()
        for (id, waiter) in waiters where waiter.isAbandoned?() == true { finish(waiter: id, force: true) }
        for (id, subscriber) in subscribers where subscriber.isAbandoned?() == true { endSubscription(id) }
    }

    private func finish(waiter id: Int, force: Bool) {
        guard let waiter = waiters[id], let answer = answer(waiter.request.source, since: waiter.since, force: force)
        else { return }
        deliver(answer, to: id, waiter)
    }

    private func deliver(_ answer: PollAnswer, to id: Int, _ waiter: Waiter) {
        waiters[id] = nil
        if case .observer(let observerID) = waiter.request.source { release(observerID) }
        waiter.deliver(answer)
    }

    /// A poll of the observer waits before it is carried out (its turn behind the controllers' work): the observer is
    /// in use meanwhile, as while a poll waits for changes, so it does not expire however long that takes. Balanced
    /// by `pollStoppedWaiting`, called in the same order.
    public func pollWillWait(observer id: String) {
        queue.async { self.observers[id]?.activeWaiters += 1 }
    }

    /// The poll `pollWillWait` announced had its turn (it was carried out, or not): the observer's idle time counts
    /// from now.
    public func pollStoppedWaiting(observer id: String) {
        queue.async { self.release(id) }
    }

    /// A waiter or a stream of the observer ended: the observer was in use until now, so its idle time (for
    /// `observerTTL`) starts now, not when it last had something to send.
    private func release(_ observerID: String) {
        guard let observer = observers[observerID] else { return }
        observer.activeWaiters -= 1
        observer.lastActivity = Self.now()
    }

    /// Answers the waiters that now have something: one pass per turn of the queue, and one answer (built and
    /// encoded once) shared by every waiter of the same source and `since`.
    private func wakeWaiters() {
        forgetAnswers()
        for (id, waiter) in waiters where waiter.request.notBefore <= processedSeq {
            if waiter.answersWhenDue {
                if !awaitsInitial(waiter.request.source, since: waiter.since) { finish(waiter: id, force: true) }
            } else if let answer = sharedAnswer(waiter.request, waiter.since) {
                deliver(answer, to: id, waiter)
            } else {
                // Nothing for it up to now (all of it was looked through): it waits from here, as an event stream's
                // cursor moves on, so that a filtered poll (`entity=`, `name=`) never falls behind the history while
                // changes it does not want fill it.
                waiters[id]?.since = max(waiter.since, currentSeq(of: waiter.request.source))
            }
        }
        for id in subscribers.keys.sorted() { push(to: id) }
    }

    /// `answer(source, since, force: false)`, from `answerCache` when it holds it.
    private func sharedAnswer(_ request: PollRequest, _ since: Int64) -> PollAnswer? {
        let key = AnswerKey(source: request.source, since: since)
        if let cached = answerCache[key] {
            // What `answer` would have done besides answering: the observer is in use.
            if case .observer(let id) = request.source { observers[id]?.lastActivity = Self.now() }
            return cached
        }
        let answer = answer(request.source, since: since, force: false)
        let size = if case .items(let items, _)? = answer { items.bytes.count } else { 0 }
        // Many distinct `since`s.
        if answerCache.count >= 4096 || answerCacheBytes + size > Self.answerCacheMaxBytes { forgetAnswers() }
        answerCache[key] = answer
        answerCacheBytes += size
        return answer
    }

    private func forgetAnswers() {
        answerCache.removeAll(keepingCapacity: true)
        answerCacheBytes = 0
    }

    /// The encoded bytes of the answers kept for polls that ask the same (`answerCache`).
    var cachedAnswerBytes: Int { onQueue { answerCacheBytes } }

    /// What a shared answer is for (a struct, not a joined string: names and objects may hold any character).
    private struct AnswerKey: Hashable {
        var source: PollRequest.Source
        var since: Int64
    }

    private func tick() {
        let now = Self.now()
        for (id, waiter) in waiters where waiter.deadline <= now { finish(waiter: id, force: true) }
        if now - lastAbandonedSweep >= Self.abandonedSweepInterval { releaseAbandonedWaiters() }
        for (id, subscriber) in subscribers where now - subscriber.lastSent >= configuration.heartbeatInterval {
            subscribers[id]?.lastSent = now
            let moved = subscriber.since > subscriber.toldID
            subscribers[id]?.toldID = subscriber.since
            if !subscriber.send([.heartbeat(lastEventID: moved ? subscriber.since : nil)], nil) { endSubscription(id) }
        }
        for (id, observer) in observers
        where observer.activeWaiters == 0 && now - observer.lastActivity > configuration.observerTTL {
            forget(observer: id)
        }
        keepObserverHistoriesInBudget()
        let statistics = currentStatistics()
        publishedStatistics.withLock { $0 = statistics }
    }

    /// An observer keeps as many seqs of changes as the store's history (`--history`; with `prior`, whose
    /// notifications are items of their own, twice as many items), and at most `historyBytes / 16` of them.
    private func observerHistoryCapacity(_ options: KeyValueObserver.Options) -> Int {
        options.contains(.prior)
            ? Self.saturating(configuration.historyCapacity, times: 2) : configuration.historyCapacity
    }

    /// `value × factor`, or `Int.max` where that overflows (the configured sizes may be as large as `Int` allows).
    private static func saturating(_ value: Int, times factor: Int) -> Int {
        let product = value.multipliedReportingOverflow(by: factor)
        return product.overflow ? .max : product.partialValue
    }

    /// When the observers' histories were last held to their budget (`keepObserverHistoriesInBudget`).
    private var lastBudgetCheck = 0.0

    /// Observers' histories together cost about `4 × historyBytes` at most (`SequenceHistory.memoryBytes`: values and
    /// ring slots): beyond, the largest give up their oldest seqs (a poll from before them is answered 410, never
    /// with a gap) until they fit. Checked at every tick and, while commits keep the queue busy, after their
    /// batches every 50 ms.
    private func keepObserverHistoriesInBudget() {
        lastBudgetCheck = Self.now()
        let budget = Self.saturating(configuration.historyBytes, times: 4)
        var total = 0
        for observer in observers.values { total += observer.history.memoryBytes }
        guard total > budget else { return }
        for observer in observers.values.sorted(by: { $0.history.memoryBytes > $1.history.memoryBytes })
        where total > budget {
            let before = observer.history.memoryBytes
            observer.history.shrink(toBytes: max(before / 2, before - (total - budget)))
            total -= before - observer.history.memoryBytes
        }
    }

    static func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    // MARK: Commits

    /// What the receptionist bounced, in order: runs of records are received together, work between them.
    private func receive(_ items: [Receptionist.Item]) {
        var records: [ChangeRecord] = []
        for item in items {
            switch item {
            case .record(let record): records.append(record)
            case .work(let work):
                if !records.isEmpty { receive(records.takeAll()) }
                work()
            }
        }
        if !records.isEmpty { receive(records) }
    }

    /// Committed records, on the queue, in seq order; waiters are woken once for the whole batch.
    private func receive(_ records: [ChangeRecord]) {
        for record in records where record.seq > processedSeq {
            processedSeq = record.seq
            let (changes, replacements) = FeedChange.changes(of: record, model: store.model)
            for change in changes { history.append(change) }
            updateObservers(with: record)
            if let external = pendingExternal.removeValue(forKey: record.seq) {
                for (observerID, change) in external { observers[observerID]?.emit(change) }
            }
            if let (observerID, initial) = pendingInitial.removeValue(forKey: record.seq) {
                observers[observerID]?.history.append(initial)
            }
            // A commit that only took a seq changed no object.
            guard !record.changes.isEmpty else { continue }
            var (inserted, updated, deleted) = (record.inserted, record.updated, record.deleted)
            // The objects a whole-graph replacement added, changed or removed (the record lists only what the
            // transaction did after it).
            for replacement in replacements {
                inserted = Self.merged(replacement.inserted, inserted)
                updated = Self.merged(replacement.updated, updated)
                deleted = Self.merged(replacement.deleted, deleted)
            }
            postOwn(
                name: "ObjectsDidChange", object: .null,
                info: .objectsDidChange(inserted: inserted, updated: updated, deleted: deleted))
        }
        wakeWaiters()
        if Self.now() - lastBudgetCheck >= 0.05 { keepObserverHistoriesInBudget() }
    }

    /// `first`, then the ids of `second` not in it.
    private static func merged(_ first: [ObjectID], _ second: [ObjectID]) -> [ObjectID] {
        guard !second.isEmpty else { return first }
        var seen = Set(first)
        return first + second.filter { seen.insert($0).inserted }
    }

    /// Under the store's lock, right after a commit: the values of the watched key paths the commit may have changed,
    /// in that state (the others keep the value they had).
    private func capture(_ record: ChangeRecord, _ view: ReadView) {
        let list = watched.withLock { $0 }
        guard !list.isEmpty else { return }
        let changed = view.changedObjects(in: record)
        var values: [String: PropertyListValue] = [:]
        var reads: [String: ObjectReads?] = [:]
        let objectCount = view.objectCount
        // The observer of a stored key applies the record's changes of it to the value it keeps (a to-many of
        // 100,000 is not read again for one insertion); it reads it again only where the record has it re-read.
        var rereadObjects: Set<ObjectID> = []
        var resets = false
        for change in record.changes where !change.isKeyChange {
            if let target = change.target { rereadObjects.insert(target) } else { resets = true }
        }
        // Observers of one key path of one object share its read (and its value's memory).
        var shared: [WatchedKeyPath.Read: (value: PropertyListValue, reads: ObjectReads?)] = [:]
        for entry in list where entry.reads?.mayChange(with: changed) ?? true {
            if entry.storedKey && !resets && !rereadObjects.contains(entry.object) { continue }
            let key = WatchedKeyPath.Read(object: entry.object, keyPath: entry.keyPath)
            let found: (value: PropertyListValue, reads: ObjectReads?)
            if let known = shared[key] {
                found = known
            } else {
                var noted: ObjectReads?
                let read = try? Self.boundedRead(objectCount: objectCount) {
                    try view.value(forKeyPath: entry.keyPath, of: entry.object, noting: &noted).json
                }
                found = (read?.value ?? .null, read == nil ? nil : noted)
                shared[key] = found
            }
            values[entry.observerID] = found.value
            // `updateValue`: a failed read's nil is kept as a value (the subscript would drop the key instead).
            reads.updateValue(found.reads, forKey: entry.observerID)
        }
        guard !values.isEmpty else { return }
        keyPathReads.add(shared.count, ordering: .relaxed)
        captured.withLock { $0[record.seq] = values }
        // Commits and registrations, which set `reads`, hold the store's lock, as this does: none comes in between.
        watched.withLock { list in
            for index in list.indices {
                if let noted = reads[list[index].observerID] { list[index].reads = noted }
            }
        }
    }

    private func forget(observer id: String) {
        let target = observers.removeValue(forKey: id)?.target
        if let target, target.isExternal {
            changeInterest(in: target.description, by: -1)
            externalObservers.withLock { _ = $0.remove(id) }
        }
        forgetAnswers()
        watched.withLock { $0.removeAll { $0.observerID == id } }
        externalWeights[id] = nil
    }

    private func updateObservers(with record: ChangeRecord) {
        let capturedValues: [String: PropertyListValue] =
            captured.withLock { captured -> [String: PropertyListValue]? in
                guard !captured.isEmpty else { return nil }
                defer { captured = captured.filter { $0.key > record.seq } }
                return captured[record.seq]
            } ?? [:]
        guard !observers.isEmpty else { return }
        var reread: [KeyValueObserver] = []
        for observer in observers.values where record.seq > observer.since {
            guard case .object(let id) = observer.target else { continue }
            guard observer.storedKey else {
                reread.append(observer)
                continue
            }
            var rereads = false
            var reported = false
            for change in record.changes where change.target == id || change.kind == .reset {
                switch change.kind {
                case .setting, .insertion, .removal, .replacement:
                    guard change.key == observer.keyPath else { continue }
                    reported = true
                    observer.emit(
                        FeedChange(
                            seq: record.seq, target: id.description, keyPath: observer.keyPath, kind: change.kind,
                            old: change.old, new: change.new, indexes: change.indexes))
                case .creation, .deletion, .reset:
                    rereads = true
                }
            }
            // The value a later re-read (a whole-graph replacement: revertToSaved, PUT /store) is compared with. A
            // deletion or creation that the record already reported for this key (a nullified relationship) is not
            // reported again.
            if rereads && !reported {
                reread.append(observer)
            } else if let value = capturedValues[observer.id] {
                observer.lastValue = storedValue(value, of: observer)
            } else {
                for change in record.changes where change.target == id && change.key == observer.keyPath {
                    observer.keepValue(after: change)
                }
            }
        }
        guard !reread.isEmpty else { return }
        let values = reread.map { storedValue(capturedValues[$0.id] ?? $0.lastValue, of: $0) }
        for (observer, value) in zip(reread, values) where !value.isIdentical(to: observer.lastValue) {
            observer.emit(
                FeedChange(
                    seq: record.seq, target: observer.target.description, keyPath: observer.keyPath, kind: .setting,
                    old: observer.lastValue, new: value))
            observer.lastValue = value
        }
    }

    /// A stored key's value as the feed has it: a to-many of an object that is not there (deleted, or not yet
    /// re-created) is empty, not null.
    private func storedValue(_ value: PropertyListValue, of observer: KeyValueObserver) -> PropertyListValue {
        guard value.isNull, observer.storedKey, case .object(let id) = observer.target,
            store.model.entity(named: id.entity)?.relationship(named: observer.keyPath)?.isToMany == true
        else { return value }
        return []
    }

    // MARK: Observers

    /// Adds a new observer; its `initial` change, if any, waits for the record of its seq. On the queue.
    private func install(_ observer: KeyValueObserver) {
        observers[observer.id] = observer
        if observer.target.isExternal {
            changeInterest(in: observer.target.description, by: 1)
            externalObservers.withLock { _ = $0.insert(observer.id) }
        }
        if let initial = observer.initialChange { pendingInitial[initial.seq] = (observer.id, initial) }
    }

    /// 503 `too-many-observers` (with `limit`) when `maxObservers` exist; on the queue.
    private func checkObserverCapacity() throws(ObjectGraphError) {
        guard observers.count >= configuration.maxObservers else { return }
        throw ObjectGraphError(
            status: 503, code: "too-many-observers",
            message: "\(configuration.maxObservers) observers exist already; delete one (DELETE /observers/{id}) "
                + "or let unpolled ones expire.",
            fields: ["limit": .integer(Int64(configuration.maxObservers))])
    }

    /// Registers a KVO observer (`POST /observers`); returns its id and the seq it starts after.
    ///
    /// Errors: 400 `bad-request` for a malformed target or an unknown option; 404 `no-such-object`,
    /// `undefined-key` for a key path the target does not have.
    public func addObserver(target: String, keyPath: String, options: [String]) throws -> (id: String, since: Int64) {
        var parsedOptions: KeyValueObserver.Options = []
        for option in options {
            guard let parsed = KeyValueObserver.Options.named.first(where: { $0.name == option })?.option else {
                // Well-formed, but no option (422, naming the key, as an unknown posting style is).
                throw ObjectGraphError.typeMismatch(
                    "options", of: nil, "Unknown option \"\(option)\"; options are new, old, initial and prior.")
            }
            parsedOptions.insert(parsed)
        }
        if target.hasPrefix("controllers/") || target == "defaults" {
            return try addExternalObserver(target: target, keyPath: keyPath, options: parsedOptions)
        }
        guard let object = ObjectID(reference: target) else {
            // Well-formed, but no target (422, naming the key, as a target that is no string is).
            throw ObjectGraphError.typeMismatch(
                "target", of: nil,
                "The target must be \"Entity/id\", \"controllers/NAME\" or \"defaults\", not \"\(target)\".")
        }
        let entity = store.model.entity(named: object.entity)
        let storedKey = entity?.attribute(named: keyPath) != nil || entity?.relationship(named: keyPath) != nil
        return try onQueue { () throws -> (id: String, since: Int64) in
            try checkObserverCapacity()
            // Read on the queue: every record up to the value's seq is either processed or ignored by `since`.
            nextObserverID += 1
            let id = "o\(nextObserverID)-\(runToken)"
            // Read and start watching under the store's lock, so that no commit falls between the two. With
            // `initial`, in the commit that gives the initial change its seq (it starts right after `since`).
            let read = { [self] (view: ReadView) throws -> PropertyListValue in
                var reads: ObjectReads?
                let (value, weight) = try Self.boundedRead(objectCount: view.objectCount) {
                    try view.value(forKeyPath: keyPath, of: object, noting: &reads).json
                }
                let entry = WatchedKeyPath(
                    observerID: id, object: object, keyPath: keyPath, weight: weight, reads: reads,
                    storedKey: storedKey)
                try watched.withLock { (list: inout [WatchedKeyPath]) throws(ObjectGraphError) in
                    try checkObservedWeight(adding: entry.weight, objects: list, objectCount: view.objectCount)
                    list.append(entry)
                }
                return value
            }
            let value: PropertyListValue
            let since: Int64
            var initialSeq: Int64?
            if parsedOptions.contains(.initial) {
                do {
                    let (seq, read) = try store.advanceSeq(reading: read)
                    (value, since, initialSeq) = (read, seq - 1, seq)
                } catch {
                    // The read is done in the commit, which failed (the journal refused it): nothing is watched.
                    watched.withLock { $0.removeAll { $0.observerID == id } }
                    throw error
                }
            } else {
                let (read, seq) = try store.read { view in (try read(view), view.seq) }
                (value, since) = (read, max(seq, processedSeq))
            }
            install(
                KeyValueObserver(
                    id: id, target: .object(object), keyPath: keyPath, options: parsedOptions, since: since,
                    initialSeq: initialSeq, storedKey: storedKey, value: value,
                    capacity: observerHistoryCapacity(parsedOptions), maxBytes: configuration.historyBytes / 16,
                    now: Self.now()))
            return (id, since)
        }
    }

    private func changeInterest(in target: String, by delta: Int) {
        externalInterest.withLock { interest in
            let count = interest[target, default: 0] + delta
            interest[target] = count > 0 ? count : nil
        }
    }

    /// A controller's (`controllers/NAME`) or the user defaults' (`defaults`) state, to read key paths of.
    public struct ExternalState: Sendable {
        /// Orders the states of one target (larger: later), when they are snapshots; nil when `read` reads the live
        /// state.
        public var generation: Int64?
        public var read: @Sendable (_ keyPath: String) throws -> PropertyListValue

        public init(generation: Int64?, read: @escaping @Sendable (_ keyPath: String) throws -> PropertyListValue) {
            self.generation = generation
            self.read = read
        }
    }

    /// The state of a target now; set once by the layer that owns controllers and defaults, before serving.
    public typealias ExternalReader = @Sendable (_ target: String) -> ExternalState

    private var externalReader: ExternalReader?
    /// Changes of controllers and the defaults waiting for the record of the seq they were given, by that seq.
    private var pendingExternal: [Int64: [(observerID: String, change: FeedChange)]] = [:]
    /// Observers' `initial` changes waiting for the record of their seq.
    private var pendingInitial: [Int64: (observerID: String, change: FeedChange)] = [:]

    public func setExternalReader(_ reader: @escaping ExternalReader) {
        onQueue { externalReader = reader }
    }

    /// Sets what hands the controllers' change reports and notifications made so far on to `externalTargetDidChange`
    /// and `postNow` (they reach them on another queue, after the answer to the request that caused them may have
    /// gone).
    public func setExternalReportsFlusher(_ flush: @escaping @Sendable () -> Void) {
        externalReportsFlusher.withLock { $0 = flush }
    }

    /// Whether observer `id` observes a controller or the defaults: its polls first flush the controllers' reports
    /// (`settleExternalReports`). An object's observer is told none of their changes, whatever seqs they take.
    public func observesExternalTarget(_ id: String) -> Bool {
        externalObservers.withLock { $0.contains(id) }
    }

    /// Before a poll: the changes to controllers that any answer could have told the client about by now (a
    /// selection's `PUT`, a commit that rearranged a controller) take their seqs before the poll is looked at, so
    /// that the poll waits for them (`pendingExternal`) instead of answering without them; the notifications of
    /// such requests (`ControllerDidCommitEditing` after `commitEditing`) are posted before it is.
    private func settleExternalReports(for source: PollRequest.Source) {
        switch source {
        case .observer(let id): guard observesExternalTarget(id) else { return }
        case .notifications: break
        case .store: return
        }
        externalReportsFlusher.withLock { $0 }?()
    }

    /// Tells the center that a controller's or the defaults' state may have changed: observers of that target
    /// re-read their key paths and report a `setting` when the value differs.
    ///
    /// With `state`, a snapshot the change left (reported in the order of the changes), observers read that, so
    /// that each change's values are reported even when the queue lags behind several; an observer registered from a
    /// later snapshot skips it. Without, they read the target as it is when the queue gets to the report.
    ///
    /// Such a change (a selection) is no commit of the graph, but clients pass seqs back as `since` and must see
    /// every change once and in order (API.md §7): the changes found together get a seq of their own, a commit of
    /// no changes (`ObjectStore.advanceSeq()`, journaled so that seqs never go back after a restart), and reach
    /// the observers when that record is processed here, in seq order with the graph's changes.
    ///
    /// A target read live is read once for all the reports that come before the queue gets to it (a controller that
    /// reports at every commit of a fast writer is not read once per commit while the queue lags: each read of a large
    /// tree's `arrangedObjects` takes milliseconds, and the values found would wait in `pendingExternal`); its
    /// observers of one key path share one read.
    public func externalTargetDidChange(_ target: String, state: ExternalState? = nil) {
        guard externalInterest.withLock({ $0[target] != nil }) else { return }
        if state == nil {
            guard liveReadsDue.withLock({ $0.insert(target).inserted }) else { return }
        }
        queue.async { [self] in
            // Before the read: a report after this point may not be covered by it, so it asks for a read of its own.
            if state == nil { liveReadsDue.withLock { _ = $0.remove(target) } }
            let listening = observers.values.filter { observer in
                guard observer.target.description == target else { return false }
                guard let generation = state?.generation, let seen = observer.externalGeneration else { return true }
                return generation > seen
            }
            guard let externalReader, !listening.isEmpty else { return }
            let state = state ?? externalReader(target)
            var found: [(observer: KeyValueObserver, value: PropertyListValue)] = []
            var values: [String: PropertyListValue] = [:]
            let objectCount = store.read { $0.objectCount }
            for observer in listening {
                let value: PropertyListValue
                if let known = values[observer.keyPath] {
                    value = known
                } else {
                    let read = try? Self.boundedRead(objectCount: objectCount) { try state.read(observer.keyPath) }
                    value = read?.value ?? .null
                    values[observer.keyPath] = value
                }
                observer.externalGeneration = state.generation
                if !value.isIdentical(to: observer.lastValue) { found.append((observer, value)) }
            }
            // No seq: the document is closed, and nobody polls any more.
            guard !found.isEmpty, let seq = try? store.advanceSeq() else { return }
            var changes: [(observerID: String, change: FeedChange)] = []
            for (observer, value) in found {
                changes.append(
                    (
                        observer.id,
                        FeedChange(
                            seq: seq, target: target, keyPath: observer.keyPath, kind: .setting,
                            old: observer.lastValue, new: value)
                    ))
                observer.lastValue = value
            }
            pendingExternal[seq] = changes
        }
    }

    private func addExternalObserver(
        target: String, keyPath: String, options: KeyValueObserver.Options
    ) throws -> (id: String, since: Int64) {
        try onQueue { () throws -> (id: String, since: Int64) in
            guard let externalReader else {
                throw ObjectGraphError(status: 404, code: "not-found", message: "\(target) cannot be observed here.")
            }
            try checkObserverCapacity()
            // Interest from before the first read (see `externalInterest`); the installed observer holds its own.
            changeInterest(in: target, by: 1)
            defer { changeInterest(in: target, by: -1) }
            // Bounded as an object's observed key path is (`arrangedObjects.department.employees` fans out too).
            let objectCount = store.read { $0.objectCount }
            let state = externalReader(target)
            let (value, used) = try Self.boundedRead(objectCount: objectCount) { try state.read(keyPath) }
            let weight = max(used, Self.valueCount(value))
            try checkObservedWeight(adding: weight, objects: watched.withLock { $0 }, objectCount: objectCount)
            let parsedTarget: KeyValueObserver.Target =
                target == "defaults" ? .defaults : .controller(String(target.dropFirst("controllers/".count)))
            nextObserverID += 1
            let id = "o\(nextObserverID)-\(runToken)"
            // The state is read on this queue, where its changes are found too (`externalTargetDidChange`).
            let initialSeq = options.contains(.initial) ? try store.advanceSeq() : nil
            externalWeights[id] = weight
            let since = initialSeq.map { $0 - 1 } ?? processedSeq
            let observer = KeyValueObserver(
                id: id, target: parsedTarget, keyPath: keyPath, options: options, since: since,
                initialSeq: initialSeq, storedKey: false, value: value,
                capacity: observerHistoryCapacity(options), maxBytes: configuration.historyBytes / 16,
                now: Self.now())
            observer.externalGeneration = state.generation
            // The read may show a change whose seq comes after `since`: its report, or its seq's record, still
            // waits on the queue. The oldest observer of this key path has been told every change reported so far:
            // this one starts from the same value and the same state, and is told the changes whose records wait,
            // so that such a change is not lost to a client that read the value before registering. (With `initial`
            // its first change carries the value read; with no such observer a change may still be missed: a client
            // registers before it reads, or asks for `initial`.)
            if initialSeq == nil,
                let twin = observers.values.filter({ $0.target == parsedTarget && $0.keyPath == keyPath })
                    .min(by: { $0.since < $1.since })
            {
                observer.lastValue = twin.lastValue
                observer.externalGeneration = twin.externalGeneration
                for (seq, changes) in pendingExternal {
                    for change in changes where change.observerID == twin.id {
                        pendingExternal[seq, default: []].append((id, change.change))
                    }
                }
            }
            install(observer)
            return (id, since)
        }
    }

    /// `GET /observers/{id}` (the `Location` of its creation): `{"id", "target", "keyPath", "options", "since"}` as
    /// it was registered, or nil for an unknown (or expired) observer. Reading it is not polling it: no renewal.
    public func observerDescription(_ id: String) -> PropertyListValue? {
        onQueue {
            guard let observer = observers[id] else { return nil }
            let options = KeyValueObserver.Options.named.filter { observer.options.contains($0.option) }
            return [
                "id": .string(id), "target": .string(observer.target.description), "keyPath": .string(observer.keyPath),
                "options": .array(options.map { .string($0.name) }), "since": .integer(observer.since),
            ]
        }
    }

    /// Stops an observer; its waiting clients get 404. Returns whether it existed.
    public func removeObserver(_ id: String) -> Bool {
        onQueue {
            guard observers[id] != nil else { return false }
            forget(observer: id)
            for (waiterID, waiter) in waiters {
                if case .observer(id) = waiter.request.source {
                    waiters[waiterID] = nil
                    waiter.deliver(.noSuchObserver(id))
                }
            }
            // Its event streams end now (with their error event), not at the next heartbeat; one with a page of its
            // backlog still on the way, whose client may not read for long, too: the error event follows that page.
            for (subscriberID, subscriber) in subscribers {
                guard case .observer(id) = subscriber.source else { continue }
                if subscriber.pageInFlight {
                    _ = subscriber.send([Self.noSuchObserverEvent(id)], nil)
                    endSubscription(subscriberID)
                } else {
                    push(to: subscriberID)
                }
            }
            return true
        }
    }

    // MARK: Notifications

    /// What became of a posted notification.
    public enum PostOutcome: Sendable, Equatable {
        /// Posted now, with its seq.
        case posted(seq: Int64)
        /// Queued (`asap`, `whenIdle`).
        case queued
        /// Coalesced away: a matching notification was queued already.
        case coalesced

        public var seq: Int64? {
            if case .posted(let seq) = self { return seq }
            return nil
        }
    }

    /// Posts a notification (`POST /notifications`): `now` posts it; `asap` and `whenIdle` queue it (or coalesce
    /// it away).
    public func post(
        name: String, object: PropertyListValue, userInfo: PropertyListValue, style: String, coalesce: [String]
    ) throws -> PostOutcome {
        guard let postingStyle = NotificationQueue.PostingStyle(rawValue: style) else {
            throw ObjectGraphError.typeMismatch(
                "postingStyle", of: nil, "postingStyle must be now, asap or whenIdle, not \(style).")
        }
        var coalescing: NotificationQueue.Coalescing = []
        for key in coalesce {
            switch key {
            case "name": coalescing.insert(.name)
            case "sender": coalescing.insert(.sender)
            default:
                throw ObjectGraphError.typeMismatch(
                    "coalesce", of: nil, "coalesce takes \"name\" and \"sender\", not \(key).")
            }
        }
        for (field, value) in [("object", object), ("userInfo", userInfo)] {
            if let reserved = value.reservedKey(allowingReferences: ObjectID.isReference) {
                throw ObjectGraphError.typeMismatch(
                    field, of: nil,
                    "\(field) may not hold a dictionary key \"\(reserved)\" starting with $ (a reference is "
                        + "{\"$ref\": \"Entity/id\"}).")
            }
        }
        if postingStyle == .now {
            return try onQueue {
                // It drops the queued ones it matches, and ends the turn of the `asap` ones left: posted first.
                notificationQueue.coalesce(
                    with: NotificationQueue.Pending(name: name, object: object, userInfo: userInfo),
                    coalescing: coalescing)
                flushAsap()
                let posted = try notificationCenter.post(name: name, object: object, userInfo: userInfo)
                wakeWaiters()
                return .posted(seq: posted.seq)
            }
        }
        return try onQueue { () throws -> PostOutcome in
            // A notification accepted for later must have a seq to come: refused now when none can be reserved.
            try notificationCenter.reserveNext()
            let pending = NotificationQueue.Pending(name: name, object: object, userInfo: userInfo)
            let (queued, flush) = notificationQueue.enqueue(pending, style: postingStyle, coalescing: coalescing)
            switch flush {
            case .asap? where !asapFlushScheduled:
                // The end of this turn of the queue (`asapTurn`).
                asapFlushScheduled = true
                asapTurns += 1
                let turn = asapTurns
                queue.asyncAfter(deadline: .now() + configuration.asapTurn) { [self] in
                    if asapFlushScheduled, asapTurns == turn { flushAsap() }
                }
            case .whenIdle? where !idleFlushScheduled:
                idleFlushScheduled = true
                queue.asyncAfter(deadline: .now() + configuration.idleTurn) { [self] in
                    idleFlushScheduled = false
                    self.flush(\.idle)
                }
            default: break
            }
            return queued ? .queued : .coalesced
        }
    }

    /// Posts a notification of the service's own (`StoreDidSave`, `ControllerDidCommitEditing`, ...) now: after the
    /// `ObjectsDidChange` of every change delivered so far, before those of later ones.
    public func postNow(name: String, object: PropertyListValue = .null, userInfo: PropertyListValue = [:]) {
        receptionist?.enqueue { [self] in
            postOwn(name: name, object: object, info: .value(userInfo))
            wakeWaiters()
        }
    }

    /// On the queue: posts a notification no client waits to hear about; one whose seq cannot be reserved is dropped
    /// (never posted with a seq a later run could hand out again), reported once until posting works again.
    private func postOwn(name: String, object: PropertyListValue, info: PostedNotification.Info) {
        do throws(ObjectGraphError) {
            try notificationCenter.post(name: name, object: object, info: info)
            if droppingNotifications {
                droppingNotifications = false
                report("notification seqs can be reserved again; notifications are posted again")
            }
        } catch {
            if !droppingNotifications {
                droppingNotifications = true
                report("notifications are dropped until their seqs can be reserved: \(error.message)")
            }
        }
    }

    private func flush(_ list: ReferenceWritableKeyPath<NotificationQueue, [NotificationQueue.Pending]>) {
        let pending = notificationQueue[keyPath: list]
        notificationQueue[keyPath: list] = []
        guard !pending.isEmpty else { return }
        for notification in pending {
            postOwn(name: notification.name, object: notification.object, info: .value(notification.userInfo))
        }
        wakeWaiters()
    }
}
