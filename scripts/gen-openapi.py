#!/usr/bin/env python3
"""Writes Public/openapi.json (OpenAPI 3.1) for the routes Bindery serves. Run after adding a route;
the test suite checks that every route of the server is described here."""
import json, os, re

def ref(name): return {"$ref": f"#/components/schemas/{name}"}
def header(name): return {"$ref": f"#/components/headers/{name}"}
def param(name, where="path", desc="", schema=None, required=None):
    p = {"name": name, "in": where, "schema": schema or {"type": "string"}}
    if desc: p["description"] = desc
    p["required"] = (where == "path") if required is None else required
    return p
def json_body(schema, desc=""):
    b = {"required": True, "content": {"application/json": {"schema": schema}}}
    if desc: b["description"] = desc
    return b
def ok(schema=None, desc="OK", code="200", headers=(), alternatives=None):
    """One response: `schema` as application/json, `alternatives` other media types ({type: media type object}),
    `headers` names of components/headers (X-Store-Seq, which every response carries, is added by `op`)."""
    r = {"description": desc}
    if schema is not None or alternatives:
        r["content"] = {**({"application/json": {"schema": schema}} if schema is not None else {}), **(alternatives or {})}
    if headers: r["headers"] = {h: header(h) for h in headers}
    return {code: r}
ERR = {"default": {"description": "An error (API.md §2)", "content": {"application/json": {"schema": ref("Error")}},
                   "headers": {"Retry-After": header("Retry-After"), "Allow": header("Allow")}}}
# 412 precondition-failed (If-Match / If-None-Match): the error has `current` (the object, or the key path's value) and
# `etag`, and the ETag header is the object's current one.
PRECONDITION = {"412": {"description": "precondition-failed: If-Match or If-None-Match does not hold; `current` and `etag` in the error",
                        "content": {"application/json": {"schema": ref("Error")}}, "headers": {"ETag": header("ETag")}}}
ANY = {}
SSE = {"text/event-stream": {"schema": {"type": "string", "description": "Server-sent events (with Accept: text/event-stream): "
        "`id:` the seq (on the last event of a seq only), `event: change`, `data:` the item's JSON; "
        "a `: heartbeat` comment every 15 s of quiet (with an `id:` when the stream passed changes not for it); "
        "`event: error` with the error JSON before a stream that cannot go on ends"}}}
PLIST = {"application/x-plist": {"schema": {"type": "string", "description": "The same graph as an XML property list"}}}
# How the long-poll routes and GET /store choose between JSON and their alternative (BinderyService+Observing.swift
# `poll`, BinderyService+Store.swift; README "Accept is read by media range and q"): HTTPRequest.acceptance gives each
# type the q of the most specific range it matches, and prefersToJSON picks the alternative.
SSE_NEGOTIATION = ("Content negotiation: each type takes the q of the most specific `Accept` range it matches (RFC 9110: "
    "`text/event-stream`, then `text/*`, then `*/*`). The answer is a stream of server-sent events (`text/event-stream`) when "
    "that type's q is above 0 and above the q of `application/json`, or equal to it and named itself; otherwise it is the "
    "long-poll's JSON answer, which ends after at most `timeout` seconds. So a tie of named types streams: "
    "`Accept: application/json, text/event-stream` (in either order) gets a stream, which does not end by itself whatever `timeout` says, "
    "while `application/json, text/event-stream;q=0.9` gets JSON. A wildcard alone (`*/*`), no `Accept`, or `application/json` "
    "alone get the JSON answer, the safe choice for a client that wants one answer. "
    "Both forms carry `Vary: Accept`. A 410 history-compacted or a bad `Last-Event-ID` is answered as JSON, before any stream starts.")
STORE_NEGOTIATION = ("Content negotiation: each type takes the q of the most specific `Accept` range it matches (RFC 9110). "
    "An XML property list (`Content-Type: application/x-plist`) when `application/x-plist` or `application/xml` has a q above 0 "
    "and above the q of `application/json`, or equal to it and named itself; otherwise JSON. So a tie of named types gets XML: "
    "`Accept: application/json, application/x-plist` (in either order) is answered in XML, while "
    "`application/json, application/x-plist;q=0.9` and `application/x-plist;q=0.5, */*;q=0.9` get JSON, and "
    "`application/json;q=0, */*` gets XML. A wildcard alone (`*/*`, `application/*`) and `text/xml` choose JSON: "
    "`Accept: application/json` alone (or no `Accept`) is the safe choice for JSON. A graph holding a string that "
    "XML 1.0 cannot carry (a control character other than tab, line feed and carriage return) is sent as JSON instead when "
    "`Accept` takes JSON (no `Accept`, or a range matching `application/json` with a q above 0), else 406 not-acceptable. "
    "The answer carries `Vary: Accept`.")
# Slash-separated key paths (README, API.md §4): the router reads the rest of the path as the key path.
SLASH_KEY_PATHS = ("The slash form (`department/name`, sent with unencoded '/') is the same key path as the dotted one "
    "(`department.name`); OpenAPI path parameters cannot span segments, so only the dotted form fits this template.")
entity, oid, kp = param("entity", desc="Entity name"), param("id", desc="Object id (API.md §4; not . or .., 400 bad-id)", schema={"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$"}), param("keyPath", desc="Key path: segments joined with '.'. " + SLASH_KEY_PATHS)
name = param("name", desc="Controller name")
since = param("since", "query", "Sequence number to answer after (default: now)", {"type": "integer", "minimum": 0})
lastEventID = param("Last-Event-ID", "header", "With Accept: text/event-stream: the seq to resume after (replaces since)", {"type": "integer", "minimum": 0})
timeout = param("timeout", "query", "Seconds to wait (default 30; more than 300 waits 300). Written in decimal digits with at most one '.' "
                "(`0.1`, `5`): an exponent (`1e-1`, as JavaScript's String() writes small numbers), a sign, `inf` or `nan` is 400 bad-query",
                {"type": "number", "minimum": 0})
ifmatch = param("If-Match", "header", "ETags (comma list) one of which the object must have, compared strongly (a weak W/\"n\" never matches; * matches any "
                "object); else 412 precondition-failed. On a key path, the ETag of the object the path starts at (which covers its own keys and what its derived keys read, not other keys of the objects the path goes through)")
ifnonematch = param("If-None-Match", "header", "ETags (comma list) the object must not have, compared weakly (* matches any object); "
                    "a match is 412 precondition-failed")
index = param("index", "path", "The index of the element to remove", {"type": "integer", "minimum": 0})
feed = {"type": "object", "required": ["changes", "last"], "properties": {"changes": {"type": "array", "items": ref("Change")}, "last": {"type": "integer"}}}
notificationFeed = {"type": "object", "required": ["notifications", "last"],
        "properties": {"notifications": {"type": "array", "items": ref("Notification")}, "last": {"type": "integer"}}}
ACTION_TARGETS = "`document`, `application`, `controllers/NAME` or a controller's bare `NAME`"
FIRST_RESPONDER = ("The controller (`NAME` or `controllers/NAME`) that starts the responder chain; one that does not exist is 404 "
                   "no-such-controller, an empty or blank value is no first responder")
defaultKey = param("key", desc="The default's name (one path segment)")
DEFAULT_NAMED_LIKE_ACTION = ("A default may be named `save`, `revert` or `revertToInitialValues`: GET, PUT and DELETE on /defaults/save (and the "
    "others) reach that default, as this template describes, while POST there is the defaults controller's action (OpenAPI's rule that "
    "a concrete path wins hides this template for those names; the server routes by method). GET /defaults lists such a default among `values` too.")
DEFAULTS_ACTION = ("Only POST is the action here: GET, PUT and DELETE on this path reach a default of the same name (GET/PUT/DELETE /defaults/{key}); "
    "OPTIONS answers Allow: POST, GET, PUT, DELETE, HEAD, OPTIONS.")
NO_BODY = {"required": False, "description": "No body; one that is sent must be JSON and {} or null (a key is 422 undefined-key, another value 422 type-mismatch)",
           "content": {"application/json": {"schema": {"type": ["object", "null"], "maxProperties": 0}}}}
# An object of PUT /store: its `$id` is required there (objects[i] needs an "$id": 422 validation-failed).
storedObject = {"allOf": [ref("Object"), {"required": ["$id"], "properties": {"$id": {"type": "string", "description": "Entity/id: required in an import"}}}]}
controllerOptions = ["avoidsEmptySelection", "preservesSelection", "selectsInsertedObjects", "clearsFilterPredicateOnInsertion",
                     "alwaysUsesMultipleValuesMarker", "automaticallyRearrangesObjects", "editable"]
controllerActions = ["add", "insert", "remove", "selectNext", "selectPrevious", "rearrangeObjects", "fetch", "commitEditing", "discardEditing", "addChild", "insertChild"]

def op(summary, params=(), body=None, responses=None, tags=(), description=None):
    # Every response carries X-Store-Seq (API.md §4); copies, so that no response object is shared.
    responses = {code: {**r, "headers": {"X-Store-Seq": header("X-Store-Seq"), **r.get("headers", {})}}
                 for code, r in {**(responses or ok(ANY)), **ERR}.items()}
    o = {"summary": summary}
    if description: o["description"] = description
    o["responses"] = responses
    if params: o["parameters"] = list(params)
    if body: o["requestBody"] = body
    if tags: o["tags"] = list(tags)
    return o

etag, location = ["ETag"], ["Location"]
paths = {
  "/healthz": {"get": op("Health", responses={**ok({"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}}),
        # An API.md §2 error with the status beside it: {"status": "journal-failed", "error": {"code": "journal-failed", "message"}}.
        **ok({"allOf": [ref("Error"), {"type": "object", "required": ["status"], "properties": {"status": {"enum": ["journal-failed", "storage-error"]},
                                                                                          "error": {"properties": {"code": {"enum": ["journal-failed", "storage-error"]}}}}}]},
             "journal-failed: the journal refuses every change until restart (no Retry-After: it lasts until the server is restarted); "
             "storage-error (--fsync always and never): the latest journal write failed (a full disk), until one succeeds", "503")}, tags=["service"])},
  "/metrics": {"get": op("Prometheus metrics", responses={"200": {"description": "Prometheus text", "content": {"text/plain": {"schema": {"type": "string"}}}}}, tags=["service"])},
  "/model": {"get": op("The model", responses=ok(ref("Model")), tags=["model"])},
  "/model/{entity}": {"get": op("One entity of the model", [entity], responses=ok({"type": "object"}), tags=["model"])},
  "/objects/{entity}": {
    "get": op("All objects of an entity", [entity,
        param("filter", "query", "NSPredicate format"), param("sort", "query", "e.g. lastName,-salary"),
        param("offset", "query", schema={"type": "integer", "minimum": 0}), param("limit", "query", schema={"type": "integer", "minimum": 0}),
        param("keys", "query", "Comma list of key paths to project")],
        responses=ok({"type": "object", "required": ["objects", "count"], "properties": {"objects": {"type": "array", "items": ref("Object")}, "count": {"type": "integer"}}}), tags=["objects"]),
    "post": op("Insert an object", [entity, param("If-None-Match", "header", "* makes it create-only: an object with the body's $id is 412 precondition-failed"),
        param("If-Match", "header", "The target is the entity's collection, which has no ETag: * matches it, any other tag is 412 precondition-failed")],
        json_body(ref("Object")), responses={**ok(ref("Object"), "Created", "201", headers=location + etag), **PRECONDITION}, tags=["objects"])},
  "/objects/{entity}/{id}": {
    "get": op("An object (ETag; If-None-Match → 304, If-Match → 412)", [entity, oid,
        param("If-None-Match", "header", "ETags (comma list), compared weakly (* matches any object): a match is 304 Not Modified"), ifmatch],
        responses={**ok(ref("Object"), headers=etag), **ok(desc="Not modified: If-None-Match names the current ETag", code="304", headers=etag),
                   **PRECONDITION}, tags=["objects"]),
    "patch": op("Set several keys atomically", [entity, oid, ifmatch, ifnonematch], json_body({"type": "object"}),
        {**ok(ref("Object"), headers=etag), **PRECONDITION}, tags=["objects"]),
    "delete": op("Delete, applying delete rules", [entity, oid, ifmatch, ifnonematch], responses={**ok(desc="Deleted", code="204"), **PRECONDITION}, tags=["objects"])},
  "/objects/{entity}/{id}/{keyPath}": {
    "get": op("value(forKeyPath:)", [entity, oid, kp], tags=["objects"]),
    "put": op("setValue(_:forKeyPath:)", [entity, oid, kp, ifmatch, ifnonematch], json_body(ANY),
        {**ok(ANY, "The new value", headers=etag), **PRECONDITION}, tags=["objects"]),
    "post": op("Insert into a to-many", [entity, oid, kp, ifmatch, ifnonematch,
        param("index", "query", "Where to insert (default: at the end)", {"type": "integer", "minimum": 0})], json_body(ref("Reference")),
        {**ok(ANY, "The relationship's new value", headers=etag), **PRECONDITION}, tags=["objects"])},
  "/objects/{entity}/{id}/{keyPath}/{index}": {
    "delete": op("Remove the element at index of a to-many", [entity, oid, kp, index, ifmatch, ifnonematch],
        responses={**ok(ANY, "The relationship's new value", headers=etag), **PRECONDITION}, tags=["objects"],
        description="removeObjectAtIndex: on the to-many at keyPath (`directReports`, `manager.directReports`). An index past the end is 422; "
                    "an index beyond 64 bits is 400 bad-path.")},
  "/controllers": {
    "get": op("All controllers", responses=ok({"type": "object", "required": ["controllers"], "properties": {"controllers": {"type": "array", "items": ref("ControllerState")}}}), tags=["controllers"]),
    "post": op("Create a controller (at most 1,000 created at run time; one more is 503 too-many-controllers)", body=json_body(ref("ControllerDescription")),
        responses=ok(ref("ControllerState"), "Created", "201", headers=location), tags=["controllers"])},
  "/controllers/{name}": {"get": op("Controller state", [name], responses=ok(ref("ControllerState")), tags=["controllers"]),
                          "delete": op("Remove a run-time controller", [name], responses=ok(desc="Removed", code="204"), tags=["controllers"])},
  "/controllers/{name}/arrangedObjects": {"get": op("Arranged objects (tree: nested nodes)",
        [name, param("offset", "query", "Arranged objects (tree: roots) to skip (default 0)", {"type": "integer", "minimum": 0}),
         param("limit", "query", "At most this many arranged objects (tree: roots; default: all)", {"type": "integer", "minimum": 0})],
        responses=ok({"type": "array", "items": {"type": "object"}}, headers=["X-Total-Count"]), tags=["controllers"],
        description="Array and object controllers: the arranged objects from `offset`, at most `limit` of them; `X-Total-Count` is the number of "
                    "arranged objects before paging. Tree controllers: the roots from `offset`, at most `limit` of them, each a nested node "
                    "`{object, indexPath, count, isLeaf, children}` with its whole subtree, and `X-Total-Count` is the number of roots. On any controller an `offset` or "
                    "`limit` that is not a non-negative integer is 400 bad-query. Only this path pages: KVC below it "
                    "(GET /controllers/{name}/arrangedObjects.lastName) answers every value and has no X-Total-Count.")},
  "/controllers/{name}/selectedObjects": {"get": op("Selected objects", [name], responses=ok({"type": "array", "items": ref("Object")}), tags=["controllers"]),
        "put": op("Select these objects", [name], json_body({"type": "array", "items": ref("Reference")}), ok({"type": "array", "items": ref("Object")}), tags=["controllers"])},
  # One path item for both: OpenAPI forbids two templated paths that differ only in their parameter names.
  "/controllers/{name}/{keyPathOrAction}": {
    "get": op("KVC on the controller", [name, param("keyPathOrAction", desc="A key path of the controller; its segments are joined with '.'. "
                                                    "The actions' names are not key paths here: GET on one is 405 (Allow: POST, OPTIONS). " + SLASH_KEY_PATHS,
                                                    schema={"type": "string", "not": {"enum": controllerActions}})],
        description="value(forKeyPath:) on the controller: `arrangedObjects.lastName`, `arrangedObjects.@count`, `selection` (a dictionary of every key), "
                    "`selection.firstName` (a value or a `{\"$marker\"}`), `selectionIndexes`, `canRemove`, … The answer is the raw JSON value. "
                    "The slash forms of API.md (`arrangedObjects/lastName`) are the same key paths when the '/' is sent unencoded. "
                    "No query parameter is read: `arrangedObjects.lastName?offset=1&limit=2` answers every value (paging is only on "
                    "GET /controllers/{name}/arrangedObjects).",
        tags=["controllers"]),
    "post": op("Target-action on the controller",
        [name, param("keyPathOrAction", desc="The action", schema={"enum": controllerActions}),
         param("index", "query", "insert and insertChild only (other actions ignore it): the index to insert at, as the body's `index` "
               "(both given and different: 400 bad-query). A tree controller's insert goes to the selection's index path whatever the index",
               {"type": "integer", "minimum": 0})],
        {"required": False, "content": {"application/json": {"schema": {"type": ["object", "null"], "additionalProperties": False,
            "description": "null or no body: none. Which keys an action takes (another key is 422 undefined-key, naming it in keyPath): "
                           "add and addChild `object`; insert and insertChild `object` and `index`; " + ", ".join(a for a in controllerActions if a not in ("add", "insert", "addChild", "insertChild")) + " none "
                           "(`{}` or null only). A body that is not a JSON object or null is 422 type-mismatch",
            "properties": {
            "object": {"type": ["object", "null"], "description": "add, insert, addChild, insertChild only: the new object's values (null: none)"},
            "index": {"type": "integer", "minimum": 0, "description": "insert, insertChild only: where (past the end: at the end); null or a negative index is 422"}}}}}},
        ok(ref("ControllerState")), tags=["controllers"],
        description="Performs an action: " + ", ".join(controllerActions[:-2]) + "; tree controllers also " + " and ".join(controllerActions[-2:]) + ". "
                    "The body is optional: `{\"object\": {...}}` for the values of add and addChild, and also `index` for insert and insertChild "
                    "(another key, or `object` or `index` for an action that does not take it, is 422 undefined-key). `insert` places the object at the first selected index, or at `index` (body or query; past the end: at the end), "
                    "unsorted until the next re-arrangement. Answers the controller's state."),
  },
  "/controllers/{name}/selection/{keyPath}": {"put": op("Set through the selection", [name, kp], json_body(ANY), ok(ANY, "The new value"), tags=["controllers"])},
  "/controllers/{name}/selectionIndexes": {"get": op("Selected indexes (array and object controllers)", [name], responses=ok({"type": "array", "items": {"type": "integer"}}), tags=["controllers"]),
        "put": op("Select by indexes", [name], json_body({"type": "array", "items": {"type": "integer", "minimum": 0},
        "description": "Non-negative integers (a negative one is 422 type-mismatch); indexes past the end are dropped, a repeated one counts once"}),
        ok({"type": "array", "items": {"type": "integer"}}), tags=["controllers"])},
  "/controllers/{name}/selectionIndex": {"get": op("The first selected index, or null (array and object controllers)", [name], responses=ok({"type": ["integer", "null"]}), tags=["controllers"]),
        "put": op("Select one index (NSArrayController's setSelectionIndex:)", [name], json_body({"type": ["integer", "null"], "minimum": 0,
        "description": "An index, or null for no selection (a negative one is 422 type-mismatch); answers the first selected index after it, or null"}),
        ok({"type": ["integer", "null"]}), tags=["controllers"])},
  "/controllers/{name}/selectionIndexPaths": {"get": op("Selected index paths (tree)", [name], responses=ok({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}), tags=["controllers"]),
        "put": op("Select by index paths (tree)", [name], json_body({"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "description": "Index paths of non-negative integers (a negative one is 422 type-mismatch)"}),
        ok({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}), tags=["controllers"])},
  "/controllers/{name}/sortDescriptors": {"get": op("Sort descriptors", [name], responses=ok({"type": "array", "items": ref("SortDescriptor")}), tags=["controllers"]),
        "put": op("Set sort descriptors", [name], json_body({"type": ["array", "null"], "items": ref("SortDescriptor"), "maxItems": 64, "description": "null: none (as []); at most 64"}), ok({"type": "array", "items": ref("SortDescriptor")}), tags=["controllers"])},
  "/controllers/{name}/filterPredicate": {"get": op("The filter predicate, or null", [name], responses=ok({"type": ["string", "null"]}), tags=["controllers"]),
        "put": op("Set or clear the filter predicate", [name], json_body({"type": ["string", "null"], "pattern": "\\S",
        "description": "An NSPredicate format string, or null to clear it; an empty or blank string is no predicate (400 bad-predicate)"}), ok({"type": ["string", "null"]}), tags=["controllers"])},
  "/controllers/{name}/edits": {"get": op("Pending edits", [name], responses=ok({"type": "object"}), tags=["controllers"])},
  "/controllers/{name}/edits/{keyPath}": {"get": op("A pending edit's value (404 when there is none)", [name, kp], responses=ok(ANY), tags=["controllers"]),
                                          "put": op("Record a pending edit", [name, kp], json_body(ANY), ok({"type": "object"}, "The pending edits"), tags=["controllers"])},
  "/defaults": {"get": op("User defaults (with hasUnappliedChanges)", responses=ok(ref("Defaults")), tags=["defaults"])},
  "/defaults/{key}": {"get": op("A default", [defaultKey], tags=["defaults"], description="The raw value (404 undefined-key for a key no layer has). " + DEFAULT_NAMED_LIKE_ACTION),
                      "put": op("Set a default", [defaultKey], json_body({"description": "Any JSON value; null removes the saved value (as DELETE). It may not "
                                "hold an object reference or another dictionary key starting with $ (API.md §1's typed values such as $date are read as such): 422 type-mismatch"}),
                                ok(ANY, "The key's value"), tags=["defaults"], description="Pending until POST /defaults/save when not appliesImmediately. " + DEFAULT_NAMED_LIKE_ACTION),
                      "delete": op("Remove a default", [defaultKey], responses=ok(desc="Removed", code="204"), tags=["defaults"], description=DEFAULT_NAMED_LIKE_ACTION)},
  "/defaults/save": {"post": op("Apply pending defaults", body=NO_BODY, responses=ok(ref("Defaults")), tags=["defaults"], description=DEFAULTS_ACTION)},
  "/defaults/revert": {"post": op("Drop pending defaults", body=NO_BODY, responses=ok(ref("Defaults")), tags=["defaults"], description=DEFAULTS_ACTION)},
  "/defaults/revertToInitialValues": {"post": op("Back to the initial values", body=NO_BODY, responses=ok(ref("Defaults")), tags=["defaults"], description=DEFAULTS_ACTION)},
  "/observers": {"post": op("Observe a key path", body=json_body(ref("ObserverRequest")),
        responses=ok({"type": "object", "required": ["id", "since"], "properties": {"id": {"type": "string"}, "since": {"type": "integer"}}}, "Created", "201", headers=location), tags=["observing"])},
  "/observers/{id}/changes": {"get": op("Long-poll an observer's changes (or text/event-stream)", [param("id"), since, timeout, lastEventID],
        responses=ok(feed, alternatives=SSE, headers=["Vary"]), tags=["observing"], description=SSE_NEGOTIATION)},
  "/observers/{id}": {"get": op("An observer as registered (the Location of its creation; reading it does not renew it)", [param("id")],
        responses=ok({"type": "object", "required": ["id", "target", "keyPath", "options", "since"], "properties": {"id": {"type": "string"},
            "target": {"type": "string"}, "keyPath": {"type": "string"}, "options": {"type": "array", "items": {"enum": ["new", "old", "initial", "prior"]}},
            "since": {"type": "integer"}}}), tags=["observing"]),
                      "delete": op("Stop observing", [param("id")], responses=ok(desc="Stopped", code="204"), tags=["observing"])},
  "/changes": {"get": op("Long-poll the store's change feed (or text/event-stream)", [since, timeout, param("entity", "query", "Only the changes of this entity's objects (404 no-such-entity for an entity the model lacks)"), lastEventID],
        responses=ok(feed, alternatives=SSE, headers=["Vary"]), tags=["observing"], description=SSE_NEGOTIATION)},
  "/notifications": {
    "get": op("Long-poll notifications (or text/event-stream)", [since, timeout, param("name", "query", "Only notifications of this name (empty: all)"),
                                                                  param("object", "query", "Only notifications of this object (empty: all)"), lastEventID],
        responses=ok(notificationFeed, alternatives=SSE, headers=["Vary"]), tags=["observing"], description=SSE_NEGOTIATION),
    "post": op("Post a notification", body=json_body(ref("NotificationRequest")),
        responses={**ok({"type": "object", "required": ["posted", "seq"], "properties": {"posted": {"const": True}, "seq": {"type": "integer"}}}, "Posted (postingStyle now, the default)", "201"),
                   **ok({"type": "object", "required": ["posted", "queued", "coalesced"], "properties": {"posted": {"const": False}, "queued": {"enum": ["asap", "whenIdle"]},
                             "coalesced": {"type": "boolean", "description": "Whether it was merged into a notification already queued"}}},
                        "Queued (postingStyle asap or whenIdle; possibly coalesced)", "202")}, tags=["observing"])},
  "/actions": {"get": op("Actions handled now (X-First-Responder)", [param("X-First-Responder", "header", FIRST_RESPONDER), param("target", "query", "Only this responder: " + ACTION_TARGETS)],
        responses=ok({"type": "object", "required": ["actions"], "properties": {"actions": {"type": "array", "items": ref("ActionValidation")}}}), tags=["document"])},
  "/actions/{action}": {"post": op("Send an action along the responder chain", [param("action"), param("X-First-Responder", "header", FIRST_RESPONDER),
        param("target", "query", "The responder to send the action to, as the body's `target` takes it: " + ACTION_TARGETS + ". "
              "Used when the body has no `target`; a body whose `target` differs from it (null included) is 400 bad-query. "
              "A controller that does not exist is 404 no-such-controller; a responder that does not handle the action is 404 no-responder")],
        {"required": False, "content": {"application/json": {"schema": {"type": ["object", "null"], "additionalProperties": False,
            "description": "null or no body: no target, no sender. Another key is 422 undefined-key",
            "properties": {"target": {"type": ["string", "null"], "description": "The responder: " + ACTION_TARGETS + "; null or absent: the "
                                      "responder chain (X-First-Responder, the document, the application), unless the query names a target. "
                                      "With a `target` query parameter, it must be the same string (else 400 bad-query)"},
                           "sender": {"description": "Any JSON value (default null); add and insert take the new object's values as "
                                      "`{\"object\": {...}}`. A dictionary inside it may not have a key starting with $ (API.md §1) other than "
                                      "a reference {\"$ref\": \"Entity/id\"} and the new object's `$id`: 422 type-mismatch"}}}}}},
        ok(ANY, "Handled: the document's actions answer {action, responder, seq}; a controller's, its state"), tags=["document"],
        description="The responder is the body's `target`, else the `target` query parameter (as GET /actions takes it), else the chain: the "
                    "controller named in X-First-Responder, the document (save, revertToSaved, undo, redo), the application. "
                    "`?target=controllers/emps` with a body `{\"target\": \"document\"}` is 400 bad-query; `?target=controllers/nope` is 404 "
                    "no-such-controller. No responder handling the action: 404 no-responder (`action` in the error); the responder has it "
                    "disabled: 409 action-disabled (`action` and `responder` in the error).")},
  "/store": {"get": op("Export the graph (Accept: application/x-plist for XML)", responses=ok(ref("Graph"), alternatives=PLIST, headers=["Vary"]), tags=["document"],
                       description=STORE_NEGOTIATION),
             "put": op("Replace the graph (one transaction)", body={"required": True, "content": {"application/json": {"schema": {"oneOf": [
                           {"type": "object", "required": ["objects"], "additionalProperties": False, "properties": {"seq": {"description": "Ignored, whatever its type (an export's)"},
                                                                                                                      "objects": {"type": "array", "items": storedObject}}},
                           {"type": "array", "items": storedObject, "description": "The objects alone"}]}}, **PLIST,
                           **{t: PLIST["application/x-plist"] for t in ("application/xml", "text/xml")}}},
                       responses=ok({"type": "object", "required": ["seq", "count"], "properties": {"seq": {"type": "integer"}, "count": {"type": "integer"}}}), tags=["document"])},
}
# "Templated paths with the same hierarchy but different templated names MUST NOT exist" (OpenAPI 3.1, Paths Object).
hierarchies = {}
for path in paths: hierarchies.setdefault(re.sub(r"\{[^}]*\}", "{}", path), []).append(path)
clashes = [same for same in hierarchies.values() if len(same) > 1]
if clashes: raise SystemExit(f"identical templated paths: {clashes}")
# An operationId for every operation (some client generators need one): the method, then the path's words.
for path, item in paths.items():
    for method, operation in item.items():
        words = re.findall(r"[A-Za-z0-9]+", path.replace("{", " by ").replace("}", " "))
        operation["operationId"] = method + "".join(w[0].upper() + w[1:] for w in words)
ids = [o["operationId"] for item in paths.values() for o in item.values()]
if len(ids) != len(set(ids)): raise SystemExit(f"operationIds clash: {sorted(ids)}")
schemas = {
  "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object", "required": ["code", "message"],
            "description": "API.md §2: `code` and `message`, and the members below that the error has (each only where it applies)",
            "properties": {"code": {"type": "string", "description": "Kebab-case, stable: clients branch on it"}, "message": {"type": "string", "description": "A human sentence"},
                           "keyPath": {"type": "string", "description": "The key path, body key or key at fault (undefined-key, type-mismatch, validation-failed, bad-key-path, ...)"},
                           "line": {"type": "integer", "description": "malformed-json, malformed-plist: the line of the fault"},
                           "column": {"type": "integer", "description": "malformed-json, malformed-plist, bad-predicate, bad-key-path: the column of the fault"},
                           "oldest": {"type": "integer", "description": "410 history-compacted: the oldest seq retained"},
                           "current": {"description": "410 history-compacted: the newest seq (an integer); 412 precondition-failed: the object, or the key path's value, as it is now"},
                           "allowed": {"type": "array", "items": {"type": "string"}, "description": "What would have been taken (methods of a 405, selectors, actions, body keys)"},
                           "errors": {"type": "array", "items": ref("ErrorEntry"), "description": "422 validation-failed: every invalid value"},
                           "etag": {"type": "string", "description": "412: the object's current ETag"},
                           "limit": {"type": "integer", "description": "413 body-too-large, 503 too-many-observers and too-many-controllers: the limit"},
                           "object": {"type": "string",
                                      "description": "The object at fault, as Entity/id: no-such-object, duplicate-id, delete-denied, and a 422 about one object's value"},
                           "controller": {"type": "string", "description": "The controller at fault: no-such-controller, conflict (exists already, declared, followed), not-editable, a controller's action-disabled"},
                           "action": {"type": "string", "description": "action-disabled, no-responder: the action"},
                           "responder": {"type": "string", "description": "action-disabled from POST /actions/{action}: the responder that has it disabled (document, application or a controller)"},
                           "entity": {"type": "string", "description": "no-such-entity, undefined-key: the entity"},
                           "field": {"type": "string", "description": "bad-controller: the field of the controller description at fault; an unknown sort descriptor field"},
                           "id": {"type": "string", "description": "bad-id: the id that is not valid"},
                           "content": {"type": "string", "description": "bad-binding: the content binding"},
                           "pattern": {"type": "string", "description": "bad-predicate: a MATCHES pattern that could not be matched within the limit"},
                           "cause": {"type": "string", "description": "PUT /store's 422 validation-failed: the code of the error the graph met (no-such-entity, bad-id, ...)"}}}}},
  "ErrorEntry": {"type": "object", "required": ["code", "message"], "description": "One invalid value of a 422 validation-failed (an error's members, with its status)",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"},
            "status": {"type": "integer", "description": "The status the error alone would have"}, "keyPath": {"type": "string", "description": "The key at fault"},
            "object": {"type": "string", "description": "The object at fault, as Entity/id"},
            "controller": {"type": "string", "description": "a failed commit of pending edits: the controller whose edit it is"}}, "additionalProperties": True},
  "Reference": {"type": "object", "required": ["$ref"], "properties": {"$ref": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*/[A-Za-z0-9_.-]{1,64}$"}}},
  "Object": {"type": "object", "properties": {"$id": {"type": ["string", "null"], "description": "Entity/id. In an answer always a string; "
            "in POST /objects/{entity}, absent or null makes the server assign the id (PUT /store requires it)"}}, "additionalProperties": True,
            "description": "An object's JSON form (API.md §1): `$id` and its keys. Other keys starting with $ are reserved (422 type-mismatch)"},
  "Graph": {"type": "object", "properties": {"seq": {"type": "integer"}, "objects": {"type": "array", "items": ref("Object")}}},
  "Model": {"type": "object", "properties": {"entities": {"type": "object"}}},
  "Change": {"type": "object", "required": ["seq", "target", "keyPath", "kind"], "properties": {"seq": {"type": "integer"}, "target": {"type": "string"}, "keyPath": {"type": "string"},
            "kind": {"enum": ["setting", "insertion", "removal", "replacement"]}, "old": {}, "new": {}, "indexes": {"type": "array", "items": {"type": "integer"}}, "prior": {"type": "boolean"}}},
  "ObserverRequest": {"type": "object", "required": ["target", "keyPath"], "properties": {
            "target": {"type": "string", "pattern": "^(defaults|controllers/[A-Za-z0-9_-]{1,64}|[A-Za-z_][A-Za-z0-9_]*/[A-Za-z0-9_.-]{1,64})$",
                       "description": "An object (Entity/id), a controller (controllers/NAME) or the user defaults (defaults)"},
            "keyPath": {"type": "string", "minLength": 1},
            "options": {"type": ["array", "null"], "items": {"enum": ["new", "old", "initial", "prior"]}, "description": "null or absent: none"}},
            "additionalProperties": False, "description": "Another key is 422 undefined-key. A key path the target does not have is 404 undefined-key"},
  "Notification": {"type": "object", "required": ["seq", "name"], "properties": {"seq": {"type": "integer"}, "name": {"type": "string"}, "object": {}, "userInfo": {"type": ["object", "null"]}}},
  "NotificationRequest": {"type": "object", "required": ["name"], "additionalProperties": False,
            "description": "null for an optional key is the same as leaving it out; another key is 422 undefined-key", "properties": {
            "name": {"type": "string", "minLength": 1, "description": "A non-empty string (\"\" is 422 type-mismatch)"},
            "object": {"description": "The sender: any JSON value, typically a reference {\"$ref\": \"Entity/id\"}. A dictionary inside it may not have "
                                      "another key starting with $ (API.md §1): 422 type-mismatch"},
            "userInfo": {"type": ["object", "null"], "not": {"type": "object", "required": ["$ref"]},
                         "description": "A JSON object or null; a reference ({\"$ref\": ...}) is not a dictionary here (422 type-mismatch)"},
            "postingStyle": {"enum": ["now", "asap", "whenIdle", None], "description": "null or absent: now"},
            "coalesce": {"type": ["array", "null"], "items": {"enum": ["name", "sender"]}, "description": "null or absent: name and sender"}}},
  "SortDescriptor": {"type": "object", "required": ["key"], "additionalProperties": False,
            "description": "An NSSortDescriptor. Another field is refused (422 type-mismatch from PUT .../sortDescriptors, 400 from POST /controllers, naming it in `field`). "
                           "Answers always spell out `ascending` and `selector` (with its colon)", "properties": {
            "key": {"type": "string", "minLength": 1, "description": "A key path of the arranged objects to sort by (one they do not have is 400)"},
            "ascending": {"type": ["boolean", "null"], "description": "null or absent: true"},
            "selector": {"enum": ["compare:", "caseInsensitiveCompare:", "localizedStandardCompare:", "compare", "caseInsensitiveCompare", "localizedStandardCompare", None],
                         "description": "null or absent: compare:; the trailing colon may be left out (answers write it)"}}},
  "ControllerState": {"type": "object", "description": "GET /controllers/{name} (API.md §5): the declaration with every option spelled out, the state, "
            "and the enabled actions. Every kind has the keys listed in `required`; array controllers also have selectionIndexes and isSorted, "
            "object controllers selectionIndexes and contentObject, tree controllers selectionIndexPaths, childrenKeyPath, leafKeyPath, countKeyPath, "
            "nodeCount, canAddChild and canInsertChild; idleTimeout is there only when it was given. (The user defaults controller is not among "
            "these: its state is Defaults, at GET /defaults.)",
            "required": ["name", "kind", "content", "entity", "declared", "count", "sortDescriptors", "filterPredicate", *controllerOptions,
                         "isEditing", "canAdd", "canInsert", "canRemove", "canSelectNext", "canSelectPrevious"],
            "allOf": [{"if": {"required": ["kind"], "properties": {"kind": {"const": "array"}}}, "then": {"required": ["selectionIndexes", "isSorted"]}},
                      {"if": {"required": ["kind"], "properties": {"kind": {"const": "object"}}}, "then": {"required": ["selectionIndexes", "contentObject"]}},
                      {"if": {"required": ["kind"], "properties": {"kind": {"const": "tree"}}},
                       "then": {"required": ["selectionIndexPaths", "childrenKeyPath", "leafKeyPath", "countKeyPath", "nodeCount", "canAddChild", "canInsertChild"]}}],
            "properties": {
            "name": {"type": "string"}, "kind": {"enum": ["object", "array", "tree"]},
            "content": {"type": "string", "description": "The content binding as declared (Entity, Entity/id[.keyPath], @controller.selection[.keyPath])"},
            "entity": {"type": ["string", "null"], "description": "The entity of the content objects; null when none can be known"},
            "declared": {"type": "boolean", "description": "From controllers.json (false: created at run time)"},
            "count": {"type": "integer", "description": "Arranged objects (object controller: 1 with an object as content, else 0; tree: root nodes)"},
            "selectionIndexes": {"type": "array", "items": {"type": "integer"}, "description": "Array and object controllers"},
            "selectionIndexPaths": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}, "description": "Tree controllers"},
            "sortDescriptors": {"type": "array", "items": ref("SortDescriptor"), "description": "An object controller's: always []"},
            "filterPredicate": {"type": ["string", "null"], "description": "The predicate's format; null: none (an object controller's: always null)"},
            "avoidsEmptySelection": {"type": "boolean", "description": "After a removal or a content change leaves nothing selected, select a neighbour (default true)"},
            "preservesSelection": {"type": "boolean", "description": "Keep the selected objects selected across re-arranging, else the indexes (default true)"},
            "selectsInsertedObjects": {"type": "boolean", "description": "Select what add and insert create (default true)"},
            "clearsFilterPredicateOnInsertion": {"type": "boolean", "description": "add and insert clear the filter predicate (array controllers; default true). When false, an object the filter hides is created hidden by add and refused by insert (422 validation-failed, nothing created)"},
            "alwaysUsesMultipleValuesMarker": {"type": "boolean", "description": "The selection answers the MultipleValues marker for any multiple selection (default false)"},
            "automaticallyRearrangesObjects": {"type": "boolean", "description": "A change to a sort or filter key of a content object re-arranges (default false)"},
            "editable": {"type": "boolean", "description": "Whether the controller changes the model (default true)"},
            "isEditing": {"type": "boolean", "description": "Whether it has pending edits"},
            **{k: {"type": "boolean", "description": f"Whether {k[3].lower() + k[4:]} is enabled now"} for k in ["canAdd", "canInsert", "canRemove", "canSelectNext", "canSelectPrevious"]},
            "isSorted": {"type": "boolean", "description": "Array controllers: false after insert placed an object out of order, or after a sort key "
                                                          "changed without automaticallyRearrangesObjects, until the next full re-arrangement"},
            "contentObject": {"oneOf": [ref("Reference"), {"type": "null"}], "description": "Object controllers: the content object, null when there is none"},
            "childrenKeyPath": {"type": "string", "description": "Tree controllers: the to-many key path of a node's children"},
            "leafKeyPath": {"type": ["string", "null"], "description": "Tree controllers: a boolean key path telling that a node is a leaf; null: none"},
            "countKeyPath": {"type": ["string", "null"], "description": "Tree controllers: a key path giving a node's number of children (one the model types as no number, or that cannot be evaluated on the entity, is 400 bad-controller); null: none"},
            "nodeCount": {"type": "integer", "description": "Tree controllers: the number of nodes (every level)"},
            "canAddChild": {"type": "boolean", "description": "Tree controllers: whether addChild is enabled now"},
            "canInsertChild": {"type": "boolean", "description": "Tree controllers: whether insertChild is enabled now"},
            "idleTimeout": {"type": "number", "description": "Only when given at creation (POST /controllers): seconds after which the controller, "
                                                             "if no request names it, is removed"}},
            "additionalProperties": True},
  "Defaults": {"type": "object", "required": ["values", "appliesImmediately", "hasUnappliedChanges", "pending", "initialValues"],
            "description": "The user defaults controller's state (NSUserDefaultsController)", "properties": {
            "values": {"type": "object", "description": "Every key's current value (pending changes included)"},
            "appliesImmediately": {"type": "boolean", "description": "false: PUT and DELETE are pending until POST /defaults/save"},
            "hasUnappliedChanges": {"type": "boolean", "description": "Whether `pending` has anything"},
            "pending": {"type": "object", "description": "The changes not applied yet (null: a removal)"},
            "initialValues": {"type": "object", "description": "The initial values (NSUserDefaultsController initialValues, from the fixture's defaults.json)"}}},
  "ActionValidation": {"type": "object", "required": ["action", "responder", "enabled"], "properties": {
            "action": {"type": "string"}, "responder": {"type": "string"}, "enabled": {"type": "boolean"}}},
  "ControllerDescription": {"type": "object", "required": ["name", "kind", "content"], "additionalProperties": False,
            "description": "null for an optional field is the same as leaving it out. A tree controller needs childrenKeyPath; an object controller "
                           "takes no sortDescriptors (but []) and no filterPredicate. Refusals are 400 bad-controller naming the `field` (an unknown field too), "
                           "or 400 bad-binding, bad-predicate, bad-key-path from the binding, predicate and key paths. The tree key paths are ignored by other kinds.",
            "allOf": [{"if": {"required": ["kind"], "properties": {"kind": {"const": "tree"}}}, "then": {"required": ["childrenKeyPath"],
                                                                                                    "properties": {"childrenKeyPath": {"type": "string"}}}},
                      {"if": {"required": ["kind"], "properties": {"kind": {"const": "object"}}}, "then": {"properties": {
                          "sortDescriptors": {"type": ["array", "null"], "maxItems": 0}, "filterPredicate": {"type": "null"}}}}],
            "properties": {
            "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}, "kind": {"enum": ["object", "array", "tree"]},
            "content": {"type": "string", "description": "The content binding: Entity, Entity/id[.keyPath] or @controller.selection[.keyPath]"},
            "sortDescriptors": {"type": ["array", "null"], "items": ref("SortDescriptor"), "maxItems": 64}, "filterPredicate": {"type": ["string", "null"], "description": "An NSPredicate format"},
            **{k: {"type": ["boolean", "null"]} for k in controllerOptions},
            **{k: {"type": ["string", "null"], "minLength": 1, "description": d} for k, d in [
                ("childrenKeyPath", "Tree controllers (required): the to-many key path of a node's children"),
                ("leafKeyPath", "Tree controllers: a boolean key path telling that a node is a leaf"),
                ("countKeyPath", "Tree controllers: a key path giving a node's number of children")]},
            "idleTimeout": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 31536000,
                            "description": "Bindery's own: seconds after which a controller created at run time that no request names is removed"}}},
}
headers = {
  "X-Store-Seq": {"description": "The store's sequence number the answer reflects (API.md §4)", "schema": {"type": "integer"}},
  "ETag": {"description": "\"<seq of the object's last change>\"", "schema": {"type": "string"}},
  "Location": {"description": "Where the created resource is", "schema": {"type": "string"}},
  "Allow": {"description": "405 method-not-allowed: the methods the path takes", "schema": {"type": "string"}},
  "Vary": {"description": "Accept: the media type of the answer follows the request's Accept header", "schema": {"type": "string"}},
  "X-Total-Count": {"description": "The number of arranged objects (tree: root nodes), before offset and limit", "schema": {"type": "integer"}},
  "Retry-After": {"description": "Seconds to wait before retrying, on a 503 that passes: server-busy (unread answers over --max-unsent, bodies being received over --max-receiving, or a line of "
                  "requests waiting their turn off the request threads whose first has waited over 30 s), "
                  "too-many-waiters (long-polls over --max-waiters), storage-error (a full disk) and journal-segment-removed. Not on the other "
                  "503s: journal-failed and document-closed last until restart, too-many-observers and too-many-controllers until one is deleted", "schema": {"type": "integer", "minimum": 0}},
}
# Every change may be sent with an Idempotency-Key (README): a repeat gets the first answer, not a second change.
IDEMPOTENCY_KEY = param("Idempotency-Key", "header", "A key for this request (1 to 255 visible ASCII characters, quoted or not): "
    "a request repeating it with the same method, target and body within 5 minutes is not carried out again but gets the first "
    "answer again (Idempotent-Replayed: true), waiting for it when the first is still being answered; with another method, "
    "target or body it is 422 idempotency-key-reused; another key form is 400 bad-idempotency-key. Kept in memory (10,000 keys, "
    "64 MiB of answers); 5xx answers are not kept",
    {"type": "string", "pattern": "^(\"[!-~]{1,255}\"|[!-~]{1,255})$"})
for item in paths.values():
    for method, operation in item.items():
        if method not in ("get", "head", "options"):
            operation.setdefault("parameters", []).append(IDEMPOTENCY_KEY)
doc = {"openapi": "3.1.0", "info": {"title": "Bindery", "version": "1.0.0",
        "description": "Cocoa Bindings as an HTTP service. The contract is API.md; this document describes the routes the server has. "
                       "Not listed per route: HEAD on every GET route, OPTIONS on every path (204 with Allow, for CORS preflights), the static "
                       "files of the demo page (GET /, /index.html, /openapi.json), 501 not-implemented for a method no route takes, and the "
                       "request bodies read as JSON besides application/json (any +json type, application/x-www-form-urlencoded for curl -d, and "
                       "a body without Content-Type); GET /store answers 406 not-acceptable when the XML form cannot hold a string (a control character). "
                       "Key paths in a URL (objects, controllers, selection, edits) may be written dotted (`department.name`, one segment, as the "
                       "`{keyPath}` templates say) or slash-separated (`department/name`, `arrangedObjects/lastName`, the '/' unencoded): the server "
                       "takes both, but no path template can describe the slash form, so a validator or gateway built only from this document refuses "
                       "it; send the dotted form through such tools. An encoded '/' (%2F) is part of a key, not a separator. "
                       "POST /defaults/save, /defaults/revert and /defaults/revertToInitialValues are the defaults controller's actions; GET, PUT "
                       "and DELETE on those paths reach a default of that name through /defaults/{key}, which OpenAPI's concrete-path rule would "
                       "otherwise hide. Media types: the long-poll routes answer JSON or an event stream and GET /store JSON or an XML property "
                       "list by the request's Accept; a tie in q chooses the stream or the XML (see those operations), so a client wanting JSON "
                       "sends Accept: application/json alone."},
       "servers": [{"url": "http://127.0.0.1:8080"}], "paths": paths, "components": {"schemas": schemas, "headers": headers}}


def int64(node):
    """Every integer is a 64-bit one (API.md §1: beyond is 400), so generated clients and validators refuse what the server does."""
    if isinstance(node, dict):
        kind = node.get("type")
        if (kind == "integer" or (isinstance(kind, list) and "integer" in kind)) and "format" not in node:
            node["format"] = "int64"
        for value in node.values():
            int64(value)
    elif isinstance(node, list):
        for value in node:
            int64(value)


int64(doc)
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
with open(os.path.join(root, "Public", "openapi.json"), "w") as f:
    json.dump(doc, f, indent=1, ensure_ascii=False)
    f.write("\n")
