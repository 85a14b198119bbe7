import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An open file descriptor, closed when the last reference to it goes.
///
/// `Sendable`: the descriptor number never changes, and it is closed only in `deinit`, so no holder can see it
/// closed or reused; `write` and `fdatasync` on one descriptor from several threads are safe at the system level
/// (the journal serializes its writes itself).
package final class OwnedFileDescriptor: Sendable {
    package let fd: Int32
    package let path: String

    package init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit {
        close(fd)
    }
}

/// The few POSIX file operations persistence needs, with errors that name the file.
package enum FileIO {
    /// `storage-error` naming the operation, the file and `errno`'s text: 503 when the storage cannot take it now (a
    /// full disk or quota, a file size limit, a read-only or failing device, no descriptor or memory left), which an
    /// operator can remedy and a client try again (with `Retry-After`); 500 otherwise.
    package static func error(_ operation: String, _ path: String, errno code: Int32 = errno) -> ObjectGraphError {
        ObjectGraphError(
            status: [ENOSPC, EDQUOT, EFBIG, EROFS, EIO, EMFILE, ENFILE, ENOMEM].contains(code) ? 503 : 500,
            code: "storage-error",
            message: "\(operation) \(path) failed: \(String(cString: strerror(code))).")
    }

    /// Bytes available to this process on the file system of `path`, or nil when `statvfs` fails.
    package static func availableSpace(_ path: String) -> UInt64? {
        var status = statvfs()
        guard statvfs(path, &status) == 0 else { return nil }
        return UInt64(status.f_bavail).multipliedReportingOverflow(by: UInt64(status.f_frsize)).partialValue
    }

    /// `mkdir -p`: creates `path` and its missing parents. The error names the system's reason (a dangling symbolic
    /// link: "No such file or directory"), or the part of the path that is there but no directory.
    package static func makeDirectories(_ path: String) throws(ObjectGraphError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o777) != 0 {
                guard errno == EEXIST else { throw error("mkdir", prefix) }
                var info = stat()
                guard stat(prefix, &info) == 0 else { throw error("stat", prefix) }
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    throw ObjectGraphError(
                        status: 500, code: "storage-error", message: "\(prefix) is there but is not a directory.")
                }
            }
            prefix += "/"
        }
    }

    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws(ObjectGraphError)
        -> OwnedFileDescriptor
    {
        let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
        guard fd >= 0 else { throw error("open", path) }
        return OwnedFileDescriptor(fd: fd, path: path)
    }

    /// Writes every byte (retrying short writes and EINTR); returns `errno` on failure, else nil.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }

    /// `fdatasync`, retried on EINTR; returns `errno` on failure, else nil.
    package static func sync(_ fd: Int32) -> Int32? {
        while fdatasync(fd) != 0 {
            if errno == EINTR { continue }
            return errno
        }
        return nil
    }

    /// `ftruncate`, retried on EINTR; returns `errno` on failure, else nil.
    package static func truncate(_ fd: Int32, to size: Int) -> Int32? {
        while ftruncate(fd, off_t(size)) != 0 {
            if errno == EINTR { continue }
            return errno
        }
        return nil
    }

    /// Makes a directory's entries (created, renamed, removed files) durable.
    package static func syncDirectory(_ path: String) throws(ObjectGraphError) {
        let directory = try open(path, O_RDONLY | O_DIRECTORY)
        while fsync(directory.fd) != 0 {
            if errno == EINTR { continue }
            throw error("fsync", path)
        }
        noteSync(path)
    }

    /// The directories watched (`syncs(under:during:)`) with the paths synced under them so far.
    private static let syncWatches = Mutex<[String: [String]]>([:])

    /// The files `writeDurably` and the directories `syncDirectory` synced in `directory` or under it while `body`
    /// ran, in order: what a test can see of an `fsync` (its effect shows only after a power loss).
    package static func syncs(under directory: String, during body: () throws -> Void) rethrows -> [String] {
        syncWatches.withLock { $0[directory] = [] }
        defer { syncWatches.withLock { $0[directory] = nil } }
        try body()
        return syncWatches.withLock { $0[directory] ?? [] }
    }

    private static func noteSync(_ path: String) {
        syncWatches.withLock { watches in
            for directory in watches.keys where path == directory || path.hasPrefix(directory + "/") {
                watches[directory, default: []].append(path)
            }
        }
    }

    /// The whole file.
    package static func read(_ path: String) throws(ObjectGraphError) -> [UInt8] {
        let file = try open(path, O_RDONLY)
        var status = stat()
        guard fstat(file.fd, &status) == 0 else { throw error("stat", path) }
        // A directory opens, and may report a size of 0: it would read as an empty file.
        if status.st_mode & S_IFMT == S_IFDIR { throw error("read", path, errno: EISDIR) }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var offset = 0
        let failure: Int32? = bytes.withUnsafeMutableBytes { buffer in
            while offset < buffer.count {
                let count = Glibc.read(file.fd, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if count == 0 { break }
                offset += count
            }
            return nil
        }
        if let failure { throw error("read", path, errno: failure) }
        if offset < bytes.count { bytes.removeLast(bytes.count - offset) }
        return bytes
    }

    /// The whole file, or nil when nothing at all is at `path` (`lstat` fails with ENOENT).
    ///
    /// Anything else that keeps the file from being read (a directory, no permission, a dangling symbolic link, an
    /// I/O error) throws, naming the file: for an optional file, an unreadable one must not pass for a missing one.
    package static func readIfPresent(_ path: String) throws(ObjectGraphError) -> [UInt8]? {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return nil }
            throw error("lstat", path)
        }
        if status.st_mode & S_IFMT == S_IFLNK, stat(path, &status) != 0 { throw error("following the link", path) }
        return try read(path)
    }

    /// Writes `parts` to `path` durably and atomically: a temporary file, fsynced, renamed over `path`, and the
    /// directory fsynced. A crash leaves either the old file or the new one (and maybe a `.tmp` to ignore).
    package static func writeDurably(_ parts: [[UInt8]], to path: String, directory: String) throws(ObjectGraphError) {
        let temporary = path + ".tmp"
        do throws(ObjectGraphError) {
            let file = try open(temporary, O_WRONLY | O_CREAT | O_TRUNC)
            for bytes in parts {
                if let code = bytes.withUnsafeBytes({ writeAll(file.fd, $0) }) {
                    throw error("write", temporary, errno: code)
                }
            }
            while fsync(file.fd) != 0 {
                if errno == EINTR { continue }
                throw error("fsync", temporary)
            }
            noteSync(temporary)
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let failure = Self.error("rename", temporary)
            unlink(temporary)
            throw failure
        }
        try syncDirectory(directory)
    }

    /// The names in a directory.
    package static func list(_ path: String) throws(ObjectGraphError) -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw ObjectGraphError(status: 500, code: "storage-error", message: "listing \(path) failed: \(error).")
        }
    }
}
