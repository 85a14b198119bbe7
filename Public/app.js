// Bindery demo: a master–detail employee browser bound to server-side controllers.
//
// The page creates two array controllers of its own (so each tab has its own selection):
//   departments-<tab>  content "Department"
//   employees-<tab>    content "@departments-<tab>.selection.employees"
// and, on the first Remove, a third one that deletes employees in one undoable step:
//   remover-<tab>      content "Employee" (entity mode: its `remove` deletes the selected objects)
// It renders their arrangedObjects, drives their selectionIndexes, sortDescriptors and
// filterPredicate, edits through the employees controller's pending edits and selection proxy, and
// stays live with one long-poll on the store's change feed (GET /changes): any committed change, by
// anyone, re-reads the controllers. One long-poll per tab keeps within the browser's six connections
// per host even with several tabs open.
'use strict';

(() => {
  const FIELDS = ['firstName', 'lastName', 'salary', 'hireDate', 'manager', 'active'];
  const POLL_TIMEOUT = 25; // seconds the server may hold a long-poll
  const FEED_LIMIT = 60;
  const MARKER_TEXT = {
    NoSelection: 'No selection',
    MultipleValues: 'Multiple values',
    NotApplicable: 'Not applicable',
  };
  const SORTS = {
    name: [
      { key: 'lastName', selector: 'localizedStandardCompare:' },
      { key: 'firstName', selector: 'localizedStandardCompare:' },
    ],
    salary: [{ key: 'salary', selector: 'compare:' }],
    hireDate: [{ key: 'hireDate', selector: 'compare:' }],
    manager: [
      { key: 'manager.lastName', selector: 'localizedStandardCompare:' },
      { key: 'manager.firstName', selector: 'localizedStandardCompare:' },
    ],
    active: [{ key: 'active', selector: 'compare:' }],
  };

  const tab = Math.random().toString(36).slice(2, 10).padEnd(8, '0');
  const DEP = `departments-${tab}`;
  const EMP = `employees-${tab}`;
  const REMOVER = `remover-${tab}`;
  // Seconds after which the server removes the page's controllers when nothing names them: a page closed
  // without deleting them (or crashed) leaves nothing for good. A page hidden that long re-creates them.
  const IDLE_TIMEOUT = 900;

  const $ = (id) => document.getElementById(id);
  const el = {
    depList: $('departments-list'),
    depEmpty: $('departments-empty'),
    depCount: $('departments-count'),
    grid: $('employees-grid'),
    body: $('employees-body'),
    empEmpty: $('employees-empty'),
    empSubtitle: $('employees-subtitle'),
    filter: $('filter'),
    predicate: $('predicate'),
    add: $('add'),
    remove: $('remove'),
    form: $('employee-form'),
    fieldset: $('employee-fieldset'),
    commit: $('commit'),
    discard: $('discard'),
    error: $('error'),
    notice: $('notice'),
    edited: $('edited'),
    summary: $('selection-summary'),
    undo: $('undo'),
    redo: $('redo'),
    connection: $('connection'),
    retry: $('retry'),
    feed: $('feed-list'),
    feedEmpty: $('feed-empty'),
    names: $('controller-names'),
  };
  const field = Object.fromEntries(FIELDS.map((k) => [k, $(`field-${k}`)]));

  const state = {
    departments: [],
    depSelection: [],
    dep: null, // the departments controller's description
    employees: [],
    emp: null, // the employees controller's description
    selection: null, // the selection proxy: key → value or {$marker}
    edits: {},
    people: new Map(), // Employee id → {firstName, lastName}
    actions: { undo: false, redo: false },
    anchor: null, // id of the employee the shift-selection extends from (see anchorIndex)
    lead: null, // id of the employee the keyboard is on: the moving end of a shift-selection (see leadIndex)
    marked: null, // the selection (subjectOf its ids) the page itself last asked for: anchor and lead belong to it
    ready: false,
  };
  const dirty = new Set(); // fields typed into and not yet sent as pending edits
  const invalid = new Map(); // field → what is wrong with what it says (not sent; kept on screen until fixed)
  const refused = new Map(); // field → what the server said when it refused its value (see setRefused)
  const typing = new Set(); // fields the user has typed into since they got focus: not re-rendered until blur
  const editTimers = new Map();
  const inflightEdits = new Set();
  // Edits that could not be sent (the server was unreachable), by key: sent when a sync next succeeds.
  const unsentEdits = new Map();
  // The filter box's text when setting it could not be sent, as for the edits (after them: a filter commits them).
  let unsentFilter = null;
  let lastPredicate = null;
  let filterTimer = null;
  let managerSignature = '';
  let generation = 0; // bumped by every local mutation; a sync started before one is not rendered
  let stopped = false;
  let pollAbort = null;
  let removerCreated = false;
  let connectionError = false; // the error shown is a request that failed because the server was away
  const names = new Map(); // every object id → name the page has read, kept after the object goes (the feed)
  const stats = { resyncs: 0, reconnects: 0 };

  // ---------------------------------------------------------------------------------------------
  // HTTP

  class APIError extends Error {
    constructor(status, body, method, path, { text = '', retryAfter = null } = {}) {
      const err = (body && body.error) || {};
      const plain = !body && text && text.length < 200 ? text.trim() : '';
      super(err.message || plain || `${method} ${path} failed with ${status}`);
      this.status = status;
      this.code = err.code || 'http-error';
      this.details = err;
      this.retryAfter = retryAfter; // seconds the server asked to wait before trying again (503), or null
    }
  }

  // Seconds of a Retry-After header (delta-seconds or an HTTP date), or null.
  function retryAfterOf(res) {
    const header = res.headers.get('Retry-After');
    if (!header) return null;
    const seconds = /^\d+$/.test(header.trim()) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
    return Number.isFinite(seconds) ? Math.min(Math.max(Math.ceil(seconds), 1), 60) : null;
  }

  // What the connection chip says about a failed request: the server's own answer when there was one
  // (503 busy, 500, a lost controller), "unreachable" only when no HTTP answer came at all.
  function failureLabel(e) {
    if (!(e instanceof APIError)) return 'Server unreachable';
    if (e.code === 'no-such-controller') return 'Controllers lost';
    if (e.status === 503) return 'Server busy';
    return `Server error ${e.status}`;
  }

  // A new key for every change the page asks for: a browser resends a request whose connection closed before its
  // answer came, whatever its method, and the server carries out a request with a key it has seen only once.
  function idempotencyKey() {
    if (typeof crypto.randomUUID === 'function') return crypto.randomUUID(); // secure contexts only
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  }

  async function api(method, path, body, options = {}) {
    const init = { method, headers: { Accept: 'application/json' }, signal: options.signal };
    if (method !== 'GET' && method !== 'HEAD') init.headers['Idempotency-Key'] = idempotencyKey();
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers['Content-Type'] = 'application/json';
    }
    const res = await fetch(path, init);
    const text = await res.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
    if (!res.ok) throw new APIError(res.status, data, method, path, { text, retryAfter: retryAfterOf(res) });
    const seq = Number(res.headers.get('X-Store-Seq'));
    return { data, seq: Number.isFinite(seq) ? seq : null, status: res.status };
  }

  const ctl = (name, rest = '') => `/controllers/${encodeURIComponent(name)}${rest}`;
  const isMarker = (v) => v !== null && typeof v === 'object' && typeof v.$marker === 'string';
  const idOf = (o) => (o && (o.$id || o.$ref)) || null;

  // ---------------------------------------------------------------------------------------------
  // Sync: read the controllers and render. Coalesced: one at a time, and one more if asked meanwhile.
  // Answers whether the last read succeeded.

  let syncing = null;
  let syncAgain = false;
  let syncFailure = null; // the error of the last sync when it failed (the page is not in step), else null
  let syncRetry = null; // a sync the server asked to retry later (503 with Retry-After)
  let pollLive = false; // the change feed's long-poll is answering
  let commitWhenBack = false; // Commit was pressed while the server could not be reached: made once it is back

  function requestSync() {
    if (syncing) {
      syncAgain = true;
      return syncing;
    }
    syncing = (async () => {
      let ok = false;
      let restored = false;
      let failure = null;
      do {
        syncAgain = false;
        try {
          await syncOnce();
          ok = true;
          if (unsentEdits.size) {
            await sendUnsentEdits();
            syncAgain = true; // show them as the server now has them
          }
          if (commitWhenBack) {
            await sendUnsentCommit();
            syncAgain = true;
          }
          if (unsentFilter !== null) {
            await sendUnsentFilter();
            syncAgain = true;
          }
        } catch (e) {
          ok = false;
          failure = e;
          fullWanted = true;
          if (e instanceof APIError && e.code === 'no-such-controller' && !stopped && !restored) {
            // The server restarted, or another client deleted them: create them again (once per sync).
            setConnection('resync', 'Re-creating controllers…');
            try {
              await restoreControllers();
              restored = true;
              appendNote('This page’s controllers were gone from the server: re-created');
              syncAgain = true;
              continue;
            } catch (again) {
              failure = again;
            }
          }
        }
      } while (syncAgain && !stopped);
      clearTimeout(syncRetry);
      syncRetry = null;
      if (ok) {
        const wasFailing = syncFailure !== null;
        syncFailure = null;
        if (restored || wasFailing) clearConnectionError(); // what failed meanwhile is moot now
        // The server is back: the change feed reconnects now rather than when its back-off ends (also after any
        // request of the user's that the server answered, as each is followed by a sync; see mutate).
        if (!pollLive) wake();
        else if (el.connection.dataset.state !== 'live') setConnection('live', 'Live');
      } else if (!stopped) {
        reportSyncFailure(failure);
      }
      return ok;
    })().finally(() => {
      syncing = null;
    });
    return syncing;
  }

  // Sends the edits typed while the server could not be reached; one it refuses now is named at its
  // field, and one that still gets no answer waits for the next sync.
  async function sendUnsentEdits() {
    const waiting = [...unsentEdits];
    unsentEdits.clear();
    let sent = 0;
    for (const [index, [key, value]] of waiting.entries()) {
      try {
        await api('PUT', ctl(EMP, `/edits/${key}`), value);
        setFieldError(key, null);
        sent += 1;
      } catch (e) {
        if (!(e instanceof APIError)) {
          for (const [k, v] of waiting.slice(index)) unsentEdits.set(k, v);
          throw e;
        }
        setFieldError(key, refusalText(e.details, e.message));
      }
    }
    if (sent) appendNote(`${sent} edit(s) typed while the server could not be reached were sent`);
  }

  // Makes the commit pressed while the server could not be reached, after the edits typed meanwhile went.
  async function sendUnsentCommit() {
    commitWhenBack = false;
    showNotice(null); // made now, or refused (said above the form), or waiting again (said again)
    try {
      await api('POST', ctl(EMP, '/commitEditing'));
      typing.clear();
      appendNote('The commit pressed while the server could not be reached was made');
    } catch (e) {
      if (!(e instanceof APIError)) {
        commitWhenBack = true;
        showNotice(COMMIT_WHEN_BACK);
        throw e;
      }
      showError(e);
    }
  }

  // Sets the filter typed while the server could not be reached, unless the box has changed since (its own request
  // then decides). A refusal is shown, and the box then follows the controller's filter again (render).
  async function sendUnsentFilter() {
    const text = unsentFilter;
    unsentFilter = null;
    if (filterTimer !== null || el.filter.value !== text) return;
    try {
      await api('PUT', ctl(EMP, '/filterPredicate'), predicateFor(text));
      appendNote('The filter typed while the server could not be reached was set');
    } catch (e) {
      if (!(e instanceof APIError)) {
        unsentFilter = text;
        throw e;
      }
      showError(e);
    }
  }

  // The page could not read its controllers. With an HTTP answer, says what the server said (the chip
  // names it, the message shows above the form) and, when the server gave a Retry-After, tries again
  // then; without one, the server is unreachable and the change feed's reconnection takes over.
  function reportSyncFailure(e) {
    syncFailure = e;
    if (!(e instanceof APIError)) {
      setConnection('offline', failureLabel(e), '', { retry: !pollLive });
      connectionLost();
      return;
    }
    showError(e, { connection: true });
    if (e.retryAfter) {
      const until = Date.now() + e.retryAfter * 1000;
      const tick = () => {
        const left = until - Date.now();
        if (left <= 0 || stopped) {
          syncRetry = null;
          if (!stopped) requestSync();
          return;
        }
        setConnection('offline', `${failureLabel(e)}, retrying`, e.message, { count: ` in ${Math.ceil(left / 1000)}s` });
        syncRetry = setTimeout(tick, ((left - 1) % 1000) + 1); // to the next whole second
      };
      tick();
    } else {
      setConnection('offline', failureLabel(e), e.message, { retry: true });
    }
  }

  // On a large store the employees list (arrangedObjects) and everyone's names (for the manager column and picker)
  // are megabytes: a sync reads them again only when a change since the last sync touches them (a row shown, the
  // department shown, a name) or the list is another one now (department, sort, filter, count). The store's change
  // feed since `classifiedSeq` says which; every change up to it is known to be shown or not to matter.
  let classifiedSeq = null;
  let fullWanted = false; // the next sync reads everything (asked for, or the last one failed)
  let employeesRead = null; // what the list read was for: {dep, sort, filter, count}
  let employeesVersion = 0; // bumped with every read of the list: the rows are rendered again
  let peopleVersion = 0; // the same for the names

  const listKey = (dep, deps, emp) => ({
    dep: idOf((deps || [])[((dep && dep.selectionIndexes) || [])[0]]),
    sort: JSON.stringify((emp && emp.sortDescriptors) || []),
    filter: (emp && emp.filterPredicate) ?? null,
    count: emp && emp.count,
  });

  // What the changes make stale: the list read (`employees`), the names read (`people`), and the changes to rows
  // shown that are applied to them as they are (`patches`: a key set to a value that moves no row).
  // An employee's own stored keys: a sort by them moves a row only when that row changes.
  const OWN_KEYS = new Set(['firstName', 'lastName', 'salary', 'hireDate', 'active']);
  const PATCHED_KEYS = new Set([...OWN_KEYS, 'manager']);
  // Keys of a row that nothing draws or reads: taken out of the rows read (so that nothing can use them stale), and
  // their changes matter to no row (a manager change also changes the managers' `directReports`).
  const UNDRAWN_KEYS = ['directReports'];
  // A setting is applied as a whole: the feed is asked again from `classifiedSeq`, which may be before changes the
  // rows hold already, and applying those again, in order, ends where the rows were (a to-many change would not).
  const patchable = (c) => PATCHED_KEYS.has(c.keyPath) && c.kind === 'setting' && 'new' in c;

  function staleness(changes, read) {
    const out = { employees: false, people: false, patches: [] };
    const shown = new Set(state.employees.map(idOf));
    let sortKeys = [];
    try {
      sortKeys = JSON.parse(read.sort).map((d) => d && d.key);
    } catch {
      sortKeys = [null];
    }
    // A sort through other objects (a relationship, a derived key, a key path: `manager.salary`), or a filter (which
    // may read them too): a change to any object may move, show or hide a row.
    const anyChange = Boolean(read.filter) || sortKeys.some((k) => !OWN_KEYS.has(k));
    for (const c of changes) {
      const t = c.target;
      const employee = typeof t === 'string' && t.startsWith('Employee/');
      if (!employee && !(typeof t === 'string' && t.startsWith('Department/'))) return { employees: true, people: true };
      if (employee && (c.keyPath === 'firstName' || c.keyPath === 'lastName')) out.people = true;
      if (employee && !anyChange && UNDRAWN_KEYS.includes(c.keyPath)) continue;
      if (!anyChange && shown.has(t) && patchable(c) && !sortKeys.includes(c.keyPath)) {
        out.patches.push(c);
      } else if (anyChange || shown.has(t) || t === read.dep) out.employees = true;
      else if (read.dep && [...refsOf(c.new), ...refsOf(c.old)].includes(read.dep)) out.employees = true;
    }
    return out;
  }

  async function syncOnce() {
    const started = generation;
    const light = () =>
      Promise.all([
        api('GET', ctl(DEP)),
        api('GET', ctl(DEP, '/arrangedObjects')),
        api('GET', ctl(EMP)),
        api('GET', ctl(EMP, '/selection')),
        api('GET', ctl(EMP, '/edits')),
        api('GET', '/actions').catch(() => ({ data: null, seq: null })),
      ]);
    // The changes since the last sync, read with the rest: when they reach as far as the reads, they say whether the
    // list and the names need reading again.
    const wanted = fullWanted;
    const known = state.ready && classifiedSeq !== null && employeesRead && !wanted;
    fullWanted = false;
    const since = known
      ? api('GET', `/changes?since=${classifiedSeq}&timeout=0`).catch(() => null) // unanswered: read everything
      : null;
    let [reads, changes] = await Promise.all([light(), since]);
    let [dep, deps, emp] = reads;
    const stale = { employees: true, people: true, patches: [] };
    let upTo = null;
    const feed = (answer, from) =>
      answer && answer.data && Array.isArray(answer.data.changes) && typeof answer.data.last === 'number' &&
      answer.data.last >= from ? answer.data : null;
    let data = feed(changes, classifiedSeq);
    const lightSeqs = reads.map((r) => r.seq).filter((x) => x !== null);
    // A write between the feed's answer and the reads: the feed once more, up to them, rather than everything.
    if (data && lightSeqs.some((x) => x > data.last)) {
      const more = feed(await api('GET', `/changes?since=${data.last}&timeout=0`).catch(() => null), data.last);
      data = more && { changes: [...data.changes, ...more.changes], last: more.last };
    }
    if (data && lightSeqs.every((x) => x <= data.last)) {
      Object.assign(stale, staleness(data.changes, employeesRead));
      upTo = data.last;
      const now = listKey(dep.data, deps.data, emp.data);
      if (['dep', 'sort', 'filter', 'count'].some((k) => now[k] !== employeesRead[k])) stale.employees = true;
    }
    let emps = null;
    let people = null;
    if (stale.employees || stale.people) {
      // Read again with the rest, at one moment as far as can be (the selection's indexes are of this list).
      [reads, emps, people] = await Promise.all([
        light(),
        stale.employees ? api('GET', ctl(EMP, '/arrangedObjects')) : null,
        stale.people ? api('GET', '/objects/Employee?keys=firstName,lastName&sort=lastName,firstName') : null,
      ]);
      [dep, deps, emp] = reads;
    }
    const [, , , selection, edits, actions] = reads;
    const seqs = [...reads.slice(0, 5), emps, people].filter((r) => r).map((r) => r.seq).filter((s) => s !== null);
    if (started !== generation) {
      syncAgain = true; // a local change raced this read; read again rather than flash stale state
      if (wanted) fullWanted = true;
      return seqs.length ? Math.min(...seqs) : null;
    }
    state.departments = deps.data || [];
    state.dep = dep.data;
    state.depSelection = (dep.data && dep.data.selectionIndexes) || [];
    state.emp = emp.data;
    if (emps) {
      state.employees = emps.data || [];
      for (const e of state.employees) for (const key of UNDRAWN_KEYS) delete e[key];
      employeesVersion += 1;
      employeesRead = listKey(dep.data, deps.data, emp.data);
    } else if (stale.patches.length) {
      const rows = new Map(state.employees.map((e) => [idOf(e), e]));
      for (const c of stale.patches) rows.get(c.target)[c.keyPath] = c.new;
      employeesVersion += 1;
    }
    if (stale.employees && stale.people) classifiedSeq = seqs.length ? Math.min(...seqs) : null;
    else if (upTo !== null) classifiedSeq = Math.min(upTo, ...seqs);
    state.selection = selection.data || {};
    if (selecting && selecting.settledAt !== null && started >= selecting.settledAt) selecting = null;
    state.edits = edits.data || {};
    if (people) {
      state.people = new Map(
        ((people.data && people.data.objects) || []).map((o) => [o.$id, { firstName: o.firstName, lastName: o.lastName }]),
      );
      peopleVersion += 1;
      for (const [id, p] of state.people) names.set(id, personName(p));
    }
    for (const d of state.departments) names.set(d.$id, d.name);
    if (actions.data && Array.isArray(actions.data.actions)) {
      const enabled = (name) => actions.data.actions.some((a) => a.action === name && a.enabled);
      state.actions = { undo: enabled('undo'), redo: enabled('redo') };
    }
    state.ready = true;
    // Read at one seq: the reads in parallel may straddle a change (edits already dropped, the row still there).
    noticeDroppedEdits(seqs.length > 0 && Math.min(...seqs) === Math.max(...seqs));
    render();
    return seqs.length ? Math.min(...seqs) : null;
  }

  // A local mutation: invalidates reads in flight, then re-reads.
  async function mutate(fn) {
    generation += 1;
    pendingShown = null; // what becomes of the pending edits now is the user's doing
    showNotice(null);
    try {
      return await fn();
    } finally {
      generation += 1;
      requestSync();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Rendering

  const money = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: 0 });
  const compactMoney = new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency: 'USD',
    notation: 'compact',
    maximumFractionDigits: 1,
  });
  const dateFormat = new Intl.DateTimeFormat('en-US', { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

  const personName = (p) => (p ? [p.firstName, p.lastName].filter((s) => s).join(' ') : '');
  // The first character as the reader sees it (a grapheme: an emoji with its modifiers, a letter with its accents),
  // not a UTF-16 unit, which would split an emoji into a lone surrogate.
  const graphemes = typeof Intl.Segmenter === 'function' ? new Intl.Segmenter('en', { granularity: 'grapheme' }) : null;
  const firstCharacter = (s) => {
    if (!s) return '';
    if (graphemes) {
      const first = graphemes.segment(s)[Symbol.iterator]().next();
      return first.done ? '' : first.value.segment;
    }
    return Array.from(s)[0]; // by code point
  };
  // Upper-casing can lengthen a character ("ß" is "SS"): one character of it.
  const initial = (s) => firstCharacter(firstCharacter((s || '').trim()).toUpperCase());
  const initials = (p) => initial(p.firstName) + initial(p.lastName) || '?';
  // A date's day where the user is, as YYYY-MM-DD (toISOString would give UTC's, a day off near midnight).
  const localDate = (d) =>
    `${String(d.getFullYear()).padStart(4, '0')}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
  const formatDate = (v) => (v && v.$date ? dateFormat.format(new Date(v.$date)) : '');

  function h(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') node.className = v;
      else if (k === 'text') node.textContent = v;
      else node.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  // Makes `node` what `model` (a fresh h() tree) says, keeping the nodes that stay. A list rebuilt between a
  // mouse press and its release loses the click (the row pressed is gone), and a screen reader its place.
  function morph(node, model) {
    for (const { name } of [...node.attributes]) if (!model.hasAttribute(name)) node.removeAttribute(name);
    for (const { name, value } of model.attributes) if (node.getAttribute(name) !== value) node.setAttribute(name, value);
    morphChildren(node, [...model.childNodes]);
  }

  // Children with a data-id (rows) are matched by it, others by place; only nodes whose place changed move.
  function morphChildren(parent, models) {
    const old = [...parent.childNodes];
    const byId = new Map(old.filter((n) => n.dataset && n.dataset.id).map((n) => [n.dataset.id, n]));
    const nodes = models.map((m, i) => {
      const keyed = m.dataset && m.dataset.id;
      const existing = keyed ? byId.get(m.dataset.id) : old[i];
      if (!existing || existing.nodeName !== m.nodeName || (!keyed && existing.dataset && existing.dataset.id)) return m;
      if (m.nodeType === Node.TEXT_NODE) {
        if (existing.data !== m.data) existing.data = m.data;
      } else {
        morph(existing, m);
      }
      return existing;
    });
    // The nodes that go are removed first: left in place, they would make every node after them look moved, and a
    // node moved is taken out and put back, which loses a click pressed on it as a rebuild does.
    const kept = new Set(nodes);
    for (const n of old) if (!kept.has(n)) n.remove();
    // The nodes that keep their order among themselves (a longest increasing run of their old places) stay put;
    // only the others are moved, so a row that keeps its place is never taken out, whatever moves around it.
    const at = new Map([...parent.childNodes].map((n, i) => [n, i]));
    const stay = steadyRun(nodes.map((n) => (at.has(n) ? at.get(n) : -1)));
    let next = null;
    for (let i = nodes.length - 1; i >= 0; i -= 1) {
      if (!stay.has(i)) parent.insertBefore(nodes[i], next);
      next = nodes[i];
    }
  }

  // The positions of a longest strictly increasing run of `seq` (entries < 0, new nodes, are never in it).
  function steadyRun(seq) {
    const tails = []; // tails[k]: position in seq of the smallest tail of a run of length k + 1
    const prev = new Array(seq.length).fill(-1);
    seq.forEach((v, i) => {
      if (v < 0) return;
      let lo = 0;
      let hi = tails.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (seq[tails[mid]] < v) lo = mid + 1;
        else hi = mid;
      }
      if (lo > 0) prev[i] = tails[lo - 1];
      tails[lo] = i;
    });
    const run = new Set();
    for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = prev[i]) run.add(i);
    return run;
  }

  function render() {
    renderDepartments();
    renderEmployees();
    renderForm();
    el.undo.disabled = !state.actions.undo;
    el.redo.disabled = !state.actions.redo;
  }

  let departmentsSignature = '';
  let employeesSignature = '';

  function renderDepartments() {
    const signature = JSON.stringify([state.departments, state.depSelection]);
    if (signature === departmentsSignature) return; // unchanged: keep the nodes (and what a reader points at)
    departmentsSignature = signature;
    morphChildren(
      el.depList,
      state.departments.map((d, i) => {
        const selected = state.depSelection.includes(i);
        return h(
          'li',
          {
            role: 'option',
            id: `dep-${i}`,
            class: selected ? 'selected' : '',
            'aria-selected': selected ? 'true' : 'false',
            'data-test': 'department-row',
            'data-id': d.$id,
            'data-index': i,
          },
          h('span', { class: 'dep-name', text: d.name }),
          h(
            'span',
            { class: 'dep-meta' },
            `${d.headcount ?? 0} ${d.headcount === 1 ? 'person' : 'people'} · ${compactMoney.format(d.payroll || 0)}`,
          ),
        );
      }),
    );
    el.depEmpty.hidden = state.departments.length > 0;
    const active = state.depSelection.length ? `dep-${state.depSelection[0]}` : null;
    if (active) el.depList.setAttribute('aria-activedescendant', active);
    else el.depList.removeAttribute('aria-activedescendant');
    // Moved to with the keyboard: in view, also in the narrow layout's horizontal strip.
    if (active && document.activeElement === el.depList) {
      document.getElementById(active).scrollIntoView({ block: 'nearest', inline: 'nearest' });
    }
    el.depCount.textContent = String(state.departments.length);
  }

  // A long list (a large store's department) renders only the rows in view and a few around them, between two
  // spacer rows as tall as the rows left out; a short one renders every row.
  const VIRTUAL_FROM = 300;
  const OVERSCAN = 15;
  let rowHeight = 45; // px: the rendered rows' mean height, measured after each render
  const tableWrap = el.grid.closest('.table-wrap') || el.grid.parentElement;

  // The rows [first, last) to render of n.
  function rowWindow(n) {
    if (n < VIRTUAL_FROM) return [0, n];
    // The part of the body in view, in the body's own coordinates (the list scrolls in its box, or with the page).
    const body = el.body.getBoundingClientRect();
    const box = tableWrap.getBoundingClientRect();
    const top = Math.max(box.top, 0) - body.top;
    const bottom = Math.min(box.bottom, window.innerHeight || box.bottom) - body.top;
    const first = Math.max(0, Math.min(n - 1, Math.floor(top / rowHeight) - OVERSCAN));
    const last = Math.min(n, Math.max(first + 1, Math.ceil(bottom / rowHeight) + OVERSCAN));
    return [first, last];
  }

  function spacer(key, rows) {
    return h(
      'tr',
      { class: 'spacer', 'aria-hidden': 'true', 'data-id': key },
      h('td', { colspan: 5, style: `height:${Math.round(rows * rowHeight)}px` }),
    );
  }

  function employeeRow(e, i, sel, active, virtual) {
    const selected = sel.has(i);
    const manager = e.manager ? state.people.get(e.manager.$ref) : null;
    const classes = [selected ? 'selected' : '', e.active === false ? 'inactive' : '', i === active ? 'lead' : ''];
    return h(
      'tr',
      {
        id: `emp-${i}`,
        class: classes.filter((c) => c).join(' '),
        'aria-selected': selected ? 'true' : 'false',
        'aria-rowindex': virtual ? i + 2 : null, // the header row is 1
        'data-test': 'employee-row',
        'data-id': e.$id,
        'data-index': i,
      },
      h(
        'td',
        { class: 'name-cell' },
        h(
          'div',
          { class: 'name-wrap' },
          h('span', { class: 'avatar', 'aria-hidden': 'true', 'data-hue': hueOf(e.$id), text: initials(e) }),
          h('span', { class: 'name', text: personName(e) || '(no name)' }),
        ),
      ),
      h('td', { class: 'num', text: typeof e.salary === 'number' ? money.format(e.salary) : '—' }),
      h('td', { class: 'col-hire', text: formatDate(e.hireDate) || '—' }),
      h('td', { class: 'col-manager', text: manager ? personName(manager) : '—' }),
      h(
        'td',
        { class: 'col-active' },
        h('span', { class: e.active === false ? 'pill pill-off' : 'pill pill-on', text: e.active === false ? 'Inactive' : 'Active' }),
      ),
    );
  }

  // The rows (those in view of a long list); unchanged ones keep their nodes.
  function renderEmployeeRows() {
    const emp = state.emp || {};
    const n = state.employees.length;
    const sel = new Set(emp.selectionIndexes || []);
    const active = leadIndex() ?? (emp.selectionIndexes || [])[0];
    const virtual = n >= VIRTUAL_FROM;
    const [first, last] = rowWindow(n);
    const signature = JSON.stringify([employeesVersion, peopleVersion, emp.selectionIndexes, active, first, last, rowHeight]);
    if (signature === employeesSignature) return active;
    employeesSignature = signature;
    const rows = [];
    for (let i = first; i < last; i += 1) rows.push(employeeRow(state.employees[i], i, sel, active, virtual));
    if (virtual) {
      rows.unshift(spacer('#above', first));
      rows.push(spacer('#below', n - last));
      el.grid.setAttribute('aria-rowcount', String(n + 1));
    } else {
      el.grid.removeAttribute('aria-rowcount');
    }
    morphChildren(el.body, rows);
    if (virtual && last > first) {
      // The spacers stand for rows of the height the rendered ones have.
      const shown = [...el.body.children].filter((r) => r.dataset.test === 'employee-row');
      const height = shown.reduce((sum, r) => sum + r.getBoundingClientRect().height, 0) / (shown.length || 1);
      if (height > 0 && Math.abs(height - rowHeight) > 0.5) {
        rowHeight = height;
        el.body.firstElementChild.firstElementChild.style.height = `${Math.round(first * rowHeight)}px`;
        el.body.lastElementChild.firstElementChild.style.height = `${Math.round((n - last) * rowHeight)}px`;
        employeesSignature = JSON.stringify([employeesVersion, peopleVersion, emp.selectionIndexes, active, first, last, rowHeight]);
      }
    }
    // The keyboard's row, while it is drawn (WAI-ARIA: the attribute names an element of the page).
    if (active !== undefined && document.getElementById(`emp-${active}`)) {
      el.grid.setAttribute('aria-activedescendant', `emp-${active}`);
    } else {
      el.grid.removeAttribute('aria-activedescendant');
    }
    return active;
  }

  // Scrolling a long list renders the rows come into view (once a frame).
  let rowsFrame = null;
  function rowsScrolled() {
    if (rowsFrame !== null || state.employees.length < VIRTUAL_FROM) return;
    rowsFrame = requestAnimationFrame(() => {
      rowsFrame = null;
      renderEmployeeRows();
    });
  }
  tableWrap.addEventListener('scroll', rowsScrolled, { passive: true });
  window.addEventListener('scroll', rowsScrolled, { passive: true });
  window.addEventListener('resize', rowsScrolled);

  // Brings row `index` into view (rendering it first when the list is long and it is not).
  function revealRow(index) {
    let row = document.getElementById(`emp-${index}`);
    if (!row && state.employees.length >= VIRTUAL_FROM) {
      const body = el.body.getBoundingClientRect();
      const box = tableWrap.getBoundingClientRect();
      tableWrap.scrollTop += body.top + index * rowHeight - box.top - box.height / 2;
      renderEmployeeRows();
      row = document.getElementById(`emp-${index}`);
    }
    if (row) row.scrollIntoView({ block: 'nearest' });
  }

  function renderEmployees() {
    const emp = state.emp || {};
    // The row the keyboard is on (aria-activedescendant), selected or not (Ctrl+Arrow moves it alone).
    renderEmployeeRows();
    const rows = state.employees;
    el.empEmpty.hidden = rows.length > 0;
    el.empEmpty.textContent = state.depSelection.length
      ? emp.filterPredicate
        ? 'No employees match the filter.'
        : 'No employees yet.'
      : state.departments.length
        ? 'Select a department.'
        : 'No departments, so no employees.';
    const dep = state.departments[state.depSelection[0]];
    el.empSubtitle.textContent = dep ? `in ${dep.name} · ${state.employees.length}` : '';

    // Sort indicators from the controller's sortDescriptors.
    const primary = (emp.sortDescriptors || [])[0];
    for (const th of el.grid.querySelectorAll('th[data-sort]')) {
      const spec = SORTS[th.dataset.sort];
      const active = primary && spec[0].key === primary.key;
      th.setAttribute('aria-sort', active ? (primary.ascending ? 'ascending' : 'descending') : 'none');
    }

    // The filter box follows the controller unless the user has typed text not yet answered (the controller
    // clears its filter on insertion, for instance, and another client may set it).
    const predicate = emp.filterPredicate ?? null;
    if (predicate !== lastPredicate && filterTimer === null && unsentFilter === null) showFilter(predicate);
    showPredicate(predicate);

    el.add.disabled = !(state.depSelection.length && emp.canAdd !== false);
    el.remove.disabled = !(emp.selectionIndexes && emp.selectionIndexes.length);
  }

  function hueOf(id) {
    let n = 2166136261;
    for (const c of String(id)) n = Math.imul(n ^ c.charCodeAt(0), 16777619) >>> 0;
    return n % 8;
  }

  // The people a selected employee may report to: everyone but the selected employees themselves (the
  // model would take an employee as their own manager, as Core Data would; the page does not offer it).
  // A manager set elsewhere that is now excluded stays listed, disabled, so the field shows the truth.
  // The options are made again only when the names are read again (20,000 of them on a large store); a selection
  // change hides the selected employees' options (the one bound shows, disabled, as "(self)").
  let managerPeople = -1;
  const managerOptions = new Map(); // id → its option
  let managerMarked = new Map(); // id → whether its option shows as "(self)" (else hidden)
  function renderManagerOptions() {
    const emp = state.emp || {};
    const selected = new Set((emp.selectionIndexes || []).map((i) => idOf(state.employees[i])).filter((x) => x));
    const bound = Object.prototype.hasOwnProperty.call(state.edits, 'manager') ? state.edits.manager : (state.selection || {}).manager;
    const current = bound && bound.$ref ? bound.$ref : null;
    const signature = JSON.stringify([peopleVersion, [...selected], current]);
    if (signature === managerSignature) return;
    managerSignature = signature;
    const select = field.manager;
    const keep = select.value;
    const text = (id, self) => (personName(state.people.get(id)) || id) + (self ? ' (self)' : '');
    if (managerPeople !== peopleVersion) {
      managerPeople = peopleVersion;
      managerOptions.clear();
      managerMarked = new Map();
      const options = [...state.people.keys()].map((id) => {
        const option = h('option', { value: id, text: text(id, false) });
        managerOptions.set(id, option);
        return option;
      });
      select.replaceChildren(
        h('option', { value: '__marker__', hidden: true, disabled: true, text: '' }),
        h('option', { value: '', text: '— No manager —' }),
        ...options,
      );
    }
    const marked = new Map([...selected].filter((id) => managerOptions.has(id)).map((id) => [id, id === current]));
    for (const [id, self] of managerMarked) {
      if (marked.get(id) === self) continue;
      const option = managerOptions.get(id);
      if (!option) continue;
      option.hidden = false;
      option.disabled = false;
      option.textContent = text(id, false);
    }
    for (const [id, self] of marked) {
      if (managerMarked.get(id) === self) continue;
      const option = managerOptions.get(id);
      option.hidden = !self;
      option.disabled = true;
      option.textContent = text(id, self);
    }
    managerMarked = marked;
    select.value = keep;
  }

  // The employees the form is for, as a set of ids (a rename that only reorders them changes nothing): what is
  // typed into it belongs to them.
  let formSubject = null;
  const typedFor = new Map(); // key → the formSubject a text field was last typed in for
  const subjectOf = (ids) => JSON.stringify([...ids].sort());
  // A selection change on its way (a slow link): the rows show it at once, but the form holds the values of the
  // employees selected before until the server has taken it and they are read again. After a moment the form says
  // so and takes no typing, which would otherwise go to employees no longer shown as selected.
  const SELECTING_SHOWN_AFTER = 300; // ms: a quick answer never flashes the form
  let selecting = null; // { shown, settledAt }: settledAt is the generation whose sync shows the new selection
  let loadingShown = false;
  let focusedWhenLoading = null; // the field that had the focus when the form began loading: it gets it back after

  function renderForm() {
    // Selected elsewhere (another client, or the selected employee went away): what was typed for the
    // employees selected before is dropped, not left on screen to be sent as an edit of these (the page's
    // own selection changes send it first).
    const subject = subjectOf(((state.emp && state.emp.selectionIndexes) || []).map((i) => idOf(state.employees[i])));
    if (subject !== formSubject) {
      if (formSubject !== null) dropLocalEdits();
      formSubject = subject;
    }
    renderManagerOptions();
    const selection = state.selection || {};
    const count = ((state.emp && state.emp.selectionIndexes) || []).length;
    const noSelection = count === 0 || isMarker(selection.firstName) && selection.firstName.$marker === 'NoSelection';
    const loading = !!(selecting && selecting.shown);
    if (loading && !loadingShown) {
      const active = document.activeElement;
      focusedWhenLoading = active && el.fieldset.contains(active) ? active : null;
    }
    el.fieldset.disabled = noSelection || loading;
    el.form.classList.toggle('is-empty', noSelection);
    if (loading) el.form.setAttribute('aria-busy', 'true');
    else el.form.removeAttribute('aria-busy');

    for (const key of FIELDS) {
      const input = field[key];
      const edited = Object.prototype.hasOwnProperty.call(state.edits, key);
      input.closest('.field').classList.toggle('is-edited', edited);
      // The user's typing wins until it is sent, and while the field keeps the focus (rewriting a
      // date input's value would also reset the segment being typed).
      if (typing.has(key) && document.activeElement !== input) typing.delete(key); // disabled meanwhile
      if (dirty.has(key) || editTimers.has(key) || typing.has(key) || invalid.has(key)) continue;
      const value = edited ? state.edits[key] : selection[key];
      showValue(key, input, noSelection ? { $marker: 'NoSelection' } : value);
    }

    // A field that says what the server refused (or what does not read) is an edit too: Discard takes it
    // back, and Commit points at it.
    const editing =
      Object.keys(state.edits).length > 0 ||
      dirty.size > 0 ||
      invalid.size > 0 ||
      unsentEdits.size > 0 ||
      (state.emp && state.emp.isEditing);
    el.edited.hidden = !editing;
    el.form.classList.toggle('is-editing', !!editing);
    el.commit.disabled = noSelection || loading || !editing;
    el.discard.disabled = !editing;

    // The field the user was in (Enter on a row puts the focus in First name) gets the focus back, unless the user
    // has gone elsewhere meanwhile (disabling the field left the focus on the table or on nothing).
    if (!loading && loadingShown && focusedWhenLoading) {
      const back = focusedWhenLoading;
      focusedWhenLoading = null;
      const now = document.activeElement;
      if (usable(back) && (!now || now === document.body || now === el.grid)) back.focus();
    }
    loadingShown = loading;

    if (loading) el.summary.textContent = 'Loading…';
    else if (noSelection) el.summary.textContent = state.depSelection.length ? 'Nothing selected' : '';
    else if (count > 1) el.summary.textContent = `${count} employees`;
    else {
      const e = state.employees[state.emp.selectionIndexes[0]];
      el.summary.textContent = e ? e.$id : '';
    }
  }

  function showValue(key, input, value) {
    const marker = isMarker(value) ? value.$marker : null;
    const wrap = input.closest('.field');
    wrap.classList.toggle('is-multiple', marker === 'MultipleValues');
    input.disabled = marker === 'NotApplicable';
    if (input.type === 'checkbox') {
      input.indeterminate = marker === 'MultipleValues';
      input.checked = !marker && value === true;
      return;
    }
    if (input.tagName === 'SELECT') {
      const option = input.options[0];
      option.textContent = marker ? MARKER_TEXT[marker] : '';
      input.value = marker ? '__marker__' : value && value.$ref ? value.$ref : '';
      return;
    }
    if (key === 'hireDate') input.type = marker ? 'text' : 'date'; // a date input shows no placeholder
    input.placeholder = marker ? MARKER_TEXT[marker] : '';
    if (marker || value === null || value === undefined) {
      input.value = '';
    } else if (key === 'hireDate') {
      input.value = value.$date ? value.$date.slice(0, 10) : typeof value === 'string' ? value.slice(0, 10) : '';
    } else {
      input.value = String(value);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Keyboard focus

  // A control that acts and then disables (or hides) itself (Commit, Discard, Undo, Redo, Remove, Retry now), or
  // a field the form disables, would leave the focus on <body>, and the next Tab would start at the top of the
  // page. The focus goes to a sensible neighbour instead: after Commit or Discard the field last edited (else the
  // table, whose selected row is its active descendant), after Undo the Redo button if it is enabled, and so on.
  let lastFocused = null; // what last had the focus
  let lastEdited = null; // the form field the user last changed
  document.addEventListener('focusin', (event) => {
    lastFocused = event.target;
  });
  // What a click is on (Commit and Discard take the focus only on the click, see below); a click on nothing
  // focusable takes the focus away on purpose (to <body>), and there is nothing to keep then.
  document.addEventListener(
    'pointerdown',
    (event) => {
      const target = event.target instanceof Element ? event.target : null;
      lastFocused = (target && target.closest('button, input, select, textarea, a[href], [tabindex]')) || null;
    },
    true,
  );

  const usable = (node) => !!node && node.isConnected && !node.matches(':disabled') && node.getClientRects().length > 0;

  function focusNeighbours(from) {
    const edited = lastEdited ? [field[lastEdited]] : [];
    switch (from.id) {
      case 'commit':
      case 'discard':
        return [...edited, el.grid, el.depList];
      case 'undo':
        return [el.redo, el.grid, el.depList];
      case 'redo':
        return [el.undo, el.grid, el.depList];
      case 'remove':
        return [state.employees.length ? el.grid : el.add, el.grid, el.depList];
      default:
        return [el.grid, el.depList];
    }
  }

  function keepFocus() {
    const from = lastFocused;
    if (!from || usable(from)) return;
    const active = document.activeElement;
    if (active && active !== document.body && active !== from) return; // the focus went elsewhere already
    const to = focusNeighbours(from).find(usable);
    lastFocused = null;
    if (to) to.focus();
  }
  // After whatever disabled or hid it has run (a render sets Undo and Redo one after the other).
  new MutationObserver(keepFocus).observe(document.body, {
    subtree: true,
    attributes: true,
    attributeFilter: ['disabled', 'hidden'],
  });

  // ---------------------------------------------------------------------------------------------
  // Errors

  // Shows e above the form. `connection`: it says only that the page is out of step with the server
  // (unreachable, busy, controllers lost), and goes once the page is live and in step again.
  function showError(e, { connection = false, retrying = 0 } = {}) {
    connectionError = !!(e && (e.connection || connection));
    if (!e) {
      el.error.hidden = true;
      el.error.replaceChildren();
      setRefused(new Map());
      return;
    }
    const details = (e && e.details) || {};
    const list = Array.isArray(details.errors) && details.errors.length ? details.errors : [details];
    const items = list.map((x) => refusalText(x, e.message)).filter((m) => m);
    const title = e.status === 422 ? 'Not saved. ' : e.status === 503 ? 'Server unavailable. ' : 'Something went wrong. ';
    el.error.replaceChildren(
      h('strong', { text: title }),
      ...(items.length > 1 ? [h('ul', {}, ...items.map((m) => h('li', { text: m })))] : [items[0] || e.message]),
      retrying ? ` Retrying in ${retrying}s…` : '',
    );
    el.error.hidden = false;
    // Each field the server refused a value of says so too, under it (while the message above the form stands).
    const byField = new Map();
    for (const x of list) {
      const key = fieldOfError(x);
      const text = key ? refusalText(x, e.message) : '';
      if (text && !(byField.get(key) || []).includes(text)) byField.set(key, [...(byField.get(key) || []), text]);
    }
    setRefused(new Map([...byField].map(([key, texts]) => [key, texts.join(' ')])));
  }

  // What a field is called on the page ("First name" for firstName), or the key written out ("Direct reports").
  function labelOf(key) {
    const label = FIELDS.includes(key) ? document.querySelector(`label[for="field-${key}"]`) : null;
    if (label) return label.textContent.trim();
    const words = String(key).replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
    return words.charAt(0).toUpperCase() + words.slice(1);
  }

  // An error of the server as a person reads it: "Employee/9: salary must be at least 0." is "Salary must be at
  // least 0." (the field's label for its key), named after its employee ("Frances Allen: Salary …") when that is
  // not the one the form shows.
  function refusalText(x, fallback = '') {
    let text = (x && x.message) || fallback || '';
    const object = x && typeof x.object === 'string' ? x.object : null;
    const named = !!object && text.startsWith(`${object}: `);
    if (named) text = text.slice(object.length + 2);
    const keyPath = x && typeof x.keyPath === 'string' ? x.keyPath : null;
    if (keyPath && text.startsWith(`${keyPath} `)) text = labelOf(keyPath) + text.slice(keyPath.length);
    const selected = selectedIds();
    if (named && !(selected.length === 1 && selected[0] === object)) {
      const name = (state.people.has(object) && personName(state.people.get(object))) || names.get(object) || object;
      text = `${name}: ${text}`;
    }
    return text;
  }

  // The other end of a relationship the form edits, as `Entity.key` → the field (`Employee.directReports` →
  // manager), read from the model: an error about it (a manager whose directReports would hold too many) is
  // that field's.
  const inverseFields = new Map();

  async function readModel() {
    try {
      const { data } = await api('GET', '/model');
      const entities = (data && data.entities) || {};
      for (const [key, rel] of Object.entries((entities.Employee && entities.Employee.relationships) || {})) {
        if (FIELDS.includes(key) && rel.inverse) inverseFields.set(`${rel.destination}.${rel.inverse}`, key);
      }
      for (const [entity, description] of Object.entries(entities)) {
        const attributes = Object.entries(description.attributes || {}).filter(([, a]) => a.required);
        const relationships = Object.entries(description.relationships || {}).filter(([, r]) => r.required && !r.toMany);
        requiredKeys.set(entity, [...attributes, ...relationships].map(([key]) => key));
      }
    } catch {
      // without it, such an error is named above the form only, and the feed tells creations by their shape
    }
  }

  // The field an error of a refused commit is about (its keyPath, or the inverse of a field's relationship), or null.
  function fieldOfError(x) {
    const key = x && typeof x.keyPath === 'string' ? x.keyPath.split('.')[0] : null;
    if (!key) return null;
    if (FIELDS.includes(key)) return key;
    const entity = typeof x.object === 'string' ? x.object.split('/')[0] : 'Employee';
    return inverseFields.get(`${entity}.${key}`) || null;
  }

  // Clears the error shown if it only said that the server was away (or had lost the page's
  // controllers): called once the page is live and in step again.
  function clearConnectionError() {
    if (connectionError) showError(null);
  }

  const BUSY_RETRIES = 3; // times a request answered 503 with Retry-After is sent again

  // Runs fn; shows its error next to the form instead of throwing. Answers fn's result, or undefined.
  // When the server has lost the page's controllers (it restarted), makes them again and retries once.
  // When it is busy (503 with Retry-After), shows its message and retries after the time it asked for.
  async function guarded(fn) {
    try {
      return await fn();
    } catch (error) {
      let e = error;
      if (e instanceof APIError && e.code === 'no-such-controller' && !stopped) {
        try {
          await restoreControllers();
          return await fn();
        } catch (again) {
          e = again;
        }
      }
      for (let attempt = 0; e instanceof APIError && e.retryAfter && attempt < BUSY_RETRIES && !stopped; attempt += 1) {
        showError(e, { connection: true, retrying: e.retryAfter });
        await sleepFor(e.retryAfter * 1000);
        try {
          const result = await fn();
          clearConnectionError();
          return result;
        } catch (again) {
          e = again;
        }
      }
      if (e instanceof APIError) {
        showError(e);
        connectionError = e.code === 'no-such-controller';
      } else {
        showError({ message: `The server could not be reached (${e.message}).`, details: {}, connection: true });
      }
      return undefined;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Pending edits dropped by another client's change

  // The pending edits the page last showed, for whom. When they go while the page did nothing and are not in the
  // model (another client moved or deleted the employee and the server dropped them), the page says so. What the page itself does (a commit, a discard, a selection, a removal) clears it (see mutate).
  let pendingShown = null;

  const selectedIds = () => ((state.emp && state.emp.selectionIndexes) || []).map((i) => idOf(state.employees[i])).filter((x) => x);
  const sameJSON = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

  // The pending edits the server answered to one the page sent: they may go before a sync shows them.
  function recordPending(edits) {
    if (!edits || typeof edits !== 'object' || !Object.keys(edits).length || formSubject === null) return;
    pendingShown = { ids: JSON.parse(formSubject), dep: idOf(state.departments[state.depSelection[0]]), edits };
  }

  // `consistent`: what the sync read is of one moment. When it is not and the edits shown are gone, the page reads
  // again (a few times: the reads' seqs may also differ while a group commit is being flushed, with no change to
  // come that would sync again).
  let straddledReads = 0;
  function noticeDroppedEdits(consistent) {
    if (!consistent) {
      if (pendingShown && !Object.keys(state.edits).length && straddledReads++ < 5) syncAgain = true;
      return;
    }
    straddledReads = 0;
    const before = pendingShown;
    const dep = idOf(state.departments[state.depSelection[0]]);
    pendingShown = Object.keys(state.edits).length ? { ids: selectedIds(), dep, edits: state.edits } : null;
    if (!before || pendingShown) return; // there were none, or there still are
    if (before.dep !== dep) {
      explainDepartmentChange(before);
      return;
    }
    const arranged = new Set(state.employees.map(idOf));
    const gone = before.ids.filter((id) => !arranged.has(id));
    if (gone.length) explainGone(before, gone); // else committed or discarded elsewhere: shown as such
  }

  // An object as the server has it now: null when it was deleted, undefined when that cannot be told.
  async function readObject(id) {
    try {
      return (await api('GET', `/objects/${id.split('/').map(encodeURIComponent).join('/')}`)).data || {};
    } catch (e) {
      return e instanceof APIError && e.status === 404 ? null : undefined;
    }
  }
  const holdsEdits = (object, edits) => Object.entries(edits).every(([k, v]) => sameJSON(object[k], v));

  // Another client selected another department: the server commits pending edits first (as Cocoa commits before a
  // selection change), so they are lost only when they are not in the model (dropped because the employee was
  // moved or deleted meanwhile).
  async function explainDepartmentChange(before) {
    for (const id of before.ids) {
      const object = await readObject(id);
      if (object === undefined) return; // cannot tell
      if (object === null || !holdsEdits(object, before.edits)) {
        tellDropped(before, 'Another department was selected elsewhere');
        return;
      }
    }
  }

  // Why the employees the edits were for left the list: deleted, moved, or (their edits committed) filtered out.
  async function explainGone(before, gone) {
    const reasons = [];
    for (const id of gone) {
      const name = names.get(id) || id;
      const object = await readObject(id);
      if (object === undefined) return; // cannot tell
      if (object === null) {
        reasons.push(`${name} was deleted`);
        continue;
      }
      if (holdsEdits(object, before.edits)) continue; // committed: in the model
      const to = object.department && object.department.$ref;
      reasons.push(to && to !== before.dep ? `${name} was moved to ${describeTarget(to)}` : `${name} left the list`);
    }
    if (reasons.length) tellDropped(before, `${reasons.join(', ')} elsewhere`);
  }

  function tellDropped(before, why) {
    const what = Object.entries(before.edits).map(([key, value]) => {
      const label = document.querySelector(`label[for="field-${key}"]`);
      return `${label ? label.textContent.trim() : key} ${formatValue(value)}`;
    });
    const text = `${why}: the pending edit${what.length > 1 ? 's' : ''} (${what.join(', ')}) ${what.length > 1 ? 'were' : 'was'} not saved.`;
    appendNote(text);
    showNotice(text);
  }

  // A note above the form's buttons (null: none) until the user next does something.
  function showNotice(text) {
    el.notice.textContent = text || '';
    el.notice.hidden = !text;
  }

  // ---------------------------------------------------------------------------------------------
  // Pending edits

  // A date input with a segment still being typed (`04/dd/2014`) has no value, and says badInput.
  const incompleteDate = (input) => input.type === 'date' && input.value === '' && input.validity.badInput;
  // A date input whose every segment was cleared: empty, and not half typed.
  const clearedDate = (input) => input.type === 'date' && input.value === '' && !input.validity.badInput;

  const hasEdit = (key) => Object.prototype.hasOwnProperty.call(state.edits, key);
  // What the field is bound to now: its pending edit, else the selection's value (or marker).
  const boundValue = (key) => (hasEdit(key) ? state.edits[key] : (state.selection || {})[key]);

  // The field shows the selection's placeholder (Multiple values, say) and the user left it empty:
  // that is no edit (as in Cocoa, a placeholder left alone changes nothing).
  function leftAtPlaceholder(key) {
    const input = field[key];
    if (input.type === 'checkbox' || input.tagName === 'SELECT') return false;
    return isMarker((state.selection || {})[key]) && input.value === '' && !input.validity.badInput;
  }

  class InvalidField {
    constructor(message) {
      this.message = message;
    }
  }

  // The field's value as a pending edit, undefined when there is nothing to send, or an InvalidField.
  function readField(key) {
    const input = field[key];
    switch (key) {
      case 'salary': {
        if (input.validity.badInput) return new InvalidField('Enter a whole number, such as 85000.');
        if (input.value.trim() === '') return null;
        const salary = Number(input.value);
        // Past 2^53 a JavaScript number is not the integer typed: it would be saved rounded, without a word.
        if (Math.abs(salary) > Number.MAX_SAFE_INTEGER) {
          return new InvalidField(`Enter a whole number up to ${Number.MAX_SAFE_INTEGER}.`);
        }
        return salary;
      }
      case 'hireDate': {
        if (incompleteDate(input)) return undefined; // never a date the user did not clear
        if (!input.value) return null;
        // A date input takes years up to 275760; a date is written with a four-digit year (ISO 8601).
        const match = /^(\d{4})-\d{2}-\d{2}$/.exec(input.value);
        if (!match || Number(match[1]) < 1) return new InvalidField('Enter a date with a year from 0001 to 9999.');
        const current = hasEdit('hireDate') ? state.edits.hireDate : state.selection.hireDate;
        const time = current && current.$date ? current.$date.slice(10) : 'T00:00:00.000Z';
        return { $date: `${input.value}${time}` };
      }
      case 'manager':
        return input.value ? { $ref: input.value } : null;
      case 'active':
        return input.checked;
      default:
        return input.value;
    }
  }

  function scheduleEdit(key, delay) {
    dirty.add(key);
    clearTimeout(editTimers.get(key));
    editTimers.set(
      key,
      setTimeout(() => {
        editTimers.delete(key);
        sendEdit(key);
      }, delay),
    );
    renderEditedState();
  }

  function renderEditedState() {
    el.edited.hidden = false;
    el.form.classList.add('is-editing');
    el.commit.disabled = el.fieldset.disabled;
    el.discard.disabled = false;
  }

  // Sends the field's value as a pending edit. `clear`: the user asked to clear it (the Clear button),
  // which is an edit also where the field showed a placeholder.
  function sendEdit(key, { clear = false } = {}) {
    if (!dirty.has(key)) return Promise.resolve();
    if (field[key].tagName === 'SELECT' && field[key].value === '__marker__') {
      dirty.delete(key);
      return Promise.resolve();
    }
    if (!clear && leftAtPlaceholder(key)) {
      // Nothing typed over the placeholder: no edit; one sent while typing is taken back.
      dirty.delete(key);
      setFieldError(key, null);
      return track(dropEdit(key));
    }
    const value = readField(key);
    if (value instanceof InvalidField) {
      dirty.delete(key);
      setFieldError(key, value.message);
      return Promise.resolve();
    }
    setFieldError(key, null);
    if (value === undefined) {
      dirty.delete(key);
      return Promise.resolve();
    }
    dirty.delete(key);
    return track(
      mutate(() =>
        guarded(async () => {
          const mine = generation; // no other local change since: the edits answered are what the page shows
          try {
            // Typed for the employees the form shows: when another client has selected others since (which the
            // page has not seen yet), the text is dropped rather than recorded as an edit of theirs.
            const { data: selected } = await api('GET', ctl(EMP, '/selectedObjects'));
            if (subjectOf((selected || []).map(idOf)) !== formSubject) {
              dropLocalEdits();
              appendNote('The selection was changed elsewhere: what was typed was not sent');
              requestSync();
              return undefined;
            }
            const answer = await api('PUT', ctl(EMP, `/edits/${key}`), value);
            clearRefused(key); // what the server refused is not what the field says now
            if (mine === generation) recordPending(answer.data);
            return answer;
          } catch (e) {
            if (!(e instanceof APIError)) {
              // No answer: kept, and sent once the server is back (requestSync).
              unsentEdits.set(key, value);
              setFieldError(key, 'Not sent yet: the server could not be reached. It is sent when the server is back.');
              throw e;
            }
            // The server refused the value itself (a date it cannot read, say): say so at the field.
            if (!(e.status === 400 || e.status === 422)) throw e;
            setFieldError(key, refusalText(e.details, e.message));
            return undefined;
          }
        }),
      ),
    );
  }

  function track(p) {
    const tracked = p.finally(() => inflightEdits.delete(tracked));
    inflightEdits.add(tracked);
    return tracked;
  }

  // Takes back the pending edit of `key` and keeps the others (the API drops pending edits all at once).
  function dropEdit(key) {
    return mutate(() =>
      guarded(async () => {
        const { data: pending } = await api('GET', ctl(EMP, '/edits'));
        if (!pending || !Object.prototype.hasOwnProperty.call(pending, key)) return;
        await api('POST', ctl(EMP, '/discardEditing'));
        for (const [k, v] of Object.entries(pending)) if (k !== key) await api('PUT', ctl(EMP, `/edits/${k}`), v);
      }),
    );
  }

  // A message under the field (null: none), with aria-invalid; the field keeps what the user typed
  // until it is fixed, discarded, or the selection changes.
  function setFieldError(key, message) {
    if (message) invalid.set(key, message);
    else if (!invalid.delete(key)) return;
    renderFieldNote(key);
  }

  // What the server said of the fields whose values it refused (a commit's 422): shown under each while the
  // message above the form stands, or until the field is changed.
  function setRefused(messages) {
    const keys = new Set([...refused.keys(), ...messages.keys()]);
    refused.clear();
    for (const [key, message] of messages) refused.set(key, message);
    for (const key of keys) renderFieldNote(key);
  }

  function clearRefused(key) {
    if (refused.delete(key)) renderFieldNote(key);
  }

  // The note under a field and its aria-invalid: what does not read (or was not sent) first, else what the
  // server refused.
  function renderFieldNote(key) {
    const input = field[key];
    const note = $(`field-${key}-error`);
    const message = invalid.get(key) || refused.get(key) || '';
    if (message) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
    if (note) {
      note.textContent = message;
      note.hidden = !message;
    }
  }

  function clearFieldErrors() {
    for (const key of [...invalid.keys()]) setFieldError(key, null);
  }

  async function flushEdits() {
    for (const [key, timer] of editTimers) {
      clearTimeout(timer);
      editTimers.delete(key);
    }
    await Promise.all([...dirty].map((key) => sendEdit(key)));
    await Promise.all([...inflightEdits]);
  }

  function dropLocalEdits() {
    for (const timer of editTimers.values()) clearTimeout(timer);
    editTimers.clear();
    dirty.clear();
    typing.clear();
    unsentEdits.clear();
    commitWhenBack = false;
    clearFieldErrors();
  }

  // The user changed a field: send it as a pending edit after `delay` ms, unless it is a date still
  // being typed, which waits for its last segment (its `change` says "" meanwhile).
  function fieldChanged(key, delay) {
    const input = field[key];
    lastEdited = key;
    if (document.activeElement === input && input.type !== 'checkbox' && input.tagName !== 'SELECT') typing.add(key);
    if (incompleteDate(input)) {
      clearTimeout(editTimers.get(key));
      editTimers.delete(key);
      dirty.delete(key);
      return;
    }
    scheduleEdit(key, delay);
  }

  field.hireDate.addEventListener('focus', () => {
    if (field.hireDate.type === 'text') field.hireDate.type = 'date';
  });

  // Clearing a date segment by segment: the first cleared segment empties the value (half typed, so
  // nothing is sent) and the last one fires no event, as the value stays empty. A key that leaves every
  // segment empty is a cleared date: null, unless the field showed a placeholder or was empty already.
  function dateMayBeCleared() {
    const input = field.hireDate;
    if (!clearedDate(input) || leftAtPlaceholder('hireDate')) return false;
    const bound = boundValue('hireDate');
    return bound !== null && bound !== undefined && !isMarker(bound);
  }
  field.hireDate.addEventListener('keyup', (event) => {
    if ((event.key === 'Backspace' || event.key === 'Delete') && dateMayBeCleared()) fieldChanged('hireDate', 500);
  });
  $('clear-hireDate').addEventListener('click', () => {
    const input = field.hireDate;
    if (input.disabled || el.fieldset.disabled) return;
    input.type = 'date';
    input.value = '';
    lastEdited = 'hireDate';
    setFieldError('hireDate', null);
    dirty.add('hireDate');
    clearTimeout(editTimers.get('hireDate'));
    editTimers.delete('hireDate');
    renderEditedState();
    sendEdit('hireDate', { clear: true });
  });

  for (const key of FIELDS) {
    const input = field[key];
    const immediate = input.type === 'checkbox' || input.tagName === 'SELECT';
    // A date input fires `change` for every segment typed, so it waits like a text field (the
    // calendar's pick too); the others send on `change` (a checkbox, a select, a text field left).
    const wait = key === 'hireDate' ? 500 : 0;
    if (!immediate) {
      input.addEventListener('input', () => {
        typedFor.set(key, formSubject);
        fieldChanged(key, 500);
      });
    }
    input.addEventListener('change', () => {
      // A text field's `change` when it is left (or disabled, as the form is while a selection loads) repeats its
      // typing: typed for employees the form no longer shows, the text was dropped with them.
      if (!immediate && typedFor.has(key) && typedFor.get(key) !== formSubject) return;
      if (input.type === 'checkbox') input.indeterminate = false;
      fieldChanged(key, wait);
    });
    input.addEventListener('blur', () => {
      const typed = typing.delete(key);
      if (editTimers.has(key)) {
        clearTimeout(editTimers.get(key));
        editTimers.delete(key);
        sendEdit(key); // left the field: send what it says now (and re-read)
      } else if (key === 'hireDate' && dateMayBeCleared()) {
        dirty.add(key);
        sendEdit(key); // left with every segment cleared: the date is cleared
      } else if (typed && state.ready) {
        if (incompleteDate(input)) renderForm(); // left half typed: show the bound value again
        requestSync(); // and anything that changed while the field was left alone
      }
    });
  }

  el.form.addEventListener('submit', (event) => {
    event.preventDefault();
    commit();
  });
  // Pressing Commit or Discard leaves the focus in the field until the click: leaving the field sends what it
  // says, and its error note going away then would move the button from under the pointer between the press
  // and the release, and the click would be lost. The click moves the focus (as the press would have), then acts.
  for (const button of [el.commit, el.discard]) button.addEventListener('mousedown', (event) => event.preventDefault());
  el.commit.addEventListener('click', (event) => {
    event.preventDefault();
    el.commit.focus();
    commit();
  });
  el.discard.addEventListener('click', () => {
    el.discard.focus();
    discard();
  });
  el.form.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      event.preventDefault();
      discard();
    }
  });

  const COMMIT_WHEN_BACK = 'Not committed yet: the server could not be reached. The commit is made when it is back.';

  async function commit() {
    await flushEdits();
    // A field says something the server would not take: fix it (or discard) first. One whose edit is only unsent
    // is not refused.
    const [refusedKey] = [...invalid.keys()].filter((key) => !unsentEdits.has(key));
    if (refusedKey) {
      field[refusedKey].focus();
      return;
    }
    if (unsentEdits.size) {
      // Edits typed while the server could not be reached go first, then the commit (requestSync).
      commitWhenBack = true;
      showNotice(COMMIT_WHEN_BACK);
      requestSync();
      return;
    }
    commitWhenBack = false;
    await mutate(() =>
      guarded(async () => {
        try {
          await api('POST', ctl(EMP, '/commitEditing'));
        } catch (e) {
          if (!(e instanceof APIError)) {
            // No answer: made once the server is back (requestSync).
            commitWhenBack = true;
            showNotice(COMMIT_WHEN_BACK);
          }
          throw e;
        }
        // What was typed is in the model now: the fields show the model again, focused or not.
        typing.clear();
        showError(null);
      }),
    );
  }

  async function discard() {
    dropLocalEdits();
    await Promise.all([...inflightEdits]);
    await mutate(() =>
      guarded(async () => {
        await api('POST', ctl(EMP, '/discardEditing'));
        showError(null);
      }),
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Selection, sorting, filtering, add and remove

  // Department selections run one after another, and arrow keys go on from the one last asked for (a key
  // pressed again before the server answered moves one further, not twice to the same department).
  let depTarget = null;
  let depChain = Promise.resolve();
  function selectDepartment(index) {
    if (index < 0 || index >= state.departments.length) return Promise.resolve();
    depTarget = index;
    const run = depChain
      .then(() => selectDepartmentNow(index))
      .finally(() => {
        if (depTarget === index) depTarget = null;
      });
    depChain = run.catch(() => {});
    return run;
  }

  async function selectDepartmentNow(index) {
    if (index < 0 || index >= state.departments.length) return;
    if (state.depSelection.length === 1 && state.depSelection[0] === index) return;
    await whileSelecting(() => changeDepartment(index));
  }

  async function changeDepartment(index) {
    await flushEdits();
    // Pending edits belong to the employees selected now. Changing the master changes the detail's
    // content and selection but keeps its pending edits, which would then apply to other employees:
    // end editing first, as Cocoa does when a text field resigns, and stay put if the commit fails.
    const committed = await mutate(() =>
      guarded(async () => {
        const { data: pending } = await api('GET', ctl(EMP, '/edits'));
        if (pending && Object.keys(pending).length) await api('POST', ctl(EMP, '/commitEditing'));
        return true;
      }),
    );
    if (!committed) return false;
    const before = state.depSelection;
    state.depSelection = [index];
    state.anchor = null;
    state.lead = null;
    renderDepartments();
    // By object: another client may have renamed (so moved) a department since the page drew the list.
    const done = await select(DEP, [idOf(state.departments[index])].filter((x) => x));
    // The selection is the server's controller's: when it did not take the change (the server is away),
    // the highlight goes back to what the controller has, so that the list and the form agree.
    if (!done && state.depSelection.length === 1 && state.depSelection[0] === index) {
      state.depSelection = before;
      renderDepartments();
    }
    return done;
  }

  // Selects the objects ids in a controller; answers whether the server took it.
  function select(name, ids) {
    return mutate(() =>
      guarded(async () => {
        await selectExisting(name, ids);
        showError(null);
        clearFieldErrors();
        return true;
      }),
    );
  }

  // Runs a change of selection (run answers whether the server took it), the form loading meanwhile.
  async function whileSelecting(run) {
    const token = { shown: false, settledAt: null };
    selecting = token;
    const timer = setTimeout(() => {
      token.shown = true;
      if (selecting === token) renderForm();
    }, SELECTING_SHOWN_AFTER);
    let done = false;
    try {
      done = await run();
    } finally {
      clearTimeout(timer);
      if (selecting === token) {
        if (done) token.settledAt = generation; // mutate has bumped it: the sync it asked for shows the selection
        else {
          selecting = null; // not taken: the form shows the selection it holds again
          if (token.shown) renderForm();
        }
      }
    }
    return done;
  }

  async function selectEmployees(indexes) {
    const sorted = [...new Set(indexes)].filter((i) => i >= 0 && i < state.employees.length).sort((a, b) => a - b);
    const current = (state.emp && state.emp.selectionIndexes) || [];
    // By object, not by index: the server commits pending edits first, and an edit that moves its row (a new
    // name under the name sort) would shift the indexes the page saw, selecting another employee.
    const ids = sorted.map((i) => idOf(state.employees[i])).filter((x) => x);
    state.marked = subjectOf(ids);
    if (sorted.length === current.length && sorted.every((v, i) => v === current[i])) return;
    await flushEdits();
    const emp = state.emp;
    if (emp) {
      emp.selectionIndexes = sorted;
      emp.selectedBefore = current; // what the pending edits are for, until the server has taken the change
    }
    renderEmployees(); // optimistic; the sync that follows renders the form from the new selection
    const done = await whileSelecting(() => select(EMP, ids));
    if (emp) delete emp.selectedBefore;
    // Not taken (the server is away): the rows show the controller's selection again, the one the form
    // shows, rather than a selection the page does not have.
    if (!done && emp && state.emp === emp && emp.selectionIndexes === sorted) {
      emp.selectionIndexes = current;
      renderEmployees();
    }
  }

  el.depList.addEventListener('click', (event) => {
    const row = event.target.closest('[data-test="department-row"]');
    if (row) selectDepartment(Number(row.dataset.index));
  });

  el.depList.addEventListener('keydown', (event) => {
    const current = depTarget ?? state.depSelection[0] ?? -1;
    const moves = { ArrowDown: current + 1, ArrowUp: current - 1, Home: 0, End: state.departments.length - 1 };
    if (event.key in moves) {
      event.preventDefault();
      selectDepartment(Math.max(0, Math.min(state.departments.length - 1, moves[event.key])));
    } else if (event.key === 'ArrowRight' || event.key === 'Enter') {
      event.preventDefault();
      el.grid.focus();
    }
  });

  // The row a Shift-selection extends from: the employee last clicked, found by object (a sort, or a row
  // inserted above by another client, moves it), else the first selected row, as NSTableView does.
  function anchorIndex(current) {
    const index = ownRow(state.anchor);
    return index >= 0 ? index : (current[0] ?? null);
  }

  // The row the keyboard is on (selected or not), while the selection is the page's own.
  function leadIndex() {
    const index = ownRow(state.lead);
    return index >= 0 ? index : null;
  }

  // Where the page's anchor or lead (an id) is now; -1 when it is gone, or when the selection shown is not the one
  // the page last asked for (another client made it: a Shift-selection then extends from its edge).
  function ownRow(id) {
    if (!id || subjectOf(selectedIds()) !== state.marked) return -1;
    return state.employees.findIndex((e) => idOf(e) === id);
  }

  // A click or a key: `lead` is the row now under the keyboard, `anchor` the one a Shift-selection extends from.
  function mark(anchor, lead) {
    state.anchor = idOf(state.employees[anchor]);
    state.lead = idOf(state.employees[lead]);
  }

  // A click on a row, or Space on the row the keyboard is on: Shift extends the selection from the anchor,
  // Ctrl (Cmd) adds or removes the row, else the row alone is selected.
  function pick(index, event) {
    const current = (state.emp && state.emp.selectionIndexes) || [];
    const anchor = anchorIndex(current);
    if (event.shiftKey && anchor !== null) {
      mark(anchor, index);
      const [a, b] = [Math.min(anchor, index), Math.max(anchor, index)];
      selectEmployees(Array.from({ length: b - a + 1 }, (_, i) => a + i));
    } else if (event.metaKey || event.ctrlKey) {
      mark(index, index);
      selectEmployees(current.includes(index) ? current.filter((i) => i !== index) : [...current, index]);
    } else {
      mark(index, index);
      selectEmployees([index]);
    }
  }

  el.body.addEventListener('click', (event) => {
    const row = event.target.closest('[data-test="employee-row"]');
    if (row) pick(Number(row.dataset.index), event);
  });

  el.grid.addEventListener('keydown', (event) => {
    if (event.target !== el.grid) return;
    const current = (state.emp && state.emp.selectionIndexes) || [];
    const last = state.employees.length - 1;
    const edge = current.length ? (event.key === 'ArrowUp' ? current[0] : current[current.length - 1]) : -1;
    const focus = leadIndex() ?? edge;
    // The row shown as the keyboard's (aria-activedescendant): where Ctrl+arrows move from and Space acts.
    const shown = leadIndex() ?? current[0] ?? -1;
    const moving = event.ctrlKey || event.metaKey ? shown : focus;
    let target = null;
    if (event.key === 'ArrowDown') target = Math.min(last, moving + 1);
    else if (event.key === 'ArrowUp') target = Math.max(0, moving === -1 ? 0 : moving - 1);
    else if (event.key === 'Home') target = 0;
    else if (event.key === 'End') target = last;
    else if (event.key === 'ArrowLeft') {
      event.preventDefault();
      el.depList.focus();
      return;
    } else if (event.key === ' ' && shown >= 0) {
      event.preventDefault();
      pick(shown, event);
      return;
    } else if (event.key === 'Enter' && current.length) {
      event.preventDefault();
      // While a selection loads the field is disabled: it gets the focus once the selection is shown.
      if (loadingShown) focusedWhenLoading = field.firstName;
      field.firstName.focus();
      field.firstName.select();
      return;
    } else if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 'a') {
      event.preventDefault();
      selectEmployees(state.employees.map((_, i) => i));
      return;
    }
    if (target === null || target < 0) return;
    event.preventDefault();
    if (event.shiftKey) {
      const anchor = anchorIndex(current) ?? target;
      mark(anchor, target);
      const [a, b] = [Math.min(anchor, target), Math.max(anchor, target)];
      selectEmployees(Array.from({ length: b - a + 1 }, (_, i) => a + i));
    } else if (event.ctrlKey || event.metaKey) {
      // Moves the keyboard alone (APG's multi-select list), so that Ctrl+Space can add rows apart. The selection
      // shown (another client's, or the one the page found) becomes the one the keyboard acts on.
      state.marked = subjectOf(selectedIds());
      if (ownRow(state.anchor) < 0) state.anchor = idOf(state.employees[current[0] ?? target]);
      state.lead = idOf(state.employees[target]);
      renderEmployees();
    } else {
      mark(target, target);
      selectEmployees([target]);
    }
    revealRow(target);
  });

  el.grid.querySelector('thead').addEventListener('click', (event) => {
    const th = event.target.closest('th[data-sort]');
    if (!th) return;
    const spec = SORTS[th.dataset.sort];
    const primary = ((state.emp && state.emp.sortDescriptors) || [])[0];
    const ascending = !(primary && primary.key === spec[0].key && primary.ascending);
    const descriptors = spec.map((d) => ({ key: d.key, ascending, selector: d.selector }));
    const emp = state.emp;
    const before = emp && emp.sortDescriptors;
    if (emp) emp.sortDescriptors = descriptors;
    renderEmployees();
    const sorted = async () => {
      const answer = await api('PUT', ctl(EMP, '/sortDescriptors'), descriptors);
      showError(null); // taken: an earlier refusal (a filter's, say) no longer stands
      return answer;
    };
    mutate(() => guarded(sorted)).then((done) => {
      if (done === undefined && emp && state.emp === emp && emp.sortDescriptors === descriptors) {
        emp.sortDescriptors = before; // not taken: the indicator shows the controller's sort again
        renderEmployees();
      }
    });
  });

  // `firstName CONTAINS[cd] "x" OR lastName CONTAINS[cd] "x"`; several words must all match.
  function predicateFor(text) {
    const words = text.trim().split(/\s+/).filter((w) => w);
    const quote = (w) => `"${w.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
    const clause = (w) => `firstName CONTAINS[cd] ${quote(w)} OR lastName CONTAINS[cd] ${quote(w)}`;
    if (words.length === 0) return null;
    if (words.length === 1) return clause(words[0]);
    return words.map((w) => `(${clause(w)})`).join(' AND ');
  }

  // The words whose filter (predicateFor) is this predicate; '' for none, and for a predicate set elsewhere that
  // no words make (the predicate itself is shown beside the box).
  function wordsFor(predicate) {
    if (!predicate) return '';
    const quoted = /firstName CONTAINS\[cd\] "((?:[^"\\]|\\.)*)"/g;
    const text = [...predicate.matchAll(quoted)].map((m) => m[1].replace(/\\(.)/g, '$1')).join(' ');
    return predicateFor(text) === predicate ? text : '';
  }

  function showPredicate(predicate) {
    el.predicate.textContent = predicate || '';
    el.predicate.hidden = !predicate;
  }

  // The box says what the list is filtered by (as the user typed it, when it does).
  function showFilter(predicate) {
    lastPredicate = predicate;
    if (predicateFor(el.filter.value) !== predicate) el.filter.value = wordsFor(predicate);
  }

  el.filter.addEventListener('input', () => {
    clearTimeout(filterTimer);
    const timer = setTimeout(async () => {
      const text = el.filter.value;
      const predicate = predicateFor(text);
      lastPredicate = predicate;
      showPredicate(predicate);
      await mutate(() =>
        guarded(async () => {
          try {
            await api('PUT', ctl(EMP, '/filterPredicate'), predicate);
          } catch (e) {
            // No answer: the text stays in the box and is sent when the server is back (requestSync).
            unsentFilter = e instanceof APIError ? null : text;
            throw e;
          }
          unsentFilter = null;
          showError(null);
        }),
      );
      // Unless typed again meanwhile (the newer text's answer decides), the box follows the controller again: after
      // a refusal (setting a filter commits the pending edits first) the sync that mutate asked for puts back what
      // the list is filtered by, while the error says why.
      if (filterTimer === timer) filterTimer = null;
    }, 200);
    filterTimer = timer;
  });
  el.filter.addEventListener('keydown', (event) => {
    if (event.key === 'ArrowDown') {
      event.preventDefault();
      el.grid.focus();
    }
  });

  el.add.addEventListener('click', async () => {
    await flushEdits();
    const today = localDate(new Date()); // the user's day, not UTC's
    await mutate(() =>
      guarded(async () => {
        await api('POST', ctl(EMP, '/add'), {
          object: { firstName: 'New', lastName: 'Employee', hireDate: { $date: `${today}T09:00:00.000Z` }, active: true },
        });
        showError(null);
      }),
    );
    await requestSync();
    field.firstName.focus();
    field.firstName.select();
  });

  // The employees controller's content is a relationship whose inverse (department) is required, so
  // its `remove` action is refused (API.md §5); removing employees from the page deletes them. One
  // DELETE each would be one undo step each, and not all or nothing: the page's entity-mode
  // controller (created on the first Remove, then reused) selects them all and deletes them with one
  // `remove`, one transaction and one undo group.
  async function createRemover() {
    await api('POST', '/controllers', {
      name: REMOVER,
      kind: 'array',
      content: 'Employee',
      avoidsEmptySelection: false, // an employee deleted elsewhere leaves the selection, no neighbour joins it
      selectsInsertedObjects: false,
      idleTimeout: IDLE_TIMEOUT,
    }).catch((e) => {
      if (!(e instanceof APIError && e.status === 409)) throw e;
    });
    removerCreated = true;
    noteControllers();
  }

  // Selects the objects of `ids` that still exist (a missing one is 404 naming it: it is dropped and the rest
  // asked again); answers the controller's selected objects.
  async function selectExisting(name, ids) {
    let left = ids.slice();
    for (;;) {
      try {
        const { data } = await api('PUT', ctl(name, '/selectedObjects'), left.map(($ref) => ({ $ref })));
        return data;
      } catch (e) {
        const gone = e instanceof APIError && e.code === 'no-such-object' ? e.details.object : undefined;
        if (!gone || !left.includes(gone)) throw e;
        left = left.filter((id) => id !== gone);
      }
    }
  }

  async function deleteEmployees(ids) {
    for (let attempt = 0; ; attempt += 1) {
      try {
        if (!removerCreated) await createRemover();
        const chosen = await selectExisting(REMOVER, ids);
        if (!Array.isArray(chosen) || !chosen.length) return; // deleted elsewhere already
        await api('POST', ctl(REMOVER, '/remove'));
        return;
      } catch (e) {
        if (attempt > 0 || !(e instanceof APIError && e.code === 'no-such-controller')) throw e;
        removerCreated = false; // the server restarted, or someone deleted it: create it again
      }
    }
  }

  let removing = false;
  el.remove.addEventListener('click', async () => {
    if (removing) return;
    removing = true;
    try {
      await flushEdits();
      const ids = ((state.emp && state.emp.selectionIndexes) || []).map((i) => idOf(state.employees[i])).filter((x) => x);
      if (!ids.length) return;
      await mutate(() =>
        guarded(async () => {
          await deleteEmployees(ids);
          showError(null);
        }),
      );
    } finally {
      removing = false;
    }
  });

  // ---------------------------------------------------------------------------------------------
  // Undo and redo (the document, through the responder chain)

  async function sendAction(action) {
    if ((action === 'undo' && el.undo.disabled) || (action === 'redo' && el.redo.disabled)) return;
    dropLocalEdits();
    await mutate(() =>
      guarded(async () => {
        await api('POST', `/actions/${action}`, { target: null, sender: 'demo' });
        showError(null);
      }),
    );
  }
  el.undo.addEventListener('click', () => sendAction('undo'));
  el.redo.addEventListener('click', () => sendAction('redo'));
  // The toolbar's arrow keys (APG toolbar): Left/Right (Home/End) move among its buttons that can be used.
  document.querySelector('.toolbar').addEventListener('keydown', (event) => {
    const moves = { ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity };
    if (!(event.key in moves) || !event.target.matches('button')) return;
    const buttons = [...event.currentTarget.querySelectorAll('button')].filter((b) => !b.hidden && !b.disabled);
    const at = buttons.indexOf(event.target) + moves[event.key];
    const next = buttons[Math.max(0, Math.min(buttons.length - 1, at))];
    if (!next) return;
    event.preventDefault();
    next.focus();
  });
  document.addEventListener('keydown', (event) => {
    const inText = event.target.matches && event.target.matches('input, select, textarea');
    if (inText || !(event.ctrlKey || event.metaKey) || event.key.toLowerCase() !== 'z') return;
    event.preventDefault();
    sendAction(event.shiftKey ? 'redo' : 'undo');
  });

  // ---------------------------------------------------------------------------------------------
  // The change feed: one long-poll, back-off on errors, re-sync on 410.

  // `retry`: the page is waiting to try the server again, and Retry now tries at once. The status region
  // announces `label` when it changes; `count` (the seconds left, an ellipsis) is shown after it but not
  // announced, or a screen reader would read the countdown out every second while the server is away.
  function setConnection(kind, label, detail = '', { retry = false, count = '' } = {}) {
    el.connection.dataset.state = kind;
    const text = el.connection.querySelector('.connection-label');
    if (text.textContent !== label) text.textContent = label;
    el.connection.querySelector('.connection-count').textContent = count;
    if (detail) el.connection.title = detail;
    else el.connection.removeAttribute('title');
    el.retry.hidden = !retry;
  }

  // The change feed answers: says Live unless the last sync failed (then it tries again).
  function feedAnswered() {
    pollLive = true;
    if (syncFailure === null) {
      if (el.connection.dataset.state !== 'live') clearConnectionError();
      setConnection('live', 'Live');
    } else if (!syncing && !syncRetry) {
      requestSync();
    }
  }

  // A sleep that the browser's `online` event cuts short, so a reconnect does not wait out its back-off.
  // Answers true when it was cut short.
  let wake = () => {};
  const sleep = (ms) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  window.addEventListener('online', () => wake());
  // Retry now: the change feed's probe at once, and the read of the controllers that failed.
  el.retry.addEventListener('click', () => {
    wake();
    if (syncFailure !== null && !syncing && !syncRetry) requestSync();
  });
  const sleepFor = (ms) => new Promise((resolve) => setTimeout(resolve, ms)); // not cut short

  // Sleeps ms, counting the seconds left down in the connection label ("Reconnecting in 3s"). `retry`: with
  // Retry now, which cuts it short (not while the server asked to be left alone for a while, 503 Retry-After).
  async function countdown(ms, what, detail = '', { retry = true } = {}) {
    const until = Date.now() + ms;
    for (let left = ms; left > 0 && !stopped; left = until - Date.now()) {
      setConnection('offline', what, detail, { retry, count: ` in ${Math.ceil(left / 1000)}s` });
      if (await sleep(((left - 1) % 1000) + 1)) break; // to the next whole second, or woken
    }
  }

  const PROBE_TIMEOUT = 5000; // ms a probe may take before it counts as failed
  // The longest wait between two tries to reach the server (jitter included): a probe of the same origin costs
  // little, and a page back within seconds of its server beats the requests saved.
  const BACKOFF_CAP = 4000;
  const backoffWait = (ms) => ms + Math.random() * ms * 0.25; // at most 5 s
  const CHECK_INTERVAL = 3000; // ms between checks of the page's controllers (see checkControllers)

  // What the store's change feed does not carry: another client may have deleted the page's controllers
  // (DELETE /controllers/{name}), or changed what the page shows of them (a selection, the sort, the
  // filter, pending edits; of the departments controller anything in its state, and the order of its
  // list, which a rearrangeObjects changes without a change in the store). A cheap look every
  // CHECK_INTERVAL notices either, and the sync reads them again (re-creating deleted ones).
  async function checkControllers() {
    if (stopped || !state.ready || syncing || !pollLive || document.visibilityState === 'hidden') return;
    const started = generation;
    try {
      const signal = AbortSignal.timeout(PROBE_TIMEOUT);
      const [dep, depNames, emp, edits] = await Promise.all([
        api('GET', ctl(DEP), undefined, { signal }),
        api('GET', ctl(DEP, '/arrangedObjects/name'), undefined, { signal }),
        api('GET', ctl(EMP), undefined, { signal }),
        api('GET', ctl(EMP, '/edits'), undefined, { signal }),
      ]);
      if (started !== generation || syncing || inflightEdits.size || dirty.size) return; // the page's own change
      const shown = state.emp || {};
      const moved =
        !sameJSON(dep.data, state.dep) ||
        !sameJSON(depNames.data, state.departments.map((d) => d.name)) ||
        ['selectionIndexes', 'sortDescriptors', 'filterPredicate'].some((k) => !sameJSON(emp.data && emp.data[k], shown[k])) ||
        !sameJSON(edits.data, state.edits);
      if (moved) requestSync();
    } catch (e) {
      if (e instanceof APIError && e.code === 'no-such-controller') requestSync();
      else if (!(e instanceof APIError)) connectionLost();
    }
  }

  // A request got no answer while the change feed's long-poll still counts as live: that poll may wait for a
  // connection that is gone (offline, a stalled link) until its time-out. It is ended, so that the page says
  // Reconnecting (with Retry now) and probes the server every few seconds instead.
  function connectionLost() {
    if (pollLive && pollAbort) pollAbort.abort();
  }

  async function pollChanges(since) {
    let backoff = 500;
    // After a failed poll the next one is a probe (timeout=0) that answers at once, rather than a long
    // poll the server would hold for POLL_TIMEOUT when nothing changed; once it answers, the page
    // re-reads its controllers (re-creating them if the server restarted) before it says Live.
    let failed = false;
    let busy = false; // the last poll was answered 503: the next one asks at once whether that is over
    while (!stopped) {
      pollAbort = new AbortController();
      const abort = pollAbort;
      // A probe answers at once, a long-poll within POLL_TIMEOUT: one silent for longer has lost its connection.
      const probeTimer = setTimeout(() => abort.abort(), failed ? PROBE_TIMEOUT : POLL_TIMEOUT * 1000 + PROBE_TIMEOUT);
      try {
        if (failed) setConnection('offline', 'Reconnecting', '', { retry: true, count: '…' });
        const res = await fetch(`/changes?since=${since}&timeout=${failed || busy ? 0 : POLL_TIMEOUT}`, {
          headers: { Accept: 'application/json' },
          signal: pollAbort.signal,
        });
        const body = await res.json().catch(() => null);
        clearTimeout(probeTimer);
        if (res.status === 410) {
          // The history moved past us: re-read everything, carry on from the current seq.
          setConnection('resync', 'Re-syncing…');
          const missed = since;
          since = (body && body.error && body.error.current) || since;
          stats.resyncs += 1;
          appendNote(`The server no longer has the changes after #${missed} (it restarted, or its history moved on): everything re-read`);
          if (!(await requestSync())) throw new Error('re-sync failed');
          if (failed) stats.reconnects += 1;
          failed = false;
          clearConnectionError();
          feedAnswered();
          backoff = 500;
          continue;
        }
        if (res.status === 503) {
          // Busy (too-many-waiters, server-busy): its Retry-After, with the server's own message in the chip's
          // title. Only the change feed waits: reads, edits and commits go on, so nothing says they fail.
          const refusal = new APIError(503, body, 'GET', '/changes', { retryAfter: retryAfterOf(res) });
          pollLive = false;
          busy = true;
          await countdown((refusal.retryAfter || 1) * 1000, 'Change feed busy, retrying', refusal.message, { retry: false });
          continue;
        }
        busy = false;
        if (!res.ok || !body || !Array.isArray(body.changes)) throw new Error(`HTTP ${res.status}`);
        const caughtUp = failed;
        if (failed) {
          // Back after an error: catch up before saying Live, so that a click goes to controllers
          // that exist and the page shows what the server has.
          setConnection('resync', 'Re-syncing…');
          if (!(await requestSync())) throw new Error('re-sync failed');
          stats.reconnects += 1;
          failed = false;
          clearConnectionError();
        }
        feedAnswered();
        backoff = 500;
        if (body.changes.length) {
          // Described once the sync has read the objects they name (a new employee, say).
          const changes = body.changes;
          if (caughtUp) appendFeed(changes);
          else requestSync().then(() => appendFeed(changes));
        }
        if (typeof body.last === 'number') since = body.last;
      } catch (e) {
        clearTimeout(probeTimer);
        if (stopped) return;
        failed = true;
        pollLive = false;
        await countdown(backoffWait(backoff), 'Reconnecting');
        backoff = Math.min(backoff * 2, BACKOFF_CAP);
      }
    }
  }

  function appendNote(text) {
    el.feed.prepend(h('li', { class: 'feed-item feed-note fresh' }, h('span', { class: 'seq', text: '⟳' }), h('span', { text })));
    el.feedEmpty.hidden = true;
  }

  function describeTarget(target) {
    const p = state.people.get(target);
    if (p) return personName(p);
    const d = state.departments.find((x) => x.$id === target);
    if (d) return d.name;
    return names.get(target) || target; // deleted since: the name the page last read
  }

  function formatValue(v) {
    if (v === null || v === undefined) return 'nil';
    if (typeof v === 'string') return `“${v}”`;
    if (typeof v === 'number') return Number.isInteger(v) ? v.toLocaleString('en-US') : String(v);
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (Array.isArray(v)) return v.length === 1 ? formatValue(v[0]) : `[${v.length}]`;
    if (v.$ref) return describeTarget(v.$ref);
    if (v.$date) return formatDate(v);
    if (v.$marker) return v.$marker;
    return JSON.stringify(v);
  }

  // A to-many (or array) set as a whole (PUT of the array, PUT /store): what it gained and lost, by element, rather
  // than two counts that may be equal ("[11] → [11]"); the same elements in another order: "reordered".
  function describeArraySetting(old, now) {
    const id = (v) => (v && v.$ref) || JSON.stringify(v);
    const before = new Set(old.map(id));
    const after = new Set(now.map(id));
    const added = now.filter((v) => !before.has(id(v)));
    const removed = old.filter((v) => !after.has(id(v)));
    if (!added.length && !removed.length) {
      const same = old.length === now.length && old.every((v, i) => id(v) === id(now[i]));
      return [h('span', { class: 'new', text: same ? 'unchanged' : 'reordered' })];
    }
    const list = (values) => values.map(formatValue).join(', ');
    return [
      ...(added.length
        ? [h('span', { class: 'kind kind-insert', text: '+' }), h('span', { class: 'new', text: list(added) })]
        : []),
      ...(removed.length
        ? [h('span', { class: 'kind kind-remove', text: '−' }), h('span', { class: 'old', text: list(removed) })]
        : []),
    ];
  }

  // A change to the store as a whole (PUT /store replaces the object graph): no object, no values.
  function describeStoreChange(c) {
    const text = c.keyPath === 'objects' ? 'Store replaced (PUT /store): every object re-read' : `Store ${c.keyPath} changed`;
    return h(
      'li',
      { class: 'feed-item feed-store fresh', 'data-seq': c.seq },
      h('span', { class: 'seq', text: `#${c.seq}` }),
      h('span', { class: 'what' }, h('span', { class: 'target', title: 'store', text })),
    );
  }

  // The keys an object of an entity always has (required attributes and to-one relationships), from the model:
  // a seq that sets all of them from null created the object, one that sets all of them to null deleted it (no
  // change can make a required value null, or find one null).
  const requiredKeys = new Map(); // entity → [key]
  const emptyValue = (v) => v === null || v === undefined || (Array.isArray(v) && v.length === 0);
  const refsOf = (v) => (Array.isArray(v) ? v : [v]).map(idOf);

  // The objects one batch of changes created or deleted, each as one entry of the feed: `${seq} ${target}` →
  // {kind: 'created' | 'deleted', target, seq, changes (its own settings), own (its own to-many insertions or
  // removals), folded (the to-many insertions or removals of it, and of nothing else, on other objects in the same
  // seq: its department's employees, say)}.
  // The settings of other objects in that seq (the manager of its reports going to nil) stay as they are.
  function lifecycles(changes) {
    const groups = new Map();
    for (const c of changes) {
      if (c.target === 'store' || typeof c.target !== 'string') continue;
      const key = `${c.seq} ${c.target}`;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(c);
    }
    const found = new Map();
    for (const [key, list] of groups) {
      const settings = list.filter((c) => c.kind === 'setting');
      const target = list[0].target;
      const required = requiredKeys.get(target.split('/')[0]);
      const keys = new Set(settings.map((c) => c.keyPath));
      // Without the model (or for an entity that requires nothing): several keys at once, all from or to null.
      const whole = required && required.length ? required.every((k) => keys.has(k)) : settings.length > 1;
      if (!whole) continue;
      let kind = null;
      if (settings.every((c) => emptyValue(c.new) && !emptyValue(c.old))) kind = 'deleted';
      else if (settings.every((c) => emptyValue(c.old) && !emptyValue(c.new))) kind = 'created';
      // Its own to-many relationships may change as insertions or removals: into a new object, out of a gone one.
      const own = list.filter((c) => c.kind !== 'setting');
      if (!kind || !own.every((c) => c.kind === (kind === 'created' ? 'insertion' : 'removal'))) continue;
      found.set(key, { kind, target, seq: list[0].seq, changes: settings, folded: [], own });
    }
    for (const c of changes) {
      if (c.kind !== 'insertion' && c.kind !== 'removal') continue;
      if (found.has(`${c.seq} ${c.target}`)) continue; // the object's own (see above)
      const refs = refsOf(c.kind === 'insertion' ? c.new : c.old);
      const kind = c.kind === 'insertion' ? 'created' : 'deleted';
      const events = refs.map((ref) => found.get(`${c.seq} ${ref}`));
      if (!refs.length || !events.every((x) => x && x.kind === kind)) continue;
      for (const x of events) x.folded.push(c);
    }
    return found;
  }

  // Its name from the values of the changes, for an object the page never read (created and deleted meanwhile).
  function nameFromChanges(list, side) {
    const value = (k) => {
      const c = list.find((x) => x.keyPath === k);
      return c && typeof c[side] === 'string' ? c[side] : '';
    };
    return personName({ firstName: value('firstName'), lastName: value('lastName') }) || value('name');
  }

  function describeLifecycle(x) {
    const side = x.kind === 'created' ? 'new' : 'old';
    const known = state.people.has(x.target) || state.departments.some((d) => d.$id === x.target) || names.has(x.target);
    const name = known ? describeTarget(x.target) : nameFromChanges(x.changes, side) || x.target;
    const values = x.changes.map((c) => `${c.keyPath} ${formatValue(c[side])}`).join(', ');
    const where = x.folded.map((c) => `${describeTarget(c.target)}.${c.keyPath}`);
    return h(
      'li',
      {
        class: `feed-item feed-lifecycle feed-${x.kind} fresh`,
        'data-seq': x.seq,
        'data-test': `feed-${x.kind}`,
        title: `${x.kind === 'created' ? 'Created with' : 'Deleted; it had'} ${values}`,
      },
      h('span', { class: 'seq', text: `#${x.seq}` }),
      h(
        'span',
        { class: 'what' },
        h('span', { class: 'target', title: x.target, text: name }),
        h('span', { class: 'event', text: ` ${x.kind}` }),
      ),
      h(
        'span',
        { class: 'values' },
        ...(where.length
          ? [
              h('span', { class: `kind ${x.kind === 'created' ? 'kind-insert' : 'kind-remove'}`, text: x.kind === 'created' ? '+' : '−' }),
              h('span', { class: 'where', text: where.join(', ') }),
            ]
          : [h('span', { class: 'where', text: x.changes.map((c) => c.keyPath).join(', ') })]),
      ),
    );
  }

  function appendFeed(changes) {
    const events = lifecycles(changes);
    const folded = new Set([...events.values()].flatMap((x) => [...x.folded, ...x.own]));
    const shown = new Set();
    const items = changes.flatMap((c) => {
      if (c.target === 'store') return [describeStoreChange(c)];
      if (folded.has(c)) return [];
      const event = events.get(`${c.seq} ${c.target}`);
      if (event) {
        if (shown.has(event)) return [];
        shown.add(event);
        return [describeLifecycle(event)];
      }
      const arrow =
        c.kind === 'insertion'
          ? [h('span', { class: 'kind kind-insert', text: '+' }), h('span', { class: 'new', text: formatValue(c.new) })]
          : c.kind === 'removal'
            ? [h('span', { class: 'kind kind-remove', text: '−' }), h('span', { class: 'old', text: formatValue(c.old) })]
            : Array.isArray(c.old) && Array.isArray(c.new)
              ? describeArraySetting(c.old, c.new)
              : [
                h('span', { class: 'old', text: formatValue(c.old) }),
                h('span', { class: 'arrow', 'aria-label': 'becomes', text: '→' }),
                h('span', { class: 'new', text: formatValue(c.new) }),
              ];
      return [
        h(
          'li',
          { class: 'feed-item fresh', 'data-seq': c.seq },
          h('span', { class: 'seq', text: `#${c.seq}` }),
          h(
            'span',
            { class: 'what' },
            h('span', { class: 'target', title: c.target, text: describeTarget(c.target) }),
            h('span', { class: 'keypath', text: `.${c.keyPath}` }),
          ),
          h('span', { class: 'values' }, ...arrow),
        ),
      ];
    });
    el.feed.prepend(...items.reverse());
    while (el.feed.children.length > FEED_LIMIT) el.feed.lastElementChild.remove();
    el.feedEmpty.hidden = el.feed.children.length > 0;
    setTimeout(() => items.forEach((i) => i.classList.remove('fresh')), 1200);
  }

  // ---------------------------------------------------------------------------------------------
  // Start and stop

  async function createControllers(emp = {}) {
    const create = (body) =>
      api('POST', '/controllers', body).catch((e) => {
        if (!(e instanceof APIError && e.status === 409)) throw e;
      });
    await create({
      name: DEP,
      kind: 'array',
      content: 'Department',
      sortDescriptors: [{ key: 'name', ascending: true, selector: 'localizedStandardCompare:' }],
      // The lists always match their sort and filter, whoever changes a value (Cocoa's default is off).
      automaticallyRearrangesObjects: true,
      idleTimeout: IDLE_TIMEOUT,
    });
    await create({
      name: EMP,
      kind: 'array',
      content: `@${DEP}.selection.employees`,
      sortDescriptors: emp.sortDescriptors || SORTS.name.map((d) => ({ key: d.key, ascending: true, selector: d.selector })),
      filterPredicate: emp.filterPredicate || undefined,
      automaticallyRearrangesObjects: true,
      idleTimeout: IDLE_TIMEOUT,
    });
  }

  // The server no longer has the page's controllers (it restarted, or someone deleted them): creates
  // them again as the page last showed them, with the same sort, filter and selection.
  async function restoreControllers() {
    const emp = state.emp || {};
    const department = idOf(state.departments[state.depSelection[0]]);
    // The employees the pending edits are for: while a new selection is on its way, the one before it (the
    // retried selection then commits the edits to them, not to the newly clicked ones).
    const selected = emp.selectedBefore ?? emp.selectionIndexes ?? [];
    const employees = selected.map((i) => idOf(state.employees[i])).filter((x) => x);
    removerCreated = false; // made again when next needed
    noteControllers();
    const edits = Object.entries(state.edits || {});
    await createControllers(emp);
    if (department) await selectExisting(DEP, [department]);
    if (employees.length) await selectExisting(EMP, employees);
    // The pending edits went with the old controllers: the page still has them, and sends them again.
    let kept = 0;
    for (const [key, value] of edits) {
      try {
        await api('PUT', ctl(EMP, `/edits/${key}`), value);
        kept += 1;
      } catch {
        // their employees are gone (or not selected any more)
      }
    }
    if (kept < edits.length) appendNote(`${edits.length - kept} pending edit(s) were lost with the controllers`);
    else if (kept) appendNote('Pending edits were kept');
  }

  // Names the page's controllers in the footer.
  function noteControllers() {
    el.names.textContent = (removerCreated ? [DEP, EMP, REMOVER] : [DEP, EMP]).join(', ');
  }

  const ORPHANS = 'bindery.orphanControllers';

  // Names in the order to remove them: a detail before its master.
  function noteOrphan(...added) {
    try {
      const names = JSON.parse(localStorage.getItem(ORPHANS) || '[]');
      localStorage.setItem(ORPHANS, JSON.stringify([...new Set([...names, ...added])].slice(-100)));
    } catch {
      // storage unavailable: the keepalive DELETE is all there is
    }
  }

  // Removes controllers that closed pages of this browser may have left behind (see pagehide).
  async function reapOrphans() {
    let names;
    try {
      names = JSON.parse(localStorage.getItem(ORPHANS) || '[]');
    } catch {
      return;
    }
    if (!names.length) return;
    const listed = await api('GET', '/controllers').catch(() => null);
    if (!listed || !listed.data || !Array.isArray(listed.data.controllers)) return;
    const existing = new Set(listed.data.controllers.map((c) => c.name));
    const left = [];
    for (const name of names.filter((n) => existing.has(n))) {
      const res = await fetch(ctl(name), { method: 'DELETE' }).catch(() => null);
      if (!res || res.status === 409) left.push(name); // its detail is still there (going away, or in use)
    }
    try {
      const now = JSON.parse(localStorage.getItem(ORPHANS) || '[]');
      localStorage.setItem(ORPHANS, JSON.stringify(now.filter((n) => !names.includes(n) || left.includes(n))));
    } catch {
      // storage unavailable
    }
  }

  async function start() {
    noteControllers();
    let backoff = 500;
    for (;;) {
      try {
        await createControllers();
        readModel(); // not waited for: only errors need it
        const seq = await syncOnce();
        clearConnectionError();
        setConnection('live', 'Live');
        pollLive = true;
        pollChanges(seq ?? 0);
        setInterval(checkControllers, CHECK_INTERVAL);
        setTimeout(reapOrphans, 1000);
        return;
      } catch (e) {
        // An HTTP answer (503 too-many-controllers, say) is shown as the server put it, and its
        // Retry-After is honoured; "unreachable" only when no answer came.
        if (e instanceof APIError) showError(e, { connection: true });
        const asked = e instanceof APIError && e.retryAfter;
        const wait = asked ? e.retryAfter * 1000 : backoffWait(backoff);
        await countdown(wait, `${failureLabel(e)}, retrying`, e instanceof APIError ? e.message : '', { retry: !asked });
        backoff = Math.min(backoff * 2, BACKOFF_CAP);
      }
    }
  }

  window.addEventListener('pagehide', () => {
    stopped = true;
    if (pollAbort) pollAbort.abort();
    // Best effort: the detail first, as the server refuses to remove a controller that another
    // follows (409). The requests may race, so all are also noted for the next page load in this
    // browser to remove if they are still there (reapOrphans). The remover follows nothing.
    const mine = removerCreated ? [REMOVER, EMP, DEP] : [EMP, DEP];
    noteOrphan(...mine);
    for (const name of mine) {
      fetch(ctl(name), { method: 'DELETE', keepalive: true }).catch(() => {});
    }
  });

  window.addEventListener('pageshow', (event) => {
    if (event.persisted) window.location.reload(); // back from the bfcache: its controllers were deleted
  });

  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && state.ready) requestSync();
  });

  // Exposed for the browser test and for curious people with a console open.
  const syncAll = () => {
    fullWanted = true; // everything read again
    return requestSync();
  };
  window.bindery = { controllers: { departments: DEP, employees: EMP, remover: REMOVER }, sync: syncAll, stats };

  start();
})();
