import Bindery
import Controllers
import Foundation
import HTTPServer
import ObjectGraph

extension BinderyService {
    /// `GET /metrics`: Prometheus text exposition (API.md §10).
    static func addMetricsRoutes(
        to router: inout Router, document: Document, observations: ObservationCenter, controllers: ControllerRegistry,
        counters: ResponseCounters, requestLines: [(name: String, line: RequestLine)]
    ) {
        _ = statm  // opened now, while descriptors are free
        router.add("GET", "/metrics") { _ in
            var lines: [String] = []
            func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
                lines.append("# HELP \(name) \(help)")
                lines.append("# TYPE \(name) \(type)")
                for sample in samples { lines.append("\(name)\(sample.labels) \(sample.value)") }
            }
            metric(
                "bindery_http_responses_total", "counter",
                "HTTP responses Bindery sent, by status class (not libmicrohttpd's own answers to requests it refuses).",
                counters.counts.map { ("{class=\"\($0.0)\"}", String($0.1)) })
            // Neither waits for the store's lock, which a long transaction holds for seconds.
            metric("bindery_store_seq", "gauge", "The store's sequence number.", [("", String(document.store.seq))])
            metric(
                "bindery_journal_failed", "gauge", "1 while the journal refuses every change (until restart), else 0.",
                [("", document.journalFailure == nil ? "0" : "1")])
            metric(
                "bindery_problems_recovered_at_start", "gauge",
                "Problems the start recovered from (a torn journal tail cut off, an unreadable older snapshot); "
                    + "each is on standard error.",
                [("", String(document.problemsRecoveredAtOpen))])
            metric(
                "bindery_objects", "gauge", "Objects in the store, by entity.",
                document.store.objectCountsByEntity.map { ("{entity=\"\($0.entity)\"}", String($0.count)) })
            let statistics = observations.recentStatistics
            metric(
                "bindery_longpoll_waiters", "gauge", "Long-polls waiting for a change.",
                [("", String(statistics.waiters))])
            metric(
                "bindery_event_streams", "gauge", "Open server-sent event streams.", [("", String(statistics.streams))])
            metric("bindery_observers", "gauge", "Registered KVO observers.", [("", String(statistics.observers))])
            metric(
                "bindery_observer_history_bytes", "gauge",
                "About what the observers' change histories hold in memory (at most about 4 x --history-bytes).",
                [("", String(statistics.observerHistoryBytes))])
            metric(
                "bindery_observed_key_path_reads_total", "counter",
                "Observed key paths read again after commits (only those a commit may have changed).",
                [("", String(statistics.keyPathReads))])
            metric("bindery_controllers", "gauge", "Mediating controllers.", [("", String(controllers.count))])
            metric(
                "bindery_requests_waiting_turn", "gauge",
                "Requests waiting for their turn off the request threads, by line (controller requests in a large "
                    + "store; exports and large answers).",
                requestLines.map { entry in ("{line=\"\(entry.name)\"}", String(entry.line.waitingCount)) })
            metric(
                "bindery_http_connections", "gauge",
                "Open client connections, waiting long-polls and streams included.",
                [("", String(HTTPServer.processConnectionCount))])
            metric(
                "bindery_http_unsent_bytes", "gauge",
                "Bytes of answers of 16 KiB or more and of event streams held for clients that have not read them "
                    + "(--max-unsent).",
                [("", String(HTTPServer.processUnsentByteCount))])
            metric(
                "bindery_http_receiving_bytes", "gauge",
                "Bytes of request bodies being received, beyond the first 16 KiB of each (--max-receiving).",
                [("", String(HTTPServer.processReceivingByteCount))])
            if let rss = residentMemoryBytes() {
                metric("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", [("", String(rss))])
            }
            return .response(
                HTTPResponse(
                    status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                    text: lines.joined(separator: "\n") + "\n"))
        }
    }

    /// /proc/self/statm, kept open from start: opened per request, the resident size went missing from `/metrics`
    /// exactly when descriptors ran out.
    private static let statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)

    /// The resident set from /proc/self/statm (its second field, in pages), in bytes.
    private static func residentMemoryBytes() -> Int? {
        guard statm >= 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { pread(statm, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let fields = String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
