/// When the journal is forced to disk (API.md §0, §9): `--fsync always|batch|never`.
public enum FsyncPolicy: String, Sendable, CaseIterable {
    /// `fdatasync` after every record, before the store's lock is released: one disk flush per commit.
    case always
    /// Group commit: the record is queued under the lock; the request then waits (outside the lock) until the
    /// journal's flusher has written and flushed everything queued up to its seq. One write and one flush serve every
    /// commit that arrived meanwhile.
    case batch
    /// Written, never forced: a crash of the machine (not of the process) may lose the newest commits.
    case never
}
