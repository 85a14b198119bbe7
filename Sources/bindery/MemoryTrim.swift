import Dispatch

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
