import Dispatch
import Foundation
import ObjectGraph
import PropertyList
import Synchronization
import Testing

@testable import Bindery

/// KVO cases on the observation center itself (no HTTP): what Cocoa documents and GNUstep/Cappuccino test.
struct ObservationCenterTests {
    /// A document on a temporary data directory with an observation center on a queue of its own.
    private func withCenter(
        _ configuration: ObservationCenter.Configuration = .init(), _ body: (Document, ObservationCenter) throws -> Void
    ) throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            let center = ObservationCenter(
                document: document, queue: DispatchQueue(label: "test.center"), configuration: configuration)
            try body(document, center)
            center.answerAllWaiters()
        }
    }

    /// A controller's state as the center reads it: live (no snapshots), an integer `state`, its reads counted.
    final class LiveTarget: Sendable {
        let reads = Atomic(0)
        let state = Atomic(0)
    }

    /// A center on a queue the test holds, reading every controller as `LiveTarget`'s state.
    private func withLiveTarget(_ body: (DispatchQueue, ObservationCenter, LiveTarget) throws -> Void) throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            let queue = DispatchQueue(label: "test.center")
            let center = ObservationCenter(document: document, queue: queue)
            defer { center.answerAllWaiters() }
            let target = LiveTarget()
            center.setExternalReader { _ in
                ObservationCenter.ExternalState(generation: nil) { _ in
                    target.reads.add(1, ordering: .relaxed)
                    return .integer(Int64(target.state.load(ordering: .relaxed)))
                }
            }
            try body(queue, center, target)
        }
    }

    /// An observer of a controller weighs the values its key path reads, as an object's observer does: a controller's
    /// `arrangedObjects.salary` takes no to-many relationship of the store but holds one value per arranged object.
    /// Together they stay within `observedValuesTotal` (2,000,000 here).
    @Test func anObserverOfAControllerWeighsTheValuesItReads() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            let center = ObservationCenter(document: document, queue: DispatchQueue(label: "test.weights"))
            defer { center.answerAllWaiters() }
            let arranged = PropertyListValue.array((0..<700_000).map { .integer(Int64($0)) })
            center.setExternalReader { _ in ObservationCenter.ExternalState(generation: nil) { _ in arranged } }
            for _ in 0..<2 {
                _ = try center.addObserver(target: "controllers/all", keyPath: "arrangedObjects.salary", options: [])
            }
            let refused = #expect(throws: ObjectGraphError.self) {
                try center.addObserver(target: "controllers/all", keyPath: "arrangedObjects.salary", options: [])
            }
            #expect(refused?.code == "too-many-observers")
            #expect(
                refused?.message.contains("reach 1400000 values together") == true, "\(String(describing: refused))")
        }
    }

    /// A registration with `initial` whose commit is refused (the journal's segment removed) watches nothing: its
    /// key path was read in that commit, and would otherwise be read again after every later commit, for no
    /// observer, and count against the observers' budget.
    @Test func aRefusedRegistrationWatchesNothing() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .always)
            let center = ObservationCenter(document: document, queue: DispatchQueue(label: "test.refused"))
            defer { center.answerAllWaiters() }
            for segment in try segments(in: path) { #expect(unlink(path + "/" + segment) == 0) }
            let refused = #expect(throws: ObjectGraphError.self) {
                try center.addObserver(target: "Employee/1", keyPath: "department.name", options: ["initial"])
            }
            #expect(refused?.code == "journal-segment-removed")
            let deadline = Date().addingTimeInterval(5)
            while (try? document.set("First", "name", of: "Department/1")) == nil, Date() < deadline { usleep(20_000) }
            for name in ["Second", "Third"] { try document.set(.string(name), "name", of: "Department/1") }
            usleep(100_000)
            #expect(center.statistics.observers == 0)
            #expect(center.statistics.keyPathReads == 0)
        }
    }

    /// A filtered poll that waits while more changes it does not want than the history keeps are made (`entity=`,
    /// `name=`: every commit posts an `ObjectsDidChange`) is answered what it asked for, not 410: nothing it wanted
    /// was dropped (it kept the `since` it came with, which those changes pushed out of the history).
    @Test(arguments: [true, false])
    func aFilteredWaitingPollDoesNotFallBehind(notifications: Bool) throws {
        try withCenter(.init(historyCapacity: 5)) { document, center in
            waitUntilProcessed(center, document)
            let source: PollRequest.Source =
                notifications ? .notifications(name: "Hello", object: nil) : .store(entity: "Department")
            let since = notifications ? 0 : document.store.seq
            let result = Mutex<PollAnswer?>(nil)
            let done = DispatchSemaphore(value: 0)
            center.poll(PollRequest(source: source, since: since, timeout: 10)) { answer in
                result.withLock { $0 = answer }
                done.signal()
            }
            for salary in 1...8 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/1") }
            if notifications {
                _ = try center.post(name: "Hello", object: .null, userInfo: [:], style: "now", coalesce: [])
            } else {
                try document.set("Renamed", "name", of: "Department/1")
            }
            #expect(done.wait(timeout: .now() + 5) == .success)
            guard case .items(let json, _)? = result.withLock({ $0 }) else {
                Issue.record("answered \(String(describing: result.withLock { $0 }))")
                return
            }
            #expect(json[notifications ? "notifications" : "changes"]?.arrayValue?.count == 1)
        }
    }

    /// A filtered poll from before the history (others' changes, more than it keeps, pushed its `since` out) is
    /// answered when nothing it wanted was dropped, as when the queue handles such a burst in one turn; it is 410
    /// once a change it wanted was dropped. An unfiltered poll from there is 410.
    @Test(arguments: [true, false])
    func aFilteredPollIsRefusedOnlyWhenAChangeItWantedWasDropped(notifications: Bool) throws {
        try withCenter(.init(historyCapacity: 5)) { document, center in
            let wanted: PollRequest.Source =
                notifications ? .notifications(name: "Hello", object: nil) : .store(entity: "Department")
            let other: PollRequest.Source =
                notifications ? .notifications(name: "ObjectsDidChange", object: nil) : .store(entity: "Employee")
            let unfiltered: PollRequest.Source =
                notifications ? .notifications(name: nil, object: nil) : .store(entity: nil)
            waitUntilProcessed(center, document)
            let since = notifications ? 0 : document.store.seq
            for salary in 1...8 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/1") }
            waitUntilProcessed(center, document)
            func isRefused(_ source: PollRequest.Source) -> Bool {
                let answer = answer(center, PollRequest(source: source, since: since, timeout: 0))
                if case .compacted? = answer { return true }
                guard case .items? = answer else {
                    Issue.record("answered \(String(describing: answer))")
                    return false
                }
                return false
            }
            #expect(!isRefused(wanted))
            #expect(isRefused(other))
            #expect(isRefused(unfiltered))
            // One change it wanted, then enough others to push it out of the history.
            if notifications {
                _ = try center.post(name: "Hello", object: .null, userInfo: [:], style: "now", coalesce: [])
            } else {
                try document.set("Renamed", "name", of: "Department/1")
            }
            for salary in 11...18 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/1") }
            waitUntilProcessed(center, document)
            #expect(isRefused(wanted))
        }
    }

    /// The answers kept for polls asking the same are bounded in bytes: polls from many `since`s far back, each
    /// answered with a large part of the history, do not all stay in memory until the next change.
    @Test func answersKeptForSharingAreBoundedInBytes() throws {
        try withCenter(.init()) { document, center in
            let long = String(repeating: "x", count: 10_000)
            for index in 0..<200 { try document.set(.string(long + String(index)), "firstName", of: "Employee/1") }
            waitUntilProcessed(center, document)
            let last = document.store.seq
            for since in 0..<40 {
                let request = PollRequest(source: .store(entity: nil), since: Int64(since), timeout: 1)
                guard case .items(let items, _)? = answer(center, request)
                else { Issue.record("no answer from \(since)"); return }
                #expect(items.bytes.count > 2_000_000)
            }
            #expect(center.cachedAnswerBytes <= 16 << 20)
            // An answer is still shared by the polls asking the same, a small one and a large one.
            for since in [last - 1, 0] {
                let request = PollRequest(source: .store(entity: nil), since: since, timeout: 1)
                guard case .items(let first, _)? = answer(center, request),
                    case .items(let again, _)? = answer(center, request)
                else { Issue.record("no answer from \(since)"); return }
                #expect(again === first, "from \(since)")
            }
        }
    }

    /// Waits (up to 10 s) until the center has processed every record committed so far.
    private func waitUntilProcessed(_ center: ObservationCenter, _ document: Document) {
        let deadline = Date().addingTimeInterval(10)
        while center.statistics.processedSeq < document.store.seq, Date() < deadline { usleep(1_000) }
    }

    /// Polls an observer without waiting (after the queue has processed everything committed so far).
    private func poll(_ center: ObservationCenter, _ id: String, since: Int64) throws -> [PropertyListValue] {
        // Let the receptionist's bounced records land first: they are queued before this poll.
        usleep(20_000)
        guard case .items(let json, _)? = answer(center, PollRequest(source: .observer(id), since: since, timeout: 0))
        else { return [] }
        return json["changes"]?.arrayValue ?? []
    }

    /// The center's answer to `request`, or nil when none came within 5 s.
    private func answer(_ center: ObservationCenter, _ request: PollRequest) -> PollAnswer? {
        let result = Mutex<PollAnswer?>(nil)
        let done = DispatchSemaphore(value: 0)
        center.poll(request) { answer in
            result.withLock { $0 = answer }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 5)
        return result.withLock { $0 }
    }

    /// An observer answers every `since` the store's history covers (API.md §7: `--history` changes), `prior`
    /// notifications included (they are items of their own, not changes that take room from others).
    @Test func anObserverKeepsAsManySeqsAsTheHistoryAlsoWithPrior() throws {
        try withCenter(.init(historyCapacity: 40)) { document, center in
            let (id, since) = try center.addObserver(
                target: "Employee/4", keyPath: "salary", options: ["new", "prior"])
            for salary in 1...40 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/4") }
            let changes = try poll(center, id, since: since)
            #expect(changes.count == 80)
            #expect(changes.last?["new"] == 40)
        }
    }

    /// A `prior` notification comes before the change and carries no `new` (NSKeyValueObservingOptionPrior): only
    /// the notification after the change has the new value.
    @Test func aPriorNotificationHasNoNewValue() throws {
        try withCenter(.init()) { document, center in
            let (id, since) = try center.addObserver(
                target: "Employee/4", keyPath: "salary", options: ["new", "old", "prior"])
            try document.set(7, "salary", of: "Employee/4")
            let changes = try poll(center, id, since: since)
            #expect(changes.count == 2)
            #expect(changes.first?["prior"] == true)
            #expect(changes.first?["new"] == nil)
            #expect(changes.last?["new"] == 7)
        }
    }

    /// Observers' histories together cost about four times `historyBytes` at most (values and ring slots; each holds
    /// at most a sixteenth of it in values): past it, the largest give up their oldest changes (answering 410 from
    /// before them) and keep the newest.
    @Test func observerHistoriesTogetherStayWithinTheirBudget() throws {
        try withCenter(.init(historyBytes: 160_000)) { document, center in
            // 80 histories of about 100 changes cost more than the 640,000 bytes all may.
            var registered: [(id: String, since: Int64)] = []
            for _ in 0..<80 {
                registered.append(try center.addObserver(target: "Employee/4", keyPath: "salary", options: ["new"]))
            }
            for salary in 1...100 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/4") }
            usleep(300_000)  // a tick of the center's timer
            #expect(center.statistics.observerHistoryBytes <= 640_000)
            var compacted = 0
            for (id, since) in registered {
                let request = PollRequest(source: .observer(id), since: since, timeout: 0)
                if case .compacted(let oldest, _)? = answer(center, request) {
                    compacted += 1
                    #expect(try poll(center, id, since: oldest).last?["new"] == 100)
                }
            }
            #expect(compacted > 0)
        }
    }

    /// Sizes as large as `Int` allows (`--history`, `--history-bytes`) are no limit, not an overflow (it trapped).
    @Test func theLargestHistorySizesAreNoLimit() throws {
        try withCenter(.init(historyCapacity: .max, historyBytes: .max)) { document, center in
            let (id, since) = try center.addObserver(
                target: "Employee/4", keyPath: "salary", options: ["new", "prior"])
            for salary in 1...3 { try document.set(.integer(Int64(salary)), "salary", of: "Employee/4") }
            usleep(300_000)  // a tick of the center's timer: the budget check
            #expect(try poll(center, id, since: since).count == 6)
        }
    }

    /// A poll is not answered before the queue has processed the seq a client may have been told (`notBefore`, set
    /// to the acknowledged seq when the poll comes): its `last` never goes below it, even with `timeout=0`.
    @Test func aPollWaitsForTheSeqItsClientMayHaveBeenTold() throws {
        try withCenter { document, center in
            let current = document.store.seq
            var request = PollRequest(source: .store(entity: nil), since: current, timeout: 0)
            request.notBefore = current + 1
            let result = Mutex<PollAnswer?>(nil)
            let done = DispatchSemaphore(value: 0)
            center.poll(request) { answer in
                result.withLock { $0 = answer }
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 0.2) == .timedOut)
            try document.set(7, "salary", of: "Employee/4")
            #expect(done.wait(timeout: .now() + 5) == .success)
            guard case .items(let json, _)? = result.withLock({ $0 }) else {
                Issue.record("expected changes")
                return
            }
            #expect(json["last"] == .integer(current + 1))
            #expect(json["changes"]?.arrayValue?.first?["new"] == 7)
        }
    }

    @Test func dependentKeyTwoLevelsDeepFiresOnAnyStepOfItsPath() throws {
        try withCenter { document, center in
            // Employee/7's department.payroll: payroll is employees.@sum.salary of the department.
            let (id, since) = try center.addObserver(
                target: "Employee/7", keyPath: "department.payroll", options: ["new", "old"])
            try document.set(1000, "salary", of: "Employee/8")  // a colleague's salary
            try document.set(.dictionary(["$ref": "Department/2"]), "department", of: "Employee/7")  // a move
            try document.set(5, "salary", of: "Employee/1")  // the old department: no longer observed
            let changes = try poll(center, id, since: since)
            #expect(changes.count == 2)
            #expect(changes.first?["old"] == 1_628_000)
            #expect(changes.first?["new"] == 1_501_500)
            #expect(changes.last?["new"] == 1_048_000)
        }
    }

    /// A commit reads again only the observed key paths that read an object it changed (or start from one): a
    /// salary in another department costs the observers of this one nothing, and what moves in is heard from then on.
    @Test func commitsReadAgainOnlyTheKeyPathsThatReadWhatTheyChanged() throws {
        try withCenter { document, center in
            let (payroll, since) = try center.addObserver(
                target: "Department/1", keyPath: "employees.@sum.salary", options: ["new"])
            let (name, _) = try center.addObserver(target: "Employee/7", keyPath: "department.name", options: ["new"])
            func reads(after change: () throws -> Void) throws -> Int {
                let before = center.statistics.keyPathReads
                try change()
                return center.statistics.keyPathReads - before
            }
            #expect(try reads { try document.set(1000, "salary", of: "Employee/13") } == 0)  // in Department/2
            #expect(try reads { try document.set("Sales 2", "name", of: "Department/2") } == 0)
            let move = try reads {
                try document.set(.dictionary(["$ref": "Department/1"]), "department", of: "Employee/13")
            }
            #expect(move == 2)  // Department/1's employees changed, and `department.name` read Department/1
            #expect(try reads { try document.set(2000, "salary", of: "Employee/13") } == 1)
            #expect(
                try reads { try document.transaction { try $0.delete(ObjectID(entity: "Employee", id: "13")) } } == 2)
            #expect(try poll(center, payroll, since: since).map { $0["new"] } == [1_629_000, 1_630_000, 1_628_000])
            #expect(try poll(center, name, since: since).isEmpty)
        }
    }

    /// Deleting many objects compacts their table and renumbers its rows: what an observed key path read is then
    /// no longer recognised by row, so every observed path is read again rather than a change of it missed.
    @Test func aChangeAfterATableIsCompactedIsStillHeard() throws {
        try withCenter { document, center in
            func employee(_ id: String, in department: String) -> PropertyListValue {
                [
                    "$id": .string("Employee/\(id)"), "firstName": "T", "lastName": "T",
                    "department": ["$ref": .string(department)],
                ]
            }
            let temporary = (1...2000).map { "t\($0)" }
            try document.transaction { transaction in
                try transaction.insertObjects(["objects": .array(temporary.map { employee($0, in: "Department/2") })])
                try transaction.insertObjects(["objects": [employee("late", in: "Department/1")]])
            }
            let (id, since) = try center.addObserver(
                target: "Department/1", keyPath: "employees.lastName", options: ["new"])
            try document.transaction { transaction in
                for name in temporary { try transaction.delete(ObjectID(entity: "Employee", id: name)) }
            }
            try document.set("Later", "lastName", of: "Employee/late")
            let changes = try poll(center, id, since: since)
            #expect(changes.last?["new"]?.arrayValue?.last == "Later")
        }
    }

    @Test func retargetingStopsHearingTheOldIntermediateObject() throws {
        try withCenter { document, center in
            let (id, since) = try center.addObserver(target: "Employee/4", keyPath: "department.name", options: ["new"])
            try document.set(.dictionary(["$ref": "Department/3"]), "department", of: "Employee/4")
            try document.set("Engineering 2", "name", of: "Department/1")
            try document.set("Marketing 2", "name", of: "Department/3")
            let changes = try poll(center, id, since: since)
            #expect(changes.map { $0["new"] } == ["Marketing", "Marketing 2"])
        }
    }

    @Test func toManyChangesCarryKindsAndIndexes() throws {
        try withCenter { document, center in
            let (id, since) = try center.addObserver(
                target: "Employee/1", keyPath: "directReports", options: ["new", "old"])
            try document.transaction { transaction in
                try transaction.insert(
                    ObjectID(entity: "Employee", id: "9"), at: 1, intoKeyPath: "directReports",
                    of: ObjectID(entity: "Employee", id: "1"))
            }
            try document.transaction { transaction in
                try transaction.remove(at: 0, fromKeyPath: "directReports", of: ObjectID(entity: "Employee", id: "1"))
            }
            let changes = try poll(center, id, since: since)
            #expect(changes.map { $0["kind"] } == ["insertion", "removal"])
            #expect(changes.map { $0["indexes"] } == [[1], [0]])
            #expect(changes.first?["new"] == [["$ref": "Employee/9"]])
            #expect(changes.last?["old"] == [["$ref": "Employee/2"]])
        }
    }

    /// Observer ids are not reused by another run (another center): a client still polling an observer from before
    /// a restart gets 404, never another observer's changes.
    /// Deleting an object nullifies its relationships: one change per key, not a second one from the re-read.
    @Test func deletionAndUndoOfTheTarget_reportRelationshipKeysOnce() throws {
        try withCenter { document, center in
            let (manager, since) = try center.addObserver(
                target: "Employee/2", keyPath: "manager", options: ["new", "old"])
            let (reports, _) = try center.addObserver(
                target: "Employee/2", keyPath: "directReports", options: ["new", "old"])
            try document.transaction { try $0.delete(ObjectID(entity: "Employee", id: "2")) }
            _ = try document.undo()
            let managerChanges = try poll(center, manager, since: since)
            #expect(managerChanges.map { $0["new"] } == [.null, ["$ref": "Employee/1"]])
            #expect(Set(managerChanges.compactMap { $0["seq"] }).count == 2)
            let reportChanges = try poll(center, reports, since: since)
            #expect(reportChanges.count == 2)
            #expect(reportChanges.last?["new"]?.arrayValue?.count == 2)
            // An empty to-many stays empty through its object's deletion and undo (never null), as in the feed.
            let (employees, before) = try center.addObserver(
                target: "Department/5", keyPath: "employees", options: ["new", "old"])
            try document.transaction { try $0.delete(ObjectID(entity: "Department", id: "5")) }
            _ = try document.undo()
            #expect(try poll(center, employees, since: before).isEmpty)
        }
    }

    @Test func observerIdsDifferFromOneRunToTheNext() throws {
        try withCenter { document, center in
            let first = try center.addObserver(target: "Employee/4", keyPath: "salary", options: [])
            let nextRun = ObservationCenter(document: document, queue: DispatchQueue(label: "test.next-run"))
            let other = try nextRun.addObserver(target: "Employee/5", keyPath: "salary", options: [])
            #expect(first.id.hasPrefix("o1-"))
            #expect(other.id.hasPrefix("o1-"))
            #expect(first.id != other.id)
            nextRun.answerAllWaiters()
        }
    }

    /// With `batch`, a commit nobody waits for (an observer's `initial`, a controller's seq) reaches the observers
    /// once flushed, however the flush and its queueing for delivery interleave; a poll from the registration's
    /// `since` that would answer at once waits for the `initial` change rather than miss it.
    @Test func withBatchInitialChangesArriveAndImmediatePollsGetThem() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path, fsync: .batch)
            let center = ObservationCenter(document: document, queue: DispatchQueue(label: "test.batch-center"))
            defer { center.answerAllWaiters() }
            for round in 0..<40 {
                let (id, since) = try center.addObserver(target: "Employee/4", keyPath: "salary", options: ["initial"])
                let polled = answer(center, PollRequest(source: .observer(id), since: since, timeout: 0))
                guard case .items(let json, _)? = polled else {
                    Issue.record("round \(round): no answer")
                    continue
                }
                #expect(json["changes"]?.arrayValue?.first?["new"] == 154_000, "round \(round)")
                #expect(center.removeObserver(id))
            }
        }
    }

    /// The service's own notifications keep their place among the commits: a `StoreDidSave` posted after a change
    /// and before the next one comes between their `ObjectsDidChange`s, also when the queue is busy (here: blocked)
    /// while they come in.
    @Test func ownNotificationsStayInOrderWithTheCommitsAroundThem() throws {
        let queue = DispatchQueue(label: "test.order")
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            let center = ObservationCenter(document: document, queue: queue)
            let release = DispatchSemaphore(value: 0)
            queue.async { release.wait() }
            for salary in 1...3 {
                try document.set(.integer(Int64(salary)), "salary", of: "Employee/5")
                center.postNow(name: "StoreDidSave", userInfo: ["salary": .integer(Int64(salary))])
            }
            release.signal()
            let polled = answer(
                center, PollRequest(source: .notifications(name: nil, object: nil), since: 0, timeout: 0))
            guard case .items(let json, _)? = polled else {
                Issue.record("no notifications: \(String(describing: polled))")
                return
            }
            let names = json["notifications"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
            #expect(
                names.suffix(6) == [
                    "ObjectsDidChange", "StoreDidSave", "ObjectsDidChange", "StoreDidSave", "ObjectsDidChange",
                    "StoreDidSave",
                ])
            center.answerAllWaiters()
        }
    }

    /// The check before a stream starts (`refusal(of:)`) counts as a use of its observer, as a poll does: the observer
    /// does not expire between that check and the stream's start (the stream would open only to end at once).
    @Test func theCheckBeforeAStreamKeepsItsObserverInUse() throws {
        try withCenter(.init(observerTTL: 2)) { _, center in
            let (id, since) = try center.addObserver(target: "Employee/4", keyPath: "salary", options: [])
            usleep(1_400_000)
            let request = PollRequest(source: .observer(id), since: since, timeout: 0)
            #expect(center.refusal(of: request) == nil)
            usleep(1_000_000)  // past the TTL from the registration, within it from the check
            let ended = Mutex(false)
            let stream = center.subscribe(
                request,
                send: { events, _ in
                    if events.contains(where: { if case .error = $0 { true } else { false } }) {
                        ended.withLock { $0 = true }
                    }
                    return true
                }, close: {})
            usleep(100_000)
            #expect(!ended.withLock { $0 })
            center.unsubscribe(stream)
        }
    }

    /// An event stream that starts far back is sent its backlog a page at a time, the next page once the client
    /// has read the last one: every change once, in order, and never the whole backlog in one write.
    @Test func aStreamSendsItsBacklogPageByPage() throws {
        try withCenter { document, center in
            let total = ObservationCenter.streamPage * 2 + 10
            for salary in 1...total { try document.set(.integer(Int64(salary)), "salary", of: "Employee/5") }
            // Every change in the history before the stream starts (a loaded machine takes longer).
            waitUntilProcessed(center, document)
            let pages = Mutex<[(count: Int, next: (@Sendable () -> Void)?)]>([])
            let seqs = Mutex<[Int64]>([])
            let id = center.subscribe(
                PollRequest(source: .store(entity: nil), since: 1, timeout: 0),
                send: { events, whenSent in
                    var count = 0
                    for case .item(let id, _) in events {
                        count += 1
                        if let id { seqs.withLock { $0.append(id) } }
                    }
                    pages.withLock { $0.append((count, whenSent)) }
                    return true
                }, close: {})
            // The client reads each page: the next one follows (waited for up to 10 s each, for a loaded machine).
            for _ in 0..<5 {
                let deadline = Date().addingTimeInterval(10)
                while pages.withLock({ $0.last?.next == nil && $0.count < 3 }), Date() < deadline { usleep(10_000) }
                let next = pages.withLock { $0.last?.next }
                guard let next else { break }
                pages.withLock { $0[$0.count - 1].next = nil }
                next()
            }
            usleep(50_000)
            #expect(
                pages.withLock { $0.map(\.count) } == [ObservationCenter.streamPage, ObservationCenter.streamPage, 10])
            #expect(seqs.withLock { $0 } == Array(2...Int64(total + 1)))
            center.unsubscribe(id)
        }
    }

    /// A filtered stream keeps up through changes that are not for it, more than the history holds: it is never told
    /// `history-compacted`, and a heartbeat moves its client's `Last-Event-ID` past them (to resume from there).
    @Test func aFilteredStreamKeepsUpThroughChangesNotForIt() throws {
        try withCenter(.init(historyCapacity: 20, heartbeatInterval: 0.3)) { document, center in
            let events = Mutex<[ObservationCenter.StreamEvent]>([])
            let id = center.subscribe(
                PollRequest(source: .store(entity: "Department"), since: document.store.seq, timeout: 0),
                send: { sent, _ in
                    events.withLock { $0 += sent }
                    return true
                }, close: {})
            // In runs shorter than the history (one run longer than it, between two looks, would be a stream that
            // fell behind).
            for salary in 1...50 {
                try document.set(.integer(Int64(salary)), "salary", of: "Employee/5")
                if salary.isMultiple(of: 5) { usleep(50_000) }
            }
            let quiet = document.store.seq
            usleep(800_000)  // a heartbeat
            try document.set("Sales & Co", "name", of: "Department/1")
            usleep(100_000)
            let seen = events.withLock { $0 }
            var heartbeatIDs: [Int64] = []
            var itemIDs: [Int64] = []
            for event in seen {
                switch event {
                case .heartbeat(let lastEventID?): heartbeatIDs.append(lastEventID)
                case .item(let id?, _): itemIDs.append(id)
                case .error(let body): Issue.record("error event: \(body.jsonString())")
                default: break
                }
            }
            #expect(heartbeatIDs.last == quiet && heartbeatIDs == heartbeatIDs.sorted())
            #expect(itemIDs == [quiet + 1])
            center.unsubscribe(id)
        }
    }

    /// A notification queued (`whenIdle`, answered 202) when the server stops is posted before the waiting clients
    /// are answered, not lost.
    @Test func queuedNotificationsArePostedBeforeTheWaitersAreAnswered() throws {
        try withCenter { _, center in
            let result = Mutex<PollAnswer?>(nil)
            let done = DispatchSemaphore(value: 0)
            center.poll(PollRequest(source: .notifications(name: nil, object: nil), since: nil, timeout: 30)) {
                answer in
                result.withLock { $0 = answer }
                done.signal()
            }
            _ = try center.post(name: "Later", object: .null, userInfo: [:], style: "whenIdle", coalesce: [])
            center.answerAllWaiters()
            #expect(done.wait(timeout: .now() + 5) == .success)
            guard case .items(let json, _)? = result.withLock({ $0 }) else {
                Issue.record("expected an answer")
                return
            }
            #expect(json["notifications"]?.arrayValue?.map { $0["name"] } == ["Later"])
        }
    }

    /// Notification seqs go on from one run to the next: a `since` kept from an earlier run is answered 410, never
    /// with the next run's notifications.
    @Test func notificationSeqsGoOnFromOneRunToTheNext() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            func post(_ center: ObservationCenter) throws -> Int64 {
                try #require(
                    try center.post(name: "Ping", object: .null, userInfo: [:], style: "now", coalesce: []).seq)
            }
            let firstRun = ObservationCenter(document: document, queue: DispatchQueue(label: "test.run1"))
            var last: Int64 = 0
            for _ in 0..<3 { last = try post(firstRun) }
            #expect(last == 3)
            let nextRun = ObservationCenter(document: document, queue: DispatchQueue(label: "test.run2"))
            var next: Int64 = 0
            for _ in 0..<5 { next = try post(nextRun) }
            #expect(next > last + 5)
            let polled = answer(
                nextRun, PollRequest(source: .notifications(name: nil, object: nil), since: last, timeout: 0))
            guard case .compacted? = polled else {
                Issue.record("a since from the earlier run was answered \(String(describing: polled))")
                return
            }
            firstRun.answerAllWaiters()
            nextRun.answerAllWaiters()
        }
    }

    /// A seq is handed out only once it is reserved durably: when the block cannot be written, a client's post is
    /// refused (500 `storage-error`, nothing posted, whatever its style) and the service's own notifications are
    /// dropped (reported once), so that no seq a later run starts from was seen; posting resumes once it can be.
    @Test func aNotificationWhoseSeqCannotBeReservedIsNotPosted() throws {
        try withTemporaryDirectory { path in
            let reports = Reports()
            let document = try openDocument(path, reports: reports)
            // The durable write goes through `notification-seqs.tmp`: a directory there makes it fail.
            let blocker = path + "/notification-seqs.tmp"
            try FileManager.default.createDirectory(atPath: blocker + "/inside", withIntermediateDirectories: true)
            let center = ObservationCenter(document: document, queue: DispatchQueue(label: "test.reservation"))
            for style in ["now", "asap", "whenIdle"] {
                let refused = #expect(throws: ObjectGraphError.self, "\(style)") {
                    try center.post(name: "Ping", object: .null, userInfo: [:], style: style, coalesce: [])
                }
                #expect(refused?.code == "storage-error", "\(style)")
                #expect(refused?.status == 500, "\(style)")
            }
            center.postNow(name: "Own")
            try document.set(5, "salary", of: "Employee/1")
            usleep(100_000)
            #expect(reports.all.filter { $0.contains("notifications are dropped") }.count == 1, "\(reports.all)")
            try FileManager.default.removeItem(atPath: blocker)
            // Nothing took a seq meanwhile.
            #expect(try center.post(name: "Ping", object: .null, userInfo: [:], style: "now", coalesce: []).seq == 1)
            #expect(try String(contentsOfFile: path + "/notification-seqs", encoding: .utf8) == "10000\n")
            center.answerAllWaiters()
        }
    }

    /// A reservation file that cannot be read leaves the run without a place to go on from: nothing is posted (it
    /// would start again at 0).
    @Test func anUnreadableReservationFileRefusesNotificationsInsteadOfStartingOver() throws {
        try withTemporaryDirectory { path in
            let document = try openDocument(path)
            try Data("garbage".utf8).write(to: URL(fileURLWithPath: path + "/notification-seqs"))
            let center = ObservationCenter(document: document, queue: DispatchQueue(label: "test.unreadable"))
            let refused = #expect(throws: ObjectGraphError.self) {
                try center.post(name: "Ping", object: .null, userInfo: [:], style: "now", coalesce: [])
            }
            #expect(refused?.message.contains("notification-seqs") == true)
            center.answerAllWaiters()
        }
    }

    /// Observers are bounded: beyond `maxObservers`, 503 `too-many-observers` with the limit, until one goes.
    @Test func observersBeyondTheLimitAreRefusedUntilOneGoes() throws {
        try withCenter(.init(maxObservers: 2)) { _, center in
            let first = try center.addObserver(target: "Employee/4", keyPath: "salary", options: [])
            _ = try center.addObserver(target: "Employee/5", keyPath: "department.name", options: ["initial"])
            let refused = #expect(throws: ObjectGraphError.self) {
                try center.addObserver(target: "Employee/6", keyPath: "salary", options: [])
            }
            #expect(refused?.status == 503)
            #expect(refused?.code == "too-many-observers")
            #expect(refused?.fields["limit"] == 2)
            #expect(center.removeObserver(first.id))
            _ = try center.addObserver(target: "Employee/6", keyPath: "salary", options: [])
        }
    }

    @Test func eachChangeIsDeliveredOnceAndInitialHasASeqOfItsOwn() throws {
        try withCenter { document, center in
            let (id, since) = try center.addObserver(
                target: "Employee/4", keyPath: "salary", options: ["initial", "new"])
            try document.set(1, "salary", of: "Employee/4")
            let first = try poll(center, id, since: since)
            #expect(first.map { $0["new"] } == [154_000, 1])
            // The initial change has a seq of its own, right after `since`: a poll from after it never repeats it,
            // and a poll repeated from `since` (its answer lost) gets it again.
            #expect(first.map { $0["seq"] } == [.integer(since + 1), .integer(since + 2)])
            #expect(try poll(center, id, since: since + 1).map { $0["new"] } == [1])
            #expect(try poll(center, id, since: since + 2).isEmpty)
            #expect(try poll(center, id, since: since) == first)
            try document.set(1, "salary", of: "Employee/4")  // no change: no seq, no notification
            #expect(try poll(center, id, since: since + 2).isEmpty)
        }
    }

    /// Observers of the same key path of the same object share one read at a commit (and its value's memory).
    @Test func observersOfOneKeyPathOfOneObjectShareItsRead() throws {
        try withCenter { document, center in
            let (first, since) = try center.addObserver(
                target: "Employee/7", keyPath: "department.payroll", options: ["new"])
            let (second, _) = try center.addObserver(
                target: "Employee/7", keyPath: "department.payroll", options: ["new"])
            let before = center.statistics.keyPathReads
            try document.set(1000, "salary", of: "Employee/8")
            #expect(center.statistics.keyPathReads - before == 1)
            #expect(try poll(center, first, since: since).map { $0["new"] } == [1_501_500])
            #expect(try poll(center, second, since: since).map { $0["new"] } == [1_501_500])
        }
    }

    /// A controller (read live) that reports a change at every commit while the queue is busy is read once for all
    /// of them when the queue gets to it, once for its observers of one key path: not once per report and observer
    /// (a large tree's `arrangedObjects` takes milliseconds to read, and a fast writer left minutes of reads behind).
    @Test func reportsOfALiveTargetThatWaitTogetherAreReadOnce() throws {
        try withLiveTarget { queue, center, target in
            let (first, since) = try center.addObserver(target: "controllers/c", keyPath: "k", options: ["new"])
            let (second, _) = try center.addObserver(target: "controllers/c", keyPath: "k", options: ["new"])
            let before = target.reads.load(ordering: .relaxed)
            let release = DispatchSemaphore(value: 0)
            queue.async { release.wait() }
            for step in 1...100 {
                target.state.store(step, ordering: .relaxed)
                center.externalTargetDidChange("controllers/c")
            }
            release.signal()
            #expect(try poll(center, first, since: since).map { $0["new"] } == [100])
            #expect(try poll(center, second, since: since).map { $0["new"] } == [100])
            #expect(target.reads.load(ordering: .relaxed) - before == 1)
        }
    }

    /// A `timeout=0` poll that has to wait for a controller change reported before it (of any observed controller,
    /// `notBefore`) is answered as soon as that change is processed, not at the one-second bound of that wait.
    @Test func aPollWithoutTimeoutIsAnsweredOnceWhatItWaitsForIsProcessed() throws {
        try withLiveTarget { queue, center, target in
            _ = try center.addObserver(target: "controllers/other", keyPath: "k", options: ["new"])
            let (polled, since) = try center.addObserver(target: "Employee/4", keyPath: "salary", options: ["new"])
            for step in 1...5 {
                // The other controller's change takes its seq on the queue just before the poll gets there, and its
                // record is processed right after.
                let release = DispatchSemaphore(value: 0)
                queue.async { release.wait() }
                target.state.store(step, ordering: .relaxed)
                center.externalTargetDidChange("controllers/other")
                let start = DispatchTime.now()
                let answered = Mutex<PollAnswer?>(nil)
                let done = DispatchSemaphore(value: 0)
                center.poll(PollRequest(source: .observer(polled), since: since, timeout: 0)) { answer in
                    answered.withLock { $0 = answer }
                    done.signal()
                }
                release.signal()
                _ = done.wait(timeout: .now() + 5)
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
                guard case .items(let json, _)? = answered.withLock({ $0 }) else {
                    Issue.record("no answer")
                    return
                }
                #expect(json["changes"]?.arrayValue?.isEmpty == true)
                #expect(seconds < 0.5, "answered after \(seconds) s")
            }
        }
    }

    /// An observer of a controller registered while a change of it waits on the queue (its report not run yet, or
    /// its seq taken but its record not processed) is told that change, as the observers of the same key path
    /// already there are: a client that read the value before registering (without `initial`) is not left with it.
    @Test func anObserverRegisteredWhileAChangeWaitsIsToldIt() throws {
        try withLiveTarget { queue, center, target in
            let (first, firstSince) = try center.addObserver(target: "controllers/c", keyPath: "k", options: ["new"])
            // The change is made, its report not yet run.
            target.state.store(1, ordering: .relaxed)
            let (second, secondSince) = try center.addObserver(target: "controllers/c", keyPath: "k", options: ["new"])
            center.externalTargetDidChange("controllers/c")
            #expect(try poll(center, first, since: firstSince).map { $0["new"] } == [1])
            #expect(try poll(center, second, since: secondSince).map { $0["new"] } == [1])
            // The change's report runs and takes its seq before the registration, whose `since` is below it.
            let release = DispatchSemaphore(value: 0)
            queue.async { release.wait() }
            target.state.store(2, ordering: .relaxed)
            center.externalTargetDidChange("controllers/c")
            // Registered on the queue right after the report, before the record of the seq the report takes (which
            // the receptionist queues then).
            let registered = Mutex<(id: String, since: Int64)?>(nil)
            let done = DispatchSemaphore(value: 0)
            queue.async {
                registered.withLock {
                    $0 = try? center.addObserver(target: "controllers/c", keyPath: "k", options: ["new"])
                }
                done.signal()
            }
            release.signal()
            done.wait()
            let third = try #require(registered.withLock { $0 })
            #expect(try poll(center, third.id, since: third.since).map { $0["new"] } == [2])
        }
    }
}
