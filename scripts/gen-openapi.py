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
entity, oid, kp = param("entity", desc="Entity name"), param("id", desc="Object id"), param("keyPath", desc="Key path: segments joined with '.'")
name = param("name", desc="Controller name")
since = param("since", "query", "Sequence number to answer after (default: now)", {"type": "integer", "minimum": 0})
lastEventID = param("Last-Event-ID", "header", "With Accept: text/event-stream: the seq to resume after (replaces since)", {"type": "integer", "minimum": 0})
timeout = param("timeout", "query", "Seconds to wait (default 30, max 300)", {"type": "number", "minimum": 0})
ifmatch = param("If-Match", "header", "ETags (comma list) one of which the object must have, compared strongly (a weak W/\"n\" never matches; * matches any "
                "object); else 412 precondition-failed. On a key path, the ETag of the object the path starts at (which covers its own keys and what its derived keys read, not other keys of the objects the path goes through)")
ifnonematch = param("If-None-Match", "header", "ETags (comma list) the object must not have, compared weakly (* matches any object); "
                    "a match is 412 precondition-failed")
index = param("index", "path", "The index of the element to remove", {"type": "integer", "minimum": 0})
feed = {"type": "object", "required": ["changes", "last"], "properties": {"changes": {"type": "array", "items": ref("Change")}, "last": {"type": "integer"}}}
notificationFeed = {"type": "object", "required": ["notifications", "last"],
        "properties": {"notifications": {"type": "array", "items": ref("Notification")}, "last": {"type": "integer"}}}
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
    "post": op("Insert an object", [entity, param("If-None-Match", "header", "* makes it create-only: an object with the body's $id is 412 precondition-failed")],
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
    "get": op("KVC on the controller", [name, param("keyPathOrAction", desc="A key path of the controller; its segments are joined with '.'")],
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
        {"required": False, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": False, "properties": {
            "object": {"type": "object", "description": "add, insert, addChild, insertChild: the new object's values"},
            "index": {"type": "integer", "minimum": 0, "description": "insert, insertChild: where (past the end: at the end)"}}}}}},
        ok(ref("ControllerState")), tags=["controllers"],
        description="Performs an action: " + ", ".join(controllerActions[:-2]) + "; tree controllers also " + " and ".join(controllerActions[-2:]) + ". "
                    "The body is optional: `{\"object\": {...}}` for the values of add and addChild, and also `index` for insert and insertChild "
                    "(another key is 422). `insert` places the object at the first selected index, or at `index` (body or query; past the end: at the end), "
                    "unsorted until the next re-arrangement. Answers the controller's state."),
  },
  "/controllers/{name}/selection/{keyPath}": {"put": op("Set through the selection", [name, kp], json_body(ANY), ok(ANY, "The new value"), tags=["controllers"])},
  "/controllers/{name}/selectionIndexes": {"put": op("Select by indexes", [name], json_body({"type": "array", "items": {"type": "integer"}}), ok({"type": "array", "items": {"type": "integer"}}), tags=["controllers"])},
  "/controllers/{name}/selectionIndexPaths": {"put": op("Select by index paths (tree)", [name], json_body({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}),
        ok({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}), tags=["controllers"])},
  "/controllers/{name}/sortDescriptors": {"put": op("Set sort descriptors", [name], json_body({"type": "array", "items": ref("SortDescriptor")}), ok({"type": "array", "items": ref("SortDescriptor")}), tags=["controllers"])},
  "/controllers/{name}/filterPredicate": {"put": op("Set or clear the filter predicate", [name], json_body({"type": ["string", "null"]}), ok({"type": ["string", "null"]}), tags=["controllers"])},
  "/controllers/{name}/edits": {"get": op("Pending edits", [name], responses=ok({"type": "object"}), tags=["controllers"])},
  "/controllers/{name}/edits/{keyPath}": {"get": op("A pending edit's value (404 when there is none)", [name, kp], responses=ok(ANY), tags=["controllers"]),
                                          "put": op("Record a pending edit", [name, kp], json_body(ANY), ok({"type": "object"}, "The pending edits"), tags=["controllers"])},
  "/defaults": {"get": op("User defaults (with hasUnappliedChanges)", responses=ok(ref("Defaults")), tags=["defaults"])},
  "/defaults/{key}": {"get": op("A default", [param("key")], tags=["defaults"]), "put": op("Set a default", [param("key")], json_body(ANY), ok(ANY, "The key's value"), tags=["defaults"]),
                      "delete": op("Remove a default", [param("key")], responses=ok(desc="Removed", code="204"), tags=["defaults"])},
  "/defaults/save": {"post": op("Apply pending defaults", responses=ok(ref("Defaults")), tags=["defaults"])},
  "/defaults/revert": {"post": op("Drop pending defaults", responses=ok(ref("Defaults")), tags=["defaults"])},
  "/defaults/revertToInitialValues": {"post": op("Back to the initial values", responses=ok(ref("Defaults")), tags=["defaults"])},
  "/observers": {"post": op("Observe a key path", body=json_body(ref("ObserverRequest")),
        responses=ok({"type": "object", "required": ["id", "since"], "properties": {"id": {"type": "string"}, "since": {"type": "integer"}}}, "Created", "201", headers=location), tags=["observing"])},
  "/observers/{id}/changes": {"get": op("Long-poll an observer's changes (or text/event-stream)", [param("id"), since, timeout, lastEventID],
        responses=ok(feed, alternatives=SSE), tags=["observing"])},
  "/observers/{id}": {"get": op("An observer as registered (the Location of its creation; reading it does not renew it)", [param("id")],
        responses=ok({"type": "object", "required": ["id", "target", "keyPath", "options", "since"], "properties": {"id": {"type": "string"},
            "target": {"type": "string"}, "keyPath": {"type": "string"}, "options": {"type": "array", "items": {"enum": ["new", "old", "initial", "prior"]}},
            "since": {"type": "integer"}}}), tags=["observing"]),
                      "delete": op("Stop observing", [param("id")], responses=ok(desc="Stopped", code="204"), tags=["observing"])},
  "/changes": {"get": op("Long-poll the store's change feed (or text/event-stream)", [since, timeout, param("entity", "query"), lastEventID],
        responses=ok(feed, alternatives=SSE), tags=["observing"])},
  "/notifications": {
    "get": op("Long-poll notifications (or text/event-stream)", [since, timeout, param("name", "query"), param("object", "query"), lastEventID],
        responses=ok(notificationFeed, alternatives=SSE), tags=["observing"]),
    "post": op("Post a notification", body=json_body(ref("NotificationRequest")),
        responses={**ok({"type": "object", "required": ["posted", "seq"], "properties": {"posted": {"const": True}, "seq": {"type": "integer"}}}, "Posted (postingStyle now, the default)", "201"),
                   **ok({"type": "object", "required": ["posted", "queued"], "properties": {"posted": {"const": False}, "queued": {"enum": ["asap", "whenIdle"]}}},
                        "Queued (postingStyle asap or whenIdle; possibly coalesced)", "202")}, tags=["observing"])},
  "/actions": {"get": op("Actions handled now (X-First-Responder)", [param("X-First-Responder", "header"), param("target", "query", "Only this responder")],
        responses=ok({"type": "object", "required": ["actions"], "properties": {"actions": {"type": "array", "items": ref("ActionValidation")}}}), tags=["document"])},
  "/actions/{action}": {"post": op("Send an action along the responder chain", [param("action"), param("X-First-Responder", "header")],
        {"required": False, "content": {"application/json": {"schema": {"type": ["object", "null"], "additionalProperties": False,
                                                                          "properties": {"target": {"type": ["string", "null"]}, "sender": {}}}}}},
        ok(ANY, "Handled: the document's actions answer {action, responder, seq}; a controller's, its state"), tags=["document"])},
  "/store": {"get": op("Export the graph (Accept: application/x-plist for XML)", responses=ok(ref("Graph"), alternatives=PLIST), tags=["document"]),
             "put": op("Replace the graph (one transaction)", body={"required": True, "content": {"application/json": {"schema": {"oneOf": [
                           {"type": "object", "required": ["objects"], "additionalProperties": False, "properties": {"seq": {"type": "integer", "description": "Ignored (an export's)"},
                                                                                                                      "objects": {"type": "array", "items": ref("Object")}}},
                           {"type": "array", "items": ref("Object"), "description": "The objects alone"}]}}, **PLIST}},
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
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "keyPath": {"type": "string"}, "line": {"type": "integer"}, "column": {"type": "integer"},
                           "oldest": {"type": "integer"}, "current": {},
                           "allowed": {"type": "array", "items": {"type": "string"}, "description": "What would have been taken (selectors, actions, body keys)"},
                           "errors": {"type": "array", "items": ref("ErrorEntry"), "description": "422 validation-failed: every invalid value"},
                           "etag": {"type": "string", "description": "412: the object's current ETag"},
                           "limit": {"type": "integer", "description": "413 body-too-large, 503 too-many-observers and too-many-controllers: the limit"}}}}},
  "ErrorEntry": {"type": "object", "required": ["code", "message"], "properties": {"code": {"type": "string"}, "message": {"type": "string"},
            "status": {"type": "integer"}, "keyPath": {"type": "string"}, "object": {},
            "controller": {"type": "string", "description": "a failed commit of pending edits: the controller whose edit it is"}}, "additionalProperties": True},
  "Reference": {"type": "object", "required": ["$ref"], "properties": {"$ref": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*/[A-Za-z0-9_.-]{1,64}$"}}},
  "Object": {"type": "object", "properties": {"$id": {"type": "string"}}, "additionalProperties": True},
  "Graph": {"type": "object", "properties": {"seq": {"type": "integer"}, "objects": {"type": "array", "items": ref("Object")}}},
  "Model": {"type": "object", "properties": {"entities": {"type": "object"}}},
  "Change": {"type": "object", "required": ["seq", "target", "keyPath", "kind"], "properties": {"seq": {"type": "integer"}, "target": {"type": "string"}, "keyPath": {"type": "string"},
            "kind": {"enum": ["setting", "insertion", "removal", "replacement"]}, "old": {}, "new": {}, "indexes": {"type": "array", "items": {"type": "integer"}}, "prior": {"type": "boolean"}}},
  "ObserverRequest": {"type": "object", "required": ["target", "keyPath"], "properties": {
            "target": {"type": "string", "pattern": "^(defaults|controllers/[A-Za-z0-9_-]{1,64}|[A-Za-z_][A-Za-z0-9_]*/[A-Za-z0-9_.-]{1,64})$",
                       "description": "An object (Entity/id), a controller (controllers/NAME) or the user defaults (defaults)"},
            "keyPath": {"type": "string", "minLength": 1},
            "options": {"type": "array", "items": {"enum": ["new", "old", "initial", "prior"]}}}},
  "Notification": {"type": "object", "required": ["seq", "name"], "properties": {"seq": {"type": "integer"}, "name": {"type": "string"}, "object": {}, "userInfo": {"type": ["object", "null"]}}},
  "NotificationRequest": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "object": {}, "userInfo": {"type": ["object", "null"]},
            "postingStyle": {"enum": ["now", "asap", "whenIdle"]}, "coalesce": {"type": "array", "items": {"enum": ["name", "sender"]}}}},
  "SortDescriptor": {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}, "ascending": {"type": "boolean"},
            "selector": {"enum": ["compare:", "caseInsensitiveCompare:", "localizedStandardCompare:", None], "description": "null or absent: compare:"}}},
  "ControllerState": {"type": "object", "required": ["name", "kind", "content"], "properties": {
            "name": {"type": "string"}, "kind": {"enum": ["object", "array", "tree"]}, "content": {"type": "string"}, "entity": {"type": "string"},
            "count": {"type": "integer", "description": "Arranged objects (tree: root nodes)"}, "declared": {"type": "boolean", "description": "From controllers.json"},
            "selectionIndexes": {"type": "array", "items": {"type": "integer"}}, "selectionIndexPaths": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "sortDescriptors": {"type": "array", "items": ref("SortDescriptor")}, "filterPredicate": {"type": ["string", "null"]},
            **{k: {"type": "boolean"} for k in ["isEditing", "canAdd", "canInsert", "canRemove", "canSelectNext", "canSelectPrevious"]}},
            "additionalProperties": True},
  "Defaults": {"type": "object", "required": ["values", "appliesImmediately", "hasUnappliedChanges"], "properties": {
            "values": {"type": "object"}, "appliesImmediately": {"type": "boolean"}, "hasUnappliedChanges": {"type": "boolean"},
            "pending": {"type": "object"}, "initialValues": {"type": "object"}}},
  "ActionValidation": {"type": "object", "required": ["action", "responder", "enabled"], "properties": {
            "action": {"type": "string"}, "responder": {"type": "string"}, "enabled": {"type": "boolean"}}},
  "ControllerDescription": {"type": "object", "required": ["name", "kind", "content"], "additionalProperties": False,
            "description": "null for an optional field is the same as leaving it out. A tree controller needs childrenKeyPath.",
            "if": {"properties": {"kind": {"const": "tree"}}}, "then": {"required": ["childrenKeyPath"]}, "properties": {
            "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}, "kind": {"enum": ["object", "array", "tree"]}, "content": {"type": "string"},
            "sortDescriptors": {"type": ["array", "null"], "items": ref("SortDescriptor")}, "filterPredicate": {"type": ["string", "null"]},
            **{k: {"type": ["boolean", "null"]} for k in ["avoidsEmptySelection", "preservesSelection", "selectsInsertedObjects", "clearsFilterPredicateOnInsertion",
                                                  "alwaysUsesMultipleValuesMarker", "automaticallyRearrangesObjects", "editable"]},
            "childrenKeyPath": {"type": ["string", "null"]}, "leafKeyPath": {"type": ["string", "null"]}, "countKeyPath": {"type": ["string", "null"]},
            "idleTimeout": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 31536000,
                            "description": "Bindery's own: seconds after which a controller created at run time that no request names is removed"}}},
}
headers = {
  "X-Store-Seq": {"description": "The store's sequence number the answer reflects (API.md §4)", "schema": {"type": "integer"}},
  "ETag": {"description": "\"<seq of the object's last change>\"", "schema": {"type": "string"}},
  "Location": {"description": "Where the created resource is", "schema": {"type": "string"}},
  "Allow": {"description": "405 method-not-allowed: the methods the path takes", "schema": {"type": "string"}},
  "X-Total-Count": {"description": "The number of arranged objects (tree: root nodes), before offset and limit", "schema": {"type": "integer"}},
  "Retry-After": {"description": "Seconds to wait before retrying, on a 503 that passes: server-busy (unread answers over --max-unsent), "
                  "too-many-waiters (long-polls over --max-waiters), storage-error (a full disk) and journal-segment-removed. Not on the other "
                  "503s: journal-failed and document-closed last until restart, too-many-observers and too-many-controllers until one is deleted", "schema": {"type": "integer", "minimum": 0}},
}
doc = {"openapi": "3.1.0", "info": {"title": "Bindery", "version": "1.0.0",
        "description": "Cocoa Bindings as an HTTP service. The contract is API.md; this document describes the routes the server has. "
                       "Not listed per route: HEAD on every GET route, OPTIONS on every path (204 with Allow, for CORS preflights), the static "
                       "files of the demo page (GET /, /index.html, /openapi.json), 501 not-implemented for a method no route takes, and the "
                       "request bodies read as JSON besides application/json (any +json type, application/x-www-form-urlencoded for curl -d, and "
                       "a body without Content-Type); GET /store answers 406 not-acceptable when the XML form cannot hold a string (a control character)."},
       "servers": [{"url": "http://127.0.0.1:8080"}], "paths": paths, "components": {"schemas": schemas, "headers": headers}}
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
with open(os.path.join(root, "Public", "openapi.json"), "w") as f:
    json.dump(doc, f, indent=1, ensure_ascii=False)
    f.write("\n")
