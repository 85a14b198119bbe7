import Dispatch
import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// Gives the memory glibc keeps after a burst back to the system, every `interval` seconds (`malloc_trim(0)`).
///
/// glibc keeps freed memory in each thread's arena: after a burst (thousands of event streams, large imports, slow
/// clients' answers) the process kept hundreds of megabytes it no longer used, and repeated bursts ratcheted it up,
/// which a container's memory limit counts. `malloc_trim` is not in Swift's Glibc module, so it is looked up by name.
enum MemoryTrim {
    private typealias Trim = @convention(c) (Int) -> Int32

    /// Held for the life of the process.
    nonisolated(unsafe) private static var timer: (any DispatchSourceTimer)?

    private typealias Option = @convention(c) (Int32, Int32) -> Int32

    /// Caps glibc's arenas at one per core, at least two (its default is eight per core), unless `MALLOC_ARENA_MAX`
    /// says otherwise; call it first, before other threads allocate. Freed memory left scattered across many arenas
    /// cannot be trimmed: after a 30-minute mixed soak with small bounds the process kept 219 MB in 16 arenas for
    /// 61 MB in use, some arenas holding 11-23 MB around less than 0.1 MB of live data.
    static func capArenas() {
        #if canImport(Glibc)
            guard getenv("MALLOC_ARENA_MAX") == nil, let symbol = dlsym(dlopen(nil, RTLD_NOW), "mallopt") else {
                return
            }
            let mallopt = unsafeBitCast(symbol, to: Option.self)
            let arenaMax: Int32 = -8  // M_ARENA_MAX
            _ = mallopt(arenaMax, Int32(max(2, min(64, HTTPServerConfiguration.processorCount))))
        #endif
    }

    static func start(every interval: Double = 30) {
        #if canImport(Glibc)
            guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "malloc_trim") else { return }
            let trim = unsafeBitCast(symbol, to: Trim.self)
            let source = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
            source.schedule(deadline: .now() + interval, repeating: interval, leeway: .seconds(1))
            source.setEventHandler { _ = trim(0) }
            source.resume()
            timer = source
        #endif
    }
}
