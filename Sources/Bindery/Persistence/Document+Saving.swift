import ObjectGraph
import PropertyList

/// A notification the document posts (API.md §8): `StoreDidSave` after `save`.
public struct DocumentNotification: Sendable, Hashable {
    public var name: String
    /// The sender: `"document"`.
    public var object: PropertyListValue
    public var userInfo: PropertyListValue
}

/// NSDocument's saving: `save`, `revertToSaved`, `close`.
extension Document {
    /// Sets the code that receives the document's notifications (the notification center posts them to long-poll
    /// clients); it runs on the thread that saved, outside every lock.
    public func setNotificationHandler(_ handler: @escaping @Sendable (DocumentNotification) -> Void) {
        let hook = NotificationHook(handler)
        notificationHandler.withLock { $0 = hook }
    }

    /// Sets the document's editors (NSDocument's editor registry): the `save` action asks them to commit their
    /// pending edits first (a refused commit refuses the save), and `revertToSaved` makes them discard theirs (it
    /// is enabled while they have any, as while the store changed since the save).
    public func setEditors(
        commit: @escaping @Sendable () throws -> Void, discard: @escaping @Sendable () -> Void,
        hasPendingEdits: @escaping @Sendable () -> Bool
    ) {
        editors.withLock { $0 = Editors(commit: commit, discard: discard, hasPendingEdits: hasPendingEdits) }
    }

    /// Writes a snapshot now and makes it the saved state (`revertToSaved` returns to it); posts `StoreDidSave`
    /// with `userInfo` `{"seq": N}`. Returns the seq saved.
    @discardableResult
    public func save() throws -> Int64 {
        let seq = try storage.snapshot(store, markSaved: true)
        post(DocumentNotification(name: "StoreDidSave", object: "document", userInfo: ["seq": .integer(seq)]))
        return seq
    }

    /// Whether the store changed since the saved state (what enables `revertToSaved`): NSDocument's
    /// `isDocumentEdited`, so undoing back to the saved state makes it false again; commits that only took a seq (a
    /// controller's selection, the skip after a crash) do not count.
    ///
    /// Across a restart it is kept by content seqs (`ReadView.contentSeq`, which snapshots hold): the document
    /// opens edited when its content seq differs from the one the data directory records as equal to the saved state
    /// (the saved snapshot's, or one recorded by `revertToSaved` or by a clean close while not edited).
    public var hasChangesSinceSave: Bool {
        let saved = storage.savedStateSeqs
        return !saved.isEmpty && undoManager.isEdited(sinceAnyOf: saved)
    }

    /// Goes back to the saved state (the last `save`, else the state first seeded into the data directory) as one
    /// transaction replacing the graph: journaled, observed, and undoable like any other. Returns its seq.
    ///
    /// Object versions (ETags) become the new seq; ids and order are the saved ones. When the graph already is the
    /// saved one (changes that cancelled out, or only pending edits), nothing is committed: no seq, no undo group (so
    /// redo is kept, as NSUndoManager drops an empty group), as for `PUT /store` of the same graph.
    @discardableResult
    public func revertToSaved() throws -> Int64 {
        let saved = ObjectStore(model: store.model)
        try saved.restore(binarySnapshot: try storage.savedSnapshot())
        let graph = saved.read { $0.exportGraph() }
        let result = try transaction { transaction in
            let contentSeq = transaction.view.contentSeq
            try transaction.replaceGraph(with: graph, unlessIdentical: true)
            return contentSeq
        }
        // The content seq the store is at now: the revert's, unless it changed no object.
        let changed = result.record.map { !$0.changes.isEmpty } ?? false
        storage.noteRevertedToSaved(
            at: result.seq, contentSeq: changed ? result.seq : result.value, savedSnapshot: saved.seq,
            report: options.report)
        return result.seq
    }

    /// The seq to tell clients for an answer that reflects the store at `seq` (`X-Store-Seq`): at most the seq
    /// through which the journal is durable. With `batch` a commit is readable before its group is flushed; a seq
    /// told then could be handed out again to another change after a crash, and a client resuming from it would
    /// miss that change. Told the durable seq instead, it is at worst sent a change its answer already reflected.
    public func acknowledgedSeq(_ seq: Int64) -> Int64 {
        min(seq, storage.journal.durableSeq)
    }

    /// Throws 500 `storage-error` when the data directory's path no longer leads to the directory this document
    /// locked (removed or replaced while in use): for files kept there by other layers (the saved user defaults).
    public func checkDataDirectoryInPlace() throws(ObjectGraphError) {
        try storage.directory.checkInPlace()
    }

    /// Why the journal refuses every change until restart (503 `journal-failed`: a write or flush failed), or nil
    /// while it takes them: what `/healthz` reports.
    public var journalFailure: ObjectGraphError? {
        storage.journal.failure
    }

    /// With `--fsync always` and `never`: why the latest journal write failed (a full disk, 503 `storage-error`),
    /// while none has succeeded since (each change is tried; with `batch` a write that keeps failing is
    /// `journalFailure`). `/healthz` reports it too. While it is set, a test write in the data directory is tried
    /// at most once a second and clears it when it succeeds (`Journal.recheckWriteFailure`).
    public var journalWriteFailure: ObjectGraphError? {
        storage.journal.recheckWriteFailure()
    }

    /// Writes a last snapshot if anything changed since the newest, and flushes and closes the journal: later
    /// changes are refused (503). Idempotent; call it before exiting. Answers false when the last snapshot or the
    /// journal could not be written (the exit status should say so).
    ///
    /// A document that is not edited (undone back to the saved state, say) has its content seq recorded as the
    /// saved state's first, so that the next start, without this run's undo history, finds it unedited too.
    @discardableResult
    public func close() -> Bool {
        let undoManager = undoManager
        // Read with the store's lock held, so that no commit falls between the two.
        let saved = storage.savedStateSeqs
        let uneditedContentSeq =
            saved.isEmpty ? nil : store.read { view in undoManager.isEdited(sinceAnyOf: saved) ? nil : view.contentSeq }
        return storage.close(store, uneditedContentSeq: uneditedContentSeq, report: options.report)
    }

    /// Closes a document whose server never served (its start was refused after the document opened): a data
    /// directory this run seeded is left as it was found, so the next start seeds it again; otherwise as `close()`.
    @discardableResult
    public func closeUnserved() -> Bool {
        storage.closeUnserved(store, report: options.report)
    }

    private func post(_ notification: DocumentNotification) {
        // Notification call site: the observing layer installs the handler (`setNotificationHandler`).
        notificationHandler.withLock { $0 }?.body(notification)
    }
}
