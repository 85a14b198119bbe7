import Bindery
import Dispatch
import HTTPServer
import ObjectGraph
import PropertyList

/// `/store`: the whole object graph, exported and imported (API.md §9).
///
/// The export is the `data.json` format plus `seq` (so an export is a valid fixture), as JSON or, with
/// `Accept: application/x-plist`, as an XML property list. An import replaces the graph as one transaction: it is
/// validated as a whole (422 and nothing changed when any object is invalid), journaled, observed, and one undo group.
extension BinderyService {
    static func addStoreRoutes(to router: inout Router, document: Document, slowAnswers: RequestLine) {
        router.add("GET", "/store") { try exportStore($0, document: document, slowAnswers: slowAnswers) }
        router.add("PUT", "/store") { try importStore($0, document: document) }
    }

    private static let plistType = "application/x-plist"

    private static func exportStore(
        _ request: RouteRequest, document: Document, slowAnswers: RequestLine
    ) throws -> HTTPHandlerResult {
        // The XML property list when the client prefers it (or `application/xml`) to JSON.
        let http = request.request
        let asPlist = http.prefersToJSON([plistType, "application/xml"])
        let orJSON = http.acceptsJSON
        let export: @Sendable () -> HTTPResponse = {
            do throws(APIError) {
                return try exportResponse(asPlist: asPlist, orJSON: orJSON, document: document)
            } catch {
                return .error(error)
            }
        }
        return answeredOffRequestThreads(on: slowAnswers, export)
    }

    /// `orJSON`: the client takes JSON too, which it is sent when the graph has no XML form (a control character).
    private static func exportResponse(asPlist: Bool, orJSON: Bool, document: Document) throws(APIError)
        -> HTTPResponse
    {
        let (graph, seq) = document.store.read { view in (view.exportGraph(includingDerived: true), view.seq) }
        // Sent once what it shows is durable, so that its `seq`, which clients follow the feed from, is what it
        // shows (`BinderyService.answer(_:whenDurable:document:)`).
        do throws(ObjectGraphError) { try document.waitUntilDurable(seq) } catch { throw APIError(error) }
        if asPlist {
            do {
                let xml = try graph.xmlPropertyList()
                return HTTPResponse(
                    status: 200,
                    headers: [("Content-Type", plistType), ("X-Store-Seq", String(seq)), ("Vary", "Accept")],
                    body: .bytes(xml))
            } catch {
                guard orJSON else {
                    throw APIError(
                        status: 406, code: "not-acceptable", message: "\(error.message) Ask for JSON instead.",
                        headers: [("Vary", "Accept")])
                }
            }
        }
        var response = HTTPResponse.json(graph, seq: seq)
        response.headers.append(("Vary", "Accept"))
        return response
    }

    private static func importStore(_ request: RouteRequest, document: Document) throws -> HTTPHandlerResult {
        let graph: PropertyListValue
        let type = request.request.header("Content-Type")?.lowercased() ?? ""
        if type.hasPrefix(plistType) || type.hasPrefix("application/xml") || type.hasPrefix("text/xml") {
            try RouteRequest.checkCharset(type, of: "XML")
            do {
                graph = try PropertyListValue(
                    xmlPropertyList: request.request.body, maximumDepth: PropertyListValue.documentDepthLimit)
            } catch {
                throw APIError.malformedPlist(error)
            }
        } else {
            if !type.isEmpty {
                try RouteRequest.checkJSONMediaType(
                    type, alternative: "an XML property list (application/x-plist, application/xml, text/xml)")
            }
            graph = try request.jsonBody(maximumDepth: PropertyListValue.documentDepthLimit)
        }
        // An export's keys (a misspelt or foreign one would be dropped without a word).
        if case .dictionary(let fields) = graph {
            try APIError.checkBodyKeys(fields, allowed: ["objects", "seq"]) {
                "A graph has \"objects\" (and an export's \"seq\"), not \"\($0)\"."
            }
        }
        let result: TransactionResult<Int>
        do {
            result = try document.transaction { transaction throws -> Int in
                try transaction.replaceGraph(with: graph, unlessIdentical: true)
                return try transaction.view.model.entities.reduce(0) { $0 + (try transaction.view.count(of: $1.name)) }
            }
        } catch let error as ObjectGraphError where (400..<500).contains(error.status) && error.status != 422 {
            var fields = error.fields
            fields["cause"] = .string(error.code)
            throw APIError(
                status: 422, code: "validation-failed", message: "The graph is not valid: \(error.message)",
                fields: fields)
        }
        return .response(.json(["seq": .integer(result.seq), "count": .integer(Int64(result.value))], seq: result.seq))
    }
}
