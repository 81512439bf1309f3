// The guest-side half of the code-mode bridge. It runs once, in the template VM, before any cell
// exists; every VM is a copy of that state. Its completion value is a factory the host calls with
// the three host functions; the factory installs the guest globals and returns the internal
// functions the host keeps (by reference, in VM memory) and calls later.
//
// Rules this file lives by (RATIONALE.md, "Why does the prelude capture intrinsics?"):
//  - The cell may replace any global or prototype method before our code touches its values. We
//    capture every intrinsic we use here, at init, and never call a guest-modifiable method on a
//    guest value: calls go through Reflect.apply on captured functions.
//  - The host functions (`out`, `sync`, `async`) are reachable only through these closures, never
//    as globals: a cell cannot forge a reply to its own pending call or invent a call id (the host
//    allocates ids and holds the promise resolvers).
//  - Errors handed to the cell are plain Error objects built here from plain data.
(function () {
  'use strict';
  const G = globalThis;
  const O = Object, A = Array, S = String, N = Number, M = Math, J = JSON, R = Reflect;
  const P = Promise, E = Error, TE = TypeError, RE = RangeError, SYM = Symbol, MapC = Map, SetC = Set, ProxyC = Proxy;
  const apply = R.apply, ownKeys = R.ownKeys;
  const defineProperty = O.defineProperty, freeze = O.freeze, create = O.create;
  const getOwnPropertyDescriptor = O.getOwnPropertyDescriptor, getPrototypeOf = O.getPrototypeOf;
  const isArray = A.isArray, stringify = J.stringify, parseJSON = J.parse;
  const imul = M.imul, floor = M.floor;
  const objectToString = O.prototype.toString;
  const hasOwn = O.prototype.hasOwnProperty;
  const symbolToString = SYM.prototype.toString;
  const errorToString = E.prototype.toString;
  const strSlice = S.prototype.slice, strIndexOf = S.prototype.indexOf, strSplit = S.prototype.split;
  const strReplace = S.prototype.replace;
  const arrPush = A.prototype.push, arrJoin = A.prototype.join;
  const mapForEach = MapC.prototype.forEach, setForEach = SetC.prototype.forEach;
  const mapSize = getOwnPropertyDescriptor(MapC.prototype, 'size').get;
  const setSize = getOwnPropertyDescriptor(SetC.prototype, 'size').get;
  const promiseResolve = P.resolve.bind(P), promiseReject = P.reject.bind(P);
  const promiseThen = P.prototype.then;
  const arrayBufferByteLength = getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const typedArrayLength = getOwnPropertyDescriptor(typedArrayProto, 'length').get;
  const typedArrayTag = getOwnPropertyDescriptor(typedArrayProto, SYM.toStringTag).get;

  const push = (arr, v) => { arr[arr.length] = v; };
  const brand = (v) => apply(objectToString, v, []);
  function isMap(v) { try { apply(mapSize, v, []); return true; } catch { return false; } }
  function isSet(v) { try { apply(setSize, v, []); return true; } catch { return false; } }
  function isArrayBuffer(v) { try { apply(arrayBufferByteLength, v, []); return true; } catch { return false; } }
  function typedArrayName(v) { try { return apply(typedArrayTag, v, []); } catch { return undefined; } }

  function defineGlobal(name, value) {
    // Writable and configurable: a cell may shadow or delete our globals; only it loses.
    defineProperty(G, name, { value, writable: true, configurable: true, enumerable: false });
  }

  // ---- JSON adapter (P1–P2, X7) ----
  // Converts any guest value to JSON text the host can trust. JSON values pass through; the
  // rest become plain strings (BigInt → digits, functions → "[Function name]", symbols →
  // "Symbol(desc)", errors → "Name: message", binary → a short description), Maps become objects
  // (or entry arrays when a key is not a string), Sets arrays. A cycle is an error.
  function describeFunction(fn) {
    let name = '';
    try {
      const d = getOwnPropertyDescriptor(fn, 'name');
      if (d && typeof d.value === 'string') name = d.value;
    } catch { /* proxies */ }
    return name ? '[Function ' + name + ']' : '[Function]';
  }
  function errorText(err) {
    try {
      const s = apply(errorToString, err, []);
      return typeof s === 'string' ? s : 'Error';
    } catch { return 'Error'; }
  }
  function adapt(key, value) {
    switch (typeof value) {
      case 'bigint': return S(value);
      case 'function': return describeFunction(value);
      case 'symbol': return apply(symbolToString, value, []);
      case 'object': {
        if (value === null || isArray(value)) return value;
        if (isMap(value)) {
          let allStrings = true;
          apply(mapForEach, value, [(v, k) => { if (typeof k !== 'string') allStrings = false; }]);
          if (allStrings) {
            const o = create(null);
            apply(mapForEach, value, [(v, k) => { defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true }); }]);
            return o;
          }
          const entries = [];
          apply(mapForEach, value, [(v, k) => { push(entries, [k, v]); }]);
          return entries;
        }
        if (isSet(value)) {
          const items = [];
          apply(setForEach, value, [(v) => { push(items, v); }]);
          return items;
        }
        if (isArrayBuffer(value)) return '[ArrayBuffer ' + apply(arrayBufferByteLength, value, []) + ' bytes]';
        const ta = typedArrayName(value);
        if (ta !== undefined) return '[' + ta + ' length ' + apply(typedArrayLength, value, []) + ']';
        if (brand(value) === '[object Error]') return errorText(value);
        return value;
      }
      default: return value;
    }
  }
  // encode returns JSON text; undefined becomes "null". Throws TypeError on cycles.
  function encode(value) {
    const s = stringify(value, adapt);
    return s === undefined ? 'null' : s;
  }
  // show renders a value for text output: strings as themselves, the rest as JSON.
  function show(value) {
    if (typeof value === 'string') return value;
    if (typeof value === 'undefined') return 'undefined';
    try { return encode(value); } catch (e) { return '[unserializable: ' + errorText(e) + ']'; }
  }

  // ---- errors handed to the guest ----
  function makeError(text) {
    // text is JSON from the host: {name, message, code?, details?}
    const d = parseJSON(text);
    // A TypeError or RangeError from the host is one (`e instanceof TypeError`); other names are
    // Errors with that name (AbortError…).
    const err = d.name === 'TypeError' ? new TE(d.message) : d.name === 'RangeError' ? new RE(d.message) : new E(d.message);
    if (d.name && d.name !== 'Error' && d.name !== 'TypeError' && d.name !== 'RangeError') defineProperty(err, 'name', { value: d.name, writable: true, configurable: true, enumerable: false });
    if (d.code) defineProperty(err, 'code', { value: d.code, writable: true, configurable: true, enumerable: true });
    if (d.details !== undefined) defineProperty(err, 'details', { value: d.details, writable: true, configurable: true, enumerable: true });
    return err;
  }

  // describeError turns a rejection reason into {name, message, stack} JSON for the host.
  function describeError(reason) {
    const out = { name: '', message: '', stack: '', code: '' };
    try {
      if (reason !== null && (typeof reason === 'object' || typeof reason === 'function') && brand(reason) === '[object Error]') {
        const n = reason.name, m = reason.message, st = reason.stack, c = reason.code;
        out.name = typeof n === 'string' ? apply(strSlice, n, [0, 200]) : 'Error';
        out.message = typeof m === 'string' ? apply(strSlice, m, [0, 4000]) : '';
        out.stack = typeof st === 'string' ? apply(strSlice, st, [0, 4000]) : '';
        out.code = typeof c === 'string' ? apply(strSlice, c, [0, 100]) : '';
      } else {
        out.name = 'Uncaught';
        out.message = apply(strSlice, show(reason), [0, 4000]);
      }
    } catch (e) {
      out.name = 'Uncaught';
      out.message = '[error while describing the thrown value]';
    }
    return stringify(out);
  }

  // ---- Math.random, re-seeded per VM (the template's native RNG state would be shared) ----
  let s0 = 1, s1 = 2, s2 = 3, s3 = 4;
  const rotl = (x, k) => (x << k) | (x >>> (32 - k));
  function next32() { // xoshiro128**
    const result = imul(rotl(imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = rotl(s3, 11);
    return result;
  }
  const random = {
    random() { return ((next32() >>> 5) * 67108864 + (next32() >>> 6)) / 9007199254740992; },
  }.random;
  defineProperty(M, 'random', { value: random, writable: true, configurable: true, enumerable: false });

  return function install(out, sync, async) {
    // out(kind, text): append output; sync(op, json) → json text; async(op, json) → Promise.
    function call(op, payload) {
      return apply(async, undefined, [op, stringify(payload)]);
    }
    function ask(op, payload) {
      return parseJSON(apply(sync, undefined, [op, stringify(payload)]));
    }
    function askP(op, payload) {
      try { return promiseResolve(ask(op, payload)); } catch (e) { return promiseReject(e); }
    }

    // ---- output (P1–P2) ----
    defineGlobal('text', function text(value) { apply(out, undefined, ['text', show(value)]); });
    defineGlobal('json', function json(value) { apply(out, undefined, ['json', encode(value)]); });
    const log = function log(...args) {
      const parts = [];
      for (let i = 0; i < args.length; i++) push(parts, show(args[i]));
      apply(out, undefined, ['text', apply(arrJoin, parts, [' '])]);
    };
    defineGlobal('console', freeze({ log, info: log, warn: log, error: log, debug: log }));

    defineGlobal('yield_control', function yield_control(reason) {
      return call('yield', { reason: reason === undefined ? '' : S(reason) });
    });

    // ---- timers: host timers, so a pending timeout is pending work like a tool call ----
    let nextTimer = 1;
    const timers = new MapC();
    const mapGet = MapC.prototype.get, mapSet = MapC.prototype.set, mapDelete = MapC.prototype.delete;
    defineGlobal('setTimeout', function setTimeout(fn, ms, ...args) {
      if (typeof fn !== 'function') throw new TE('setTimeout: callback must be a function');
      const id = nextTimer++;
      let delay = N(ms);
      if (!(delay >= 0)) delay = 0;
      const p = call('sleep', { ms: delay, timer: id });
      apply(mapSet, timers, [id, true]);
      apply(promiseThen, p, [(fired) => {
        const live = apply(mapGet, timers, [id]);
        apply(mapDelete, timers, [id]);
        if (live && fired) apply(fn, undefined, args);
      }]);
      return id;
    });
    defineGlobal('clearTimeout', function clearTimeout(id) {
      if (apply(mapGet, timers, [id])) {
        apply(mapSet, timers, [id, false]);
        ask('timer.cancel', { timer: N(id) });
      }
    });

    // ---- strict namespaces: tools, MCP and MCP.<server> (issue 14 item 4) ----
    // Reading a name that is not there throws a TypeError that says so and suggests the nearest
    // names (the host answers from the catalog), instead of `undefined` and a later "not a
    // function". Own properties (the helpers, convenience functions, servers, tools) are
    // returned as they are — they are non-configurable, so a Proxy could not change them anyway —
    // and names the engine and common code probe on any object (then for await, toJSON for JSON,
    // toString/valueOf for conversions, Symbol keys…) read as undefined, as on a plain object.
    const probes = create(null);
    const probeNames = ['then', 'catch', 'finally', 'toJSON', 'toString', 'toLocaleString', 'valueOf',
      'constructor', 'prototype', '__proto__', 'length', 'inspect', 'nodeType', 'tagName', '$$typeof',
      'asymmetricMatch', '@@__IMMUTABLE_ITERABLE__@@', '@@__IMMUTABLE_RECORD__@@'];
    for (let i = 0; i < probeNames.length; i++) probes[probeNames[i]] = true;
    function strict(target, kind, server) {
      return new ProxyC(target, {
        get(t, key) {
          const v = t[key];
          if (v !== undefined || typeof key !== 'string' || probes[key] === true) return v;
          ask('unknown', { kind, server, name: key }); // throws the explanation
          throw new TE(key + ' is not defined');
        },
      });
    }

    // setup is called by the host once per exec with the run's data.
    // reseed gives each VM its own Math.random sequence (the template's state is shared).
    function reseed(a, b, c, d) {
      s0 = a | 0; s1 = b | 0; s2 = c | 0; s3 = d | 0;
      if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
    }
    function setup(text) {
      const run = parseJSON(text);

      // ---- catalog (G1–G5) ----
      const entries = [];
      for (let i = 0; i < run.tools.length; i++) push(entries, freeze(run.tools[i]));
      defineGlobal('ALL_TOOLS', freeze(entries));
      const tools = create(null);
      const method = (name, fn) => defineProperty(tools, name, { value: fn, enumerable: false, writable: false, configurable: false });
      method('search', function search(query, options) {
        const o = options && typeof options === 'object' ? options : {};
        return askP('search', {
          query: S(query === undefined ? '' : query),
          limit: o.limit === undefined ? null : N(o.limit),
          server: o.server === undefined ? null : S(o.server),
        });
      });
      method('describe', function describe(id) {
        return askP('describe', { id: S(id) });
      });
      method('callValue', function callValue(id, input) { return call('callValue', { id: S(id), input: input === undefined ? {} : input }); });
      method('call', function call_(id, input) { return call('call', { id: S(id), input: input === undefined ? {} : input }); });
      const names = run.safeNames;
      for (let i = 0; i < names.length; i++) {
        const name = names[i][0], id = names[i][1];
        // G3/S10: the host only sends unambiguous names that cannot shadow a helper.
        defineProperty(tools, name, {
          value: function (input) { return call('callValue', { id, input: input === undefined ? {} : input }); },
          enumerable: true, writable: false, configurable: false,
        });
      }
      defineGlobal('tools', strict(freeze(tools), 'tools', ''));

      // ---- MCP namespace (M2) ----
      const mcp = create(null);
      defineProperty(mcp, '$search', {
        value: function $search(query, options) {
          const o = options && typeof options === 'object' ? options : {};
          return askP('mcp.search', {
            query: S(query === undefined ? '' : query),
            limit: o.limit === undefined ? null : N(o.limit),
            server: o.server === undefined ? null : S(o.server),
          });
        },
      });
      for (let i = 0; i < run.mcp.length; i++) {
        const srv = run.mcp[i];
        const ns = create(null);
        const server = srv.server;
        for (let j = 0; j < srv.tools.length; j++) {
          const jsName = srv.tools[j][0], tool = srv.tools[j][1];
          defineProperty(ns, jsName, {
            enumerable: true,
            value: function (input) {
              if (arguments.length > 1) return promiseReject(new TE('MCP.' + srv.js + '.' + jsName + ' takes exactly one object argument'));
              if (input === undefined) input = {};
              if (input === null || typeof input !== 'object' || isArray(input)) {
                return promiseReject(new TE('MCP.' + srv.js + '.' + jsName + ' takes one object argument, e.g. ({ key: value })'));
              }
              return call('mcp.call', { server, tool, input });
            },
          });
        }
        defineProperty(ns, '$api', {
          value: function $api(toolName, options) {
            const o = options && typeof options === 'object' ? options : {};
            return askP('mcp.api', { server, tool: toolName === undefined ? null : S(toolName), schema: !!o.schema });
          },
        });
        const resources = create(null);
        defineProperty(resources, 'list', { enumerable: true, value: function list() { return call('mcp.resources.list', { server }); } });
        defineProperty(resources, 'read', { enumerable: true, value: function read(arg) { return call('mcp.resources.read', { server, uri: arg && typeof arg === 'object' ? S(arg.uri) : S(arg) }); } });
        const prompts = create(null);
        defineProperty(prompts, 'list', { enumerable: true, value: function list() { return call('mcp.prompts.list', { server }); } });
        defineProperty(prompts, 'get', {
          enumerable: true,
          value: function get(arg) {
            const o = arg && typeof arg === 'object' ? arg : { name: arg };
            return call('mcp.prompts.get', { server, name: S(o.name), arguments: o.arguments === undefined ? {} : o.arguments });
          },
        });
        if (!apply(hasOwn, ns, ['resources'])) defineProperty(ns, 'resources', { value: freeze(resources) });
        if (!apply(hasOwn, ns, ['prompts'])) defineProperty(ns, 'prompts', { value: freeze(prompts) });
        defineProperty(mcp, srv.js, { value: strict(freeze(ns), 'mcp', server), enumerable: true });
      }
      defineGlobal('MCP', strict(freeze(mcp), 'server', ''));

      // ---- virtual declaration files (M3): answered by the host, no tool call ----
      defineGlobal('API', freeze({
        list(prefix) { return askP('api.list', { prefix: prefix === undefined ? '' : S(prefix) }); },
        // The host answers api.read with the file's text itself, not JSON: declaration files
        // are large and would otherwise be escaped on the host and parsed again here.
        read(path) {
          try { return promiseResolve(apply(sync, undefined, ['api.read', stringify({ path: S(path) })])); } catch (e) { return promiseReject(e); }
        },
      }));

      defineGlobal('namespaces', freeze(create(null)));
    }

    // ---- plugin namespaces (N5): installed per run, after the catalog template ----
    // text is the host's JSON: [{id, global, data, calls: [path, …]}]. data is plain JSON with
    // null where a callable goes; each callable calls the host with its namespace id and index —
    // never a tool name, so a cell cannot aim a call at a tool the namespace does not declare.
    function deepFreeze(v) {
      if (v === null || typeof v !== 'object') return v;
      const keys = ownKeys(v);
      for (let i = 0; i < keys.length; i++) deepFreeze(v[keys[i]]);
      return freeze(v);
    }
    function installNamespaces(text) {
      const list = parseJSON(text);
      const all = create(null);
      for (let i = 0; i < list.length; i++) {
        const d = list[i];
        const id = d.id;
        const fn = (index) => function (...args) { return call('ns.call', { ns: id, call: index, args }); };
        let root = d.data;
        for (let j = 0; j < d.calls.length; j++) {
          const path = d.calls[j];
          if (path.length === 0) { root = fn(j); continue; }
          let o = root;
          for (let k = 0; k < path.length - 1; k++) o = o[path[k]];
          defineProperty(o, path[path.length - 1], { value: fn(j), enumerable: true, writable: false, configurable: false });
        }
        if (root === null || typeof root !== 'object' && typeof root !== 'function') root = create(null);
        deepFreeze(root);
        defineGlobal(d.global, root);
        defineProperty(all, d.global, { value: root, enumerable: true });
      }
      defineGlobal('namespaces', freeze(all));
    }
    return [setup, encode, describeError, makeError, reseed, installNamespaces];
  };
})
