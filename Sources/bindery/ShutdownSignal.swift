import Foundation

/// SIGINT, SIGTERM and SIGHUP (a closed terminal) turned into one call on a thread of its own, by the self-pipe trick.
///
/// The handler is installed with `sigaction` before `install` returns, so a signal sent at any moment after that (a
/// supervisor or a test may send one right after the listening line) is never lost. A dispatch signal source was not
/// enough: it needs `SIG_IGN`, and libdispatch registers the source asynchronously, so a signal arriving in between
/// was ignored and the server kept running.
enum ShutdownSignal {
    /// The pipe's write end, set before the handler is installed; the handler only reads it.
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    /// Calls `shutdown` once, on a thread of its own, when the first SIGINT, SIGTERM or SIGHUP arrives.
    static func install(_ shutdown: @escaping @Sendable () -> Void) throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        // A full pipe (thousands of signals during shutdown) must not block the handler.
        _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        writeEnd = ends[1]
        let readEnd = ends[0]

        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            // Only async-signal-safe calls here: `write` to a pipe, with `errno` kept for the interrupted code.
            let savedErrno = errno
            var byte: UInt8 = 1
            _ = write(ShutdownSignal.writeEnd, &byte, 1)
            errno = savedErrno
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
        sigaction(SIGHUP, &action, nil)

        let waiter = Thread {
            var byte: UInt8 = 0
            while read(readEnd, &byte, 1) < 0 && errno == EINTR {}
            shutdown()
        }
        waiter.name = "bindery-signals"
        waiter.start()
    }
}
