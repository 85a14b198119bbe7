#!/usr/bin/env python3
"""Writes Public/openapi.json (OpenAPI 3.1) for the routes Bindery serves. Run after adding a route;
the test suite checks that every route of the server is described here."""
import json, os

def ref(name): return {"$ref": f"#/components/schemas/{name}"}
def param(name, where="path", desc="", schema=None, required=None):
    p = {"name": name, "in": where, "schema": schema or {"type": "string"}}
    if desc: p["description"] = desc
    p["required"] = (where == "path") if required is None else required
    return p
def json_body(schema, desc=""):
    b = {"required": True, "content": {"application/json": {"schema": schema}}}
    if desc: b["description"] = desc
    return b
def ok(schema=None, desc="OK", code="200"):
    r = {"description": desc}
    if schema is not None: r["content"] = {"application/json": {"schema": schema}}
    return {code: r}
ERR = {"default": {"description": "An error (API.md §2)", "content": {"application/json": {"schema": ref("Error")}}}}
ANY = {}
entity, oid, kp = param("entity", desc="Entity name"), param("id", desc="Object id"), param("keyPath", desc="Key path: segments joined with '.'")
name = param("name", desc="Controller name")
since = param("since", "query", "Sequence number to answer after (default: now)", {"type": "integer", "minimum": 0})
timeout = param("timeout", "query", "Seconds to wait (default 30, max 300)", {"type": "number", "minimum": 0})
ifmatch = param("If-Match", "header", "ETag the object must have")
feed = {"type": "object", "properties": {"changes": {"type": "array", "items": ref("Change")}, "last": {"type": "integer"}}}

def op(summary, params=(), body=None, responses=None, tags=()):
    o = {"summary": summary, "responses": {**(responses or ok(ANY)), **ERR}}
    if params: o["parameters"] = list(params)
    if body: o["requestBody"] = body
    if tags: o["tags"] = list(tags)
    return o

paths = {
  "/healthz": {"get": op("Health", responses=ok({"type": "object", "properties": {"status": {"const": "ok"}}}), tags=["service"])},
  "/metrics": {"get": op("Prometheus metrics", responses={"200": {"description": "Prometheus text", "content": {"text/plain": {"schema": {"type": "string"}}}}}, tags=["service"])},
  "/model": {"get": op("The model", responses=ok(ref("Model")), tags=["model"])},
  "/model/{entity}": {"get": op("One entity of the model", [entity], tags=["model"])},
  "/objects/{entity}": {
    "get": op("All objects of an entity", [entity,
        param("filter", "query", "NSPredicate format"), param("sort", "query", "e.g. lastName,-salary"),
        param("offset", "query", schema={"type": "integer", "minimum": 0}), param("limit", "query", schema={"type": "integer", "minimum": 0}),
        param("keys", "query", "Comma list of key paths to project")],
        responses=ok({"type": "object", "properties": {"objects": {"type": "array", "items": ref("Object")}, "count": {"type": "integer"}}}), tags=["objects"]),
    "post": op("Insert an object", [entity, param("If-None-Match", "header", "* makes it create-only")], json_body(ref("Object")),
        responses=ok(ref("Object"), "Created", "201"), tags=["objects"])},
  "/objects/{entity}/{id}": {
    "get": op("An object (ETag; If-None-Match → 304)", [entity, oid, param("If-None-Match", "header")], responses=ok(ref("Object")), tags=["objects"]),
    "patch": op("Set several keys atomically", [entity, oid, ifmatch], json_body({"type": "object"}), ok(ref("Object")), tags=["objects"]),
    "delete": op("Delete, applying delete rules", [entity, oid, ifmatch], responses={"204": {"description": "Deleted"}}, tags=["objects"])},
  "/objects/{entity}/{id}/{keyPath}": {
    "get": op("value(forKeyPath:)", [entity, oid, kp], tags=["objects"]),
    "put": op("setValue(_:forKeyPath:)", [entity, oid, kp, ifmatch], json_body(ANY), tags=["objects"]),
    "post": op("Insert into a to-many", [entity, oid, kp, ifmatch, param("index", "query", schema={"type": "integer", "minimum": 0})], json_body(ref("Reference")), tags=["objects"]),
    "delete": op("Remove the element at the index that ends the path (…/{toManyKeyPath}/{index})", [entity, oid, kp, ifmatch], tags=["objects"])},
  "/controllers": {
    "get": op("All controllers", tags=["controllers"]),
    "post": op("Create a controller (at most 1,000 created at run time; one more is 503 too-many-controllers)", body=json_body(ref("ControllerDescription")), responses=ok(ANY, "Created", "201"), tags=["controllers"])},
  "/controllers/{name}": {"get": op("Controller state", [name], tags=["controllers"]), "delete": op("Remove a run-time controller", [name], responses={"204": {"description": "Removed"}}, tags=["controllers"])},
  "/controllers/{name}/arrangedObjects": {"get": op("Arranged objects (tree: nested nodes)", [name], tags=["controllers"])},
  "/controllers/{name}/selectedObjects": {"get": op("Selected objects", [name], tags=["controllers"]), "put": op("Select these objects", [name], json_body({"type": "array", "items": ref("Reference")}), tags=["controllers"])},
  "/controllers/{name}/{keyPath}": {"get": op("KVC on the controller: arrangedObjects/…, selection/…, selectionIndexes, …", [name, kp], tags=["controllers"])},
  "/controllers/{name}/selection/{keyPath}": {"put": op("Set through the selection", [name, kp], json_body(ANY), tags=["controllers"])},
  "/controllers/{name}/selectionIndexes": {"put": op("Select by indexes", [name], json_body({"type": "array", "items": {"type": "integer"}}), tags=["controllers"])},
  "/controllers/{name}/selectionIndexPaths": {"put": op("Select by index paths (tree)", [name], json_body({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}), tags=["controllers"])},
  "/controllers/{name}/sortDescriptors": {"put": op("Set sort descriptors", [name], json_body({"type": "array", "items": ref("SortDescriptor")}), tags=["controllers"])},
  "/controllers/{name}/filterPredicate": {"put": op("Set or clear the filter predicate", [name], json_body({"type": ["string", "null"]}), tags=["controllers"])},
  "/controllers/{name}/edits": {"get": op("Pending edits", [name], tags=["controllers"])},
  "/controllers/{name}/edits/{keyPath}": {"put": op("Record a pending edit", [name, kp], json_body(ANY), tags=["controllers"])},
  "/controllers/{name}/{action}": {"post": op("Target-action: add, insert, remove, selectNext, selectPrevious, rearrangeObjects, fetch, commitEditing, discardEditing, addChild, insertChild",
        [name, param("action")], {"required": False, "content": {"application/json": {"schema": {"type": "object"}}}}, tags=["controllers"])},
  "/defaults": {"get": op("User defaults (with hasUnappliedChanges)", tags=["defaults"])},
  "/defaults/{key}": {"get": op("A default", [param("key")], tags=["defaults"]), "put": op("Set a default", [param("key")], json_body(ANY), tags=["defaults"]), "delete": op("Remove a default", [param("key")], tags=["defaults"])},
  "/defaults/save": {"post": op("Apply pending defaults", tags=["defaults"])},
  "/defaults/revert": {"post": op("Drop pending defaults", tags=["defaults"])},
  "/defaults/revertToInitialValues": {"post": op("Back to the initial values", tags=["defaults"])},
  "/observers": {"post": op("Observe a key path", body=json_body(ref("ObserverRequest")),
        responses=ok({"type": "object", "properties": {"id": {"type": "string"}, "since": {"type": "integer"}}}, "Created", "201"), tags=["observing"])},
  "/observers/{id}/changes": {"get": op("Long-poll an observer's changes (or text/event-stream)", [param("id"), since, timeout], responses=ok(feed), tags=["observing"])},
  "/observers/{id}": {"delete": op("Stop observing", [param("id")], responses={"204": {"description": "Stopped"}}, tags=["observing"])},
  "/changes": {"get": op("Long-poll the store's change feed (or text/event-stream)", [since, timeout, param("entity", "query")], responses=ok(feed), tags=["observing"])},
  "/notifications": {
    "get": op("Long-poll notifications", [since, timeout, param("name", "query"), param("object", "query")], tags=["observing"]),
    "post": op("Post a notification", body=json_body(ref("NotificationRequest")), tags=["observing"])},
  "/actions": {"get": op("Actions handled now (X-First-Responder)", [param("X-First-Responder", "header")], tags=["document"])},
  "/actions/{action}": {"post": op("Send an action along the responder chain", [param("action"), param("X-First-Responder", "header")],
        {"required": False, "content": {"application/json": {"schema": {"type": "object", "properties": {"target": {"type": ["string", "null"]}, "sender": {}}}}}}, tags=["document"])},
  "/store": {"get": op("Export the graph (Accept: application/x-plist for XML)", responses=ok(ref("Graph")), tags=["document"]),
             "put": op("Replace the graph (one transaction)", body=json_body(ref("Graph")), tags=["document"])},
}
schemas = {
  "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object", "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "keyPath": {"type": "string"}, "line": {"type": "integer"}, "column": {"type": "integer"},
                           "oldest": {"type": "integer"}, "current": {}, "allowed": {"type": "array"}, "errors": {"type": "array"}}}}},
  "Reference": {"type": "object", "required": ["$ref"], "properties": {"$ref": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*/[A-Za-z0-9_.-]{1,64}$"}}},
  "Object": {"type": "object", "properties": {"$id": {"type": "string"}}, "additionalProperties": True},
  "Graph": {"type": "object", "properties": {"seq": {"type": "integer"}, "objects": {"type": "array", "items": ref("Object")}}},
  "Model": {"type": "object", "properties": {"entities": {"type": "object"}}},
  "Change": {"type": "object", "required": ["seq", "target", "keyPath", "kind"], "properties": {"seq": {"type": "integer"}, "target": {"type": "string"}, "keyPath": {"type": "string"},
            "kind": {"enum": ["setting", "insertion", "removal", "replacement"]}, "old": {}, "new": {}, "indexes": {"type": "array", "items": {"type": "integer"}}, "prior": {"type": "boolean"}}},
  "ObserverRequest": {"type": "object", "required": ["target", "keyPath"], "properties": {"target": {"type": "string"}, "keyPath": {"type": "string"},
            "options": {"type": "array", "items": {"enum": ["new", "old", "initial", "prior"]}}}},
  "NotificationRequest": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "object": {}, "userInfo": {},
            "postingStyle": {"enum": ["now", "asap", "whenIdle"]}, "coalesce": {"type": "array", "items": {"enum": ["name", "sender"]}}}},
  "SortDescriptor": {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}, "ascending": {"type": "boolean"},
            "selector": {"enum": ["compare:", "caseInsensitiveCompare:", "localizedStandardCompare:"]}}},
  "ControllerDescription": {"type": "object", "required": ["name", "kind", "content"], "properties": {
            "name": {"type": "string"}, "kind": {"enum": ["object", "array", "tree"]}, "content": {"type": "string"},
            "sortDescriptors": {"type": "array", "items": ref("SortDescriptor")}, "filterPredicate": {"type": ["string", "null"]},
            **{k: {"type": "boolean"} for k in ["avoidsEmptySelection", "preservesSelection", "selectsInsertedObjects", "clearsFilterPredicateOnInsertion",
                                                  "alwaysUsesMultipleValuesMarker", "automaticallyRearrangesObjects", "editable"]},
            "childrenKeyPath": {"type": "string"}, "leafKeyPath": {"type": "string"}, "countKeyPath": {"type": "string"}}},
}
doc = {"openapi": "3.1.0", "info": {"title": "Bindery", "version": "1.0.0",
        "description": "Cocoa Bindings as an HTTP service. The contract is API.md; this document describes the routes the server has."},
       "servers": [{"url": "http://127.0.0.1:8080"}], "paths": paths, "components": {"schemas": schemas}}
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
with open(os.path.join(root, "Public", "openapi.json"), "w") as f:
    json.dump(doc, f, indent=1, ensure_ascii=False)
    f.write("\n")
