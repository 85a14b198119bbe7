import Bindery
import BinderyHTTP
import Foundation
import HTTPTestSupport
import PropertyList
import Testing

struct MetricsAndOpenAPITests {
    @Test func metricsArePrometheusText() throws {
        try withService { client in
            _ = try client.request("GET", "/nope")
            let metrics = try client.request("GET", "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
            #expect(metrics.text.contains("# TYPE bindery_http_responses_total counter"))
            #expect(metrics.text.contains("bindery_http_responses_total{class=\"4xx\"} 1\n"))
            #expect(metrics.text.contains("bindery_objects{entity=\"Employee\"} 32\n"))
            #expect(metrics.text.contains("bindery_store_seq 1\n"))
            #expect(metrics.text.contains("bindery_journal_failed 0\n"))
            #expect(metrics.text.contains("bindery_problems_recovered_at_start 0\n"))
            #expect(metrics.text.contains("process_resident_memory_bytes "))
            #expect(metrics.text.contains("# TYPE bindery_http_unsent_bytes gauge\nbindery_http_unsent_bytes "))
            #expect(metrics.text.contains("# TYPE bindery_http_receiving_bytes gauge\nbindery_http_receiving_bytes "))
            // At least the connection asking (every server of the test process counts).
            let connections = metrics.text.split(separator: "\n").first { $0.hasPrefix("bindery_http_connections ") }
            #expect((connections?.split(separator: " ").last.flatMap { Int($0) } ?? 0) >= 1)
        }
    }

    /// A scrape does not wait for the store's lock, which a long transaction (a `PUT /store` of 300,000 objects)
    /// holds for seconds: the counts by entity are those the last commit published.
    @Test func metricsDoNotWaitForTheStoresLock() throws {
        let document = try Document(fixtureDirectory: packageRoot + "/Fixtures/employees")
        try withService(document: document) { client in
            let entered = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let held = DispatchSemaphore(value: 0)
            Thread {
                document.store.read { _ in
                    entered.signal()
                    release.wait()
                }
                held.signal()
            }.start()
            entered.wait()
            var patient = client
            patient.timeout = 5
            let metrics = try? patient.request("GET", "/metrics")
            release.signal()
            held.wait()
            #expect(metrics?.status == 200)
            #expect(metrics?.text.contains("bindery_objects{entity=\"Employee\"} 32\n") == true)
            #expect(metrics?.text.contains("bindery_store_seq 1\n") == true)
        }
    }

    /// A scrape does not wait for the observation queue either, which a commit of 250,000 changes keeps busy for
    /// seconds: its long-poll, stream and observer counts are those of the queue's last tick (every 0.1 s).
    @Test func metricsDoNotWaitForTheObservationQueue() throws {
        let queue = DispatchQueue(label: "test.observation")
        try withService(observationQueue: queue) { client in
            let created = try client.request(
                "POST", "/observers", json: #"{"target": "Employee/4", "keyPath": "salary"}"#)
            #expect(created.status == 201)
            usleep(300_000)  // a tick or more
            let release = DispatchSemaphore(value: 0)
            queue.async { release.wait() }
            let metrics = try? TestHTTPClient(port: client.port, timeout: 5).request("GET", "/metrics")
            release.signal()
            #expect(metrics?.status == 200)
            #expect(metrics?.text.contains("bindery_observers 1\n") == true, "\(metrics?.text ?? "no answer")")
        }
    }

    /// Every route the server has is in `Public/openapi.json` (regenerate it with `scripts/gen-openapi.py`).
    ///
    /// Templated segments are compared whatever their names (`:name`, `#index` and `*keyPath` of a route, `{name}` of
    /// OpenAPI, all as `{}`): OpenAPI forbids two paths that differ only in those names, so
    /// `GET /controllers/:name/*keyPath` and `POST /controllers/:name/:action(...)` share
    /// `/controllers/{name}/{keyPathOrAction}`.
    @Test func openAPIDescribesEveryRoute() throws {
        let document = try Document(fixtureDirectory: packageRoot + "/Fixtures/employees")
        let service = BinderyService(configuration: .init(publicDirectory: packageRoot + "/Public"), document: document)
        let bytes = try #require(FileManager.default.contents(atPath: packageRoot + "/Public/openapi.json"))
        let openAPI = try PropertyListValue(jsonBytes: bytes)
        #expect(openAPI["openapi"] == "3.1.0")
        let paths = try #require(openAPI["paths"]?.dictionaryValue)
        // Segment for segment: a route's `*keyPath` is one OpenAPI `{keyPath}` (its keys joined with '.', as a
        // generated client sends it: an encoded '/' stays in its segment), so `*keyPath/#index` is `{keyPath}/{index}`.
        func hierarchy(_ path: String) -> String {
            "/"
                + path.split(separator: "/").map { part in
                    part.first.map { ":*#{".contains($0) } == true ? "{}" : String(part)
                }.joined(separator: "/")
        }
        var documented: [String: PropertyListValue] = [:]
        for (path, item) in paths {
            #expect(documented[hierarchy(path)] == nil, "\(path) has the hierarchy of another path in openapi.json")
            documented[hierarchy(path)] = item
        }
        for (method, pattern) in service.routePatterns {
            #expect(
                documented[hierarchy(pattern)]?[method.lowercased()] != nil,
                "\(method) \(pattern) is not in openapi.json")
        }
    }
}
