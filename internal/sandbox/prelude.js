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
  const ObjectPrototype = O.prototype;
  const hasOwn = O.prototype.hasOwnProperty;
  const symbolToString = SYM.prototype.toString;
  const errorToString = E.prototype.toString;
  const errorStackD = getOwnPropertyDescriptor(E.prototype, 'stack');
  const errorStack = errorStackD && errorStackD.get ? errorStackD.get : function () { return this.stack; };
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
  const typedArrayBuffer = getOwnPropertyDescriptor(typedArrayProto, 'buffer').get;
  const typedArrayOffset = getOwnPropertyDescriptor(typedArrayProto, 'byteOffset').get;
  const typedArrayByteLength = getOwnPropertyDescriptor(typedArrayProto, 'byteLength').get;
  const dataViewBuffer = getOwnPropertyDescriptor(DataView.prototype, 'buffer').get;
  const dataViewOffset = getOwnPropertyDescriptor(DataView.prototype, 'byteOffset').get;
  const dataViewByteLength = getOwnPropertyDescriptor(DataView.prototype, 'byteLength').get;
  const U8 = Uint8Array, AB = ArrayBuffer;
  const u8Subarray = U8.prototype.subarray, u8Set = typedArrayProto.set;
  const fromCharCode = S.fromCharCode, strCharCodeAt = S.prototype.charCodeAt;
  const dateToISO = Date.prototype.toISOString;
  const strToLower = S.prototype.toLowerCase, strTrim = S.prototype.trim;
  const isExtensible = O.isExtensible;

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
        // Plain data objects are by far the most common: skip the exotic-object probes (each
        // failed probe throws, which costs as much as the rest of the conversion).
        const proto = getPrototypeOf(value);
        if (proto === ObjectPrototype || proto === null) return value;
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

  // ---- console inspection (issue 22 item 3) ----
  // Bounded and side-effect free on ordinary values: it reads own data properties through their
  // descriptors, so getters and toJSON never run (a Proxy's traps still do: they are the cell's
  // own code). Each call visits at most 100 values, 50 properties per object and four levels;
  // strings and keys keep 512 UTF-16 units, a whole message 4096.
  const maxInspectValues = 100, maxInspectProps = 50, maxInspectDepth = 4;
  const maxInspectString = 512, maxConsoleMessage = 4096;
  // cutUnits shortens s to at most n UTF-16 units without splitting a surrogate pair.
  function cutUnits(s, n) {
    if (s.length <= n) return s;
    let end = n;
    const c = apply(strCharCodeAt, s, [end - 1]);
    if (c >= 0xD800 && c <= 0xDBFF) end--;
    return apply(strSlice, s, [0, end]);
  }
  function quote(s) { return stringify(cutUnits(s, maxInspectString)) + (s.length > maxInspectString ? '…' : ''); }
  function dataValue(o, k) {
    let d;
    try { d = getOwnPropertyDescriptor(o, k); } catch { return { bad: '[unreadable]' }; }
    if (d === undefined) return { none: true };
    if (!apply(hasOwn, d, ['value'])) return { bad: d.get && d.set ? '[Getter/Setter]' : d.get ? '[Getter]' : '[Setter]', enumerable: d.enumerable };
    return { value: d.value, enumerable: d.enumerable };
  }
  function inspectValue(v, st, depth) {
    switch (typeof v) {
      case 'string': return quote(v);
      case 'number': return v === 0 && 1 / v < 0 ? '-0' : S(v);
      case 'bigint': return S(v) + 'n';
      case 'boolean': return v ? 'true' : 'false';
      case 'undefined': return 'undefined';
      case 'symbol': return apply(symbolToString, v, []);
      case 'function': return describeFunction(v);
    }
    if (v === null) return 'null';
    if (st.values-- <= 0) return '…';
    for (let i = 0; i < st.seen.length; i++) if (st.seen[i] === v) return '[Circular]';
    const proto = getPrototypeOf(v);
    const plain = proto === ObjectPrototype || proto === null || isArray(v);
    const tag = plain ? '' : brand(v);
    if (tag === '[object Promise]') return '[Promise: not awaited]';
    if (tag === '[object Error]') {
      const n = dataValue(v, 'name'), m = dataValue(v, 'message');
      let name = typeof n.value === 'string' ? n.value : '';
      if (!name) { try { const pn = dataValue(getPrototypeOf(v), 'name'); name = typeof pn.value === 'string' ? pn.value : 'Error'; } catch { name = 'Error'; } }
      const msg = typeof m.value === 'string' ? m.value : '';
      return cutUnits(msg ? name + ': ' + msg : name, maxInspectString);
    }
    if (tag === '[object Date]') { try { return quote(apply(dateToISO, v, [])); } catch { return 'Invalid Date'; } }
    if (!plain && isArrayBuffer(v)) return '[ArrayBuffer ' + apply(arrayBufferByteLength, v, []) + ' bytes]';
    const ta = plain ? undefined : typedArrayName(v);
    if (ta !== undefined) return '[' + ta + ' length ' + apply(typedArrayLength, v, []) + ']';
    if (depth >= maxInspectDepth) return isArray(v) ? '[Array]' : '[Object]';
    push(st.seen, v);
    const parts = [];
    let more = 0, open = '{', close = '}';
    try {
      if (!plain && (isMap(v) || isSet(v))) {
        const map = isMap(v);
        open = (map ? 'Map(' : 'Set(') + apply(map ? mapSize : setSize, v, []) + ') {';
        apply(map ? mapForEach : setForEach, v, [(val, key) => {
          if (parts.length >= maxInspectProps) { more++; return; }
          push(parts, map ? inspectValue(key, st, depth + 1) + ' => ' + inspectValue(val, st, depth + 1) : inspectValue(val, st, depth + 1));
        }]);
      } else if (isArray(v)) {
        open = '['; close = ']';
        const lenD = dataValue(v, 'length');
        const len = typeof lenD.value === 'number' ? lenD.value : 0;
        for (let i = 0; i < len; i++) {
          if (parts.length >= maxInspectProps) { more = len - i; break; }
          const d = dataValue(v, S(i));
          push(parts, d.none ? '<empty>' : d.bad !== undefined ? d.bad : inspectValue(d.value, st, depth + 1));
        }
      } else {
        const keys = ownKeys(v);
        for (let i = 0; i < keys.length; i++) {
          const k = keys[i];
          if (typeof k !== 'string') continue;
          const d = dataValue(v, k);
          if (d.none || d.enumerable === false) continue;
          if (parts.length >= maxInspectProps) { more++; continue; }
          push(parts, quote(k) + ':' + (d.bad !== undefined ? d.bad : inspectValue(d.value, st, depth + 1)));
        }
      }
    } catch (e) {
      push(parts, '[inspection failed: ' + cutUnits(errorText(e), 200) + ']');
    }
    st.seen.length--;
    if (more > 0) push(parts, '… ' + more + ' more');
    return open + apply(arrJoin, parts, [',']) + close;
  }
  // consoleMessage renders console arguments: strings as they are, the rest inspected, joined by
  // spaces, the whole cut to 4096 UTF-16 units.
  function consoleMessage(args) {
    const st = { values: maxInspectValues, seen: [] };
    const parts = [];
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      let s;
      try { s = typeof a === 'string' ? a : inspectValue(a, st, 0); } catch (e) { s = '[inspection failed]'; }
      push(parts, s);
    }
    const msg = apply(arrJoin, parts, [' ']);
    return msg.length > maxConsoleMessage ? cutUnits(msg, maxConsoleMessage) + '…[message truncated]' : msg;
  }

  // ---- TextEncoder / TextDecoder (UTF-8 only; issue 22 item 9) ----
  // Plain JavaScript over captured intrinsics: instances are ordinary objects in the VM heap, so
  // they survive a snapshot and a restore like any other value.
  function bytesOf(input) {
    if (input === undefined) return new U8(0);
    if (isArrayBuffer(input)) return new U8(input);
    if (typedArrayName(input) !== undefined) {
      return new U8(apply(typedArrayBuffer, input, []), apply(typedArrayOffset, input, []), apply(typedArrayByteLength, input, []));
    }
    try {
      return new U8(apply(dataViewBuffer, input, []), apply(dataViewOffset, input, []), apply(dataViewByteLength, input, []));
    } catch { /* not a DataView */ }
    throw new TE('TextDecoder.decode: the input must be an ArrayBuffer, a typed array or a DataView');
  }
  function encodeUTF8(str, out, max) { // returns [units read, bytes written]
    const n = str.length;
    let i = 0, w = 0;
    while (i < n) {
      let c = apply(strCharCodeAt, str, [i]);
      let units = 1;
      if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n) {
        const d = apply(strCharCodeAt, str, [i + 1]);
        if (d >= 0xDC00 && d <= 0xDFFF) { c = 0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00); units = 2; }
        else c = 0xFFFD;
      } else if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;
      const size = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
      if (w + size > max) break;
      if (size === 1) out[w++] = c;
      else if (size === 2) { out[w++] = 0xC0 | (c >> 6); out[w++] = 0x80 | (c & 63); }
      else if (size === 3) { out[w++] = 0xE0 | (c >> 12); out[w++] = 0x80 | ((c >> 6) & 63); out[w++] = 0x80 | (c & 63); }
      else { out[w++] = 0xF0 | (c >> 18); out[w++] = 0x80 | ((c >> 12) & 63); out[w++] = 0x80 | ((c >> 6) & 63); out[w++] = 0x80 | (c & 63); }
      i += units;
    }
    return [i, w];
  }
  const TextEncoderC = class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input) {
      const str = input === undefined ? '' : S(input);
      const buf = new U8(str.length * 3);
      const rw = encodeUTF8(str, buf, buf.length);
      const out = new U8(rw[1]); // its own buffer, of its own length
      apply(u8Set, out, [apply(u8Subarray, buf, [0, rw[1]])]);
      return out;
    }
    encodeInto(input, dest) {
      if (typedArrayName(dest) !== 'Uint8Array') throw new TE('TextEncoder.encodeInto: the destination must be a Uint8Array');
      const rw = encodeUTF8(S(input), dest, apply(typedArrayLength, dest, []));
      return { read: rw[0], written: rw[1] };
    }
  };
  const decoderState = new WeakMap();
  const wmGet = WeakMap.prototype.get, wmSet = WeakMap.prototype.set;
  const utf8Labels = create(null);
  utf8Labels['utf-8'] = true; utf8Labels.utf8 = true; utf8Labels['unicode-1-1-utf-8'] = true;
  const TextDecoderC = class TextDecoder {
    constructor(label, options) {
      const l = label === undefined ? 'utf-8' : apply(strToLower, S(label), []);
      if (utf8Labels[apply(strTrim, l, [])] !== true) throw new RE('TextDecoder: only UTF-8 is supported, not ' + S(label));
      const o = options !== null && typeof options === 'object' ? options : {};
      apply(wmSet, decoderState, [this, { fatal: !!o.fatal, ignoreBOM: !!o.ignoreBOM, pending: [], bomSeen: false }]);
    }
    get encoding() { return 'utf-8'; }
    get fatal() { const st = apply(wmGet, decoderState, [this]); return !!(st && st.fatal); }
    get ignoreBOM() { const st = apply(wmGet, decoderState, [this]); return !!(st && st.ignoreBOM); }
    decode(input, options) {
      const st = apply(wmGet, decoderState, [this]);
      if (st === undefined) throw new TE('TextDecoder.decode: not a TextDecoder');
      const stream = options !== null && typeof options === 'object' && !!options.stream;
      const src = bytesOf(input);
      const pend = st.pending;
      const n = pend.length + apply(typedArrayLength, src, []);
      const at = (k) => k < pend.length ? pend[k] : src[k - pend.length];
      const units = [], chunks = [];
      const flush = () => { push(chunks, apply(fromCharCode, undefined, units)); units.length = 0; };
      const bad = () => { if (st.fatal) { st.pending = []; throw new TE('TextDecoder: the data is not valid UTF-8'); } push(units, 0xFFFD); };
      let i = 0;
      while (i < n) {
        const b = at(i);
        let need = 0, cp = 0, lo = 0x80, hi = 0xBF;
        if (b < 0x80) { push(units, b); i++; if (units.length >= 4096) flush(); continue; }
        else if (b >= 0xC2 && b <= 0xDF) { need = 1; cp = b & 0x1F; }
        else if (b >= 0xE0 && b <= 0xEF) { need = 2; cp = b & 0x0F; if (b === 0xE0) lo = 0xA0; if (b === 0xED) hi = 0x9F; }
        else if (b >= 0xF0 && b <= 0xF4) { need = 3; cp = b & 0x07; if (b === 0xF0) lo = 0x90; if (b === 0xF4) hi = 0x8F; }
        else { bad(); i++; continue; }
        let k = 1;
        for (; k <= need && i + k < n; k++) {
          const c = at(i + k);
          if (c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xBF)) break;
          cp = (cp << 6) | (c & 0x3F);
        }
        if (k <= need) {
          if (i + k >= n && stream) break; // an incomplete sequence at the end: wait for more
          bad(); i += k; continue;
        }
        if (cp >= 0x10000) { cp -= 0x10000; push(units, 0xD800 + (cp >> 10)); push(units, 0xDC00 + (cp & 0x3FF)); }
        else push(units, cp);
        i += need + 1;
        if (units.length >= 4096) flush();
      }
      const rest = [];
      for (let k = i; k < n; k++) push(rest, at(k));
      st.pending = stream ? rest : [];
      if (!stream && rest.length > 0) bad();
      flush();
      let out = apply(arrJoin, chunks, ['']);
      if (!st.ignoreBOM && !st.bomSeen && out.length > 0) {
        if (apply(strCharCodeAt, out, [0]) === 0xFEFF) out = apply(strSlice, out, [1]);
      }
      if (out.length > 0 || !stream) st.bomSeen = stream;
      return out;
    }
  };
  defineGlobal('TextEncoder', TextEncoderC);
  defineGlobal('TextDecoder', TextDecoderC);

  // The last read of a missing name on tools, MCP or MCP.<server> (see strict below).
  let missing = null;

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
        if (missing !== null && out.name === 'TypeError') out.missing = missing;
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
    // console.* never fails a cell: the host keeps a cumulative console budget per result and
    // replaces what does not fit with one marker (issue 22 item 3). Levels other than log say so.
    // Once the host says the console is full, lines are only counted (formatting them would
    // cost the cell's time for output nobody sees); if the host's budget was reset meanwhile (a
    // wait started a new result), the line is sent after all.
    let consoleFull = false;
    function emit(prefix, args) {
      if (consoleFull) {
        if (apply(out, undefined, ['console-drop', '']) === true) return;
        consoleFull = false;
      }
      consoleFull = apply(out, undefined, ['console', prefix + consoleMessage(args)]) === true;
    }
    const level = (prefix) => function (...args) { emit(prefix, args); };
    const log = { log(...args) { emit('', args); } }.log;
    defineGlobal('console', freeze({ log, info: level('[info] '), warn: level('[warn] '), error: level('[error] '), debug: level('[debug] ') }));

    // ---- results: values kept between the cells of one run (issue 22 item 1) ----
    // The value crosses as JSON text made by encode (the same conversion as a cell's return
    // value), so the host stores exactly what a later results.load gives back.
    defineGlobal('results', freeze({
      save(value) {
        let text;
        try { text = encode(value); } catch (e) { return promiseReject(e); }
        return apply(async, undefined, ['results.save', text]);
      },
      load(id) { return call('results.load', { id: S(id) }); },
      delete(id) { return call('results.delete', { id: S(id) }); },
    }));

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
    // Feature detection works as on plain objects (issue 22 item 4): a missing name reads as
    // undefined, so `typeof tools.x`, `tools.x ? … : …` and `'x' in tools` behave. The read is
    // remembered (name and the cell position of the read); when the cell then fails with the
    // TypeError of calling or dereferencing undefined on that line, the host replaces the
    // engine's bare "not a function" with the catalog's explanation and nearest names.
    function stackHere() {
      try {
        const st = apply(errorStack, new E(), []);
        return typeof st === 'string' ? apply(strSlice, st, [0, 2000]) : '';
      } catch { return ''; }
    }
    function strict(target, kind, server) {
      return new ProxyC(target, {
        get(t, key) {
          const v = t[key];
          if (v !== undefined || typeof key !== 'string' || probes[key] === true) return v;
          missing = { kind, server, name: apply(strSlice, key, [0, 200]), stack: stackHere() };
          return undefined;
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
    // ---- Swarm: agents.run, phase and log (tools.swarm, issue 25) ----
    // Installed per exec, and only when the run may start child agents: code mode alone never
    // exposes them. The host checks every option and limit; this side only shapes the calls and
    // copies the failed child's facts (runId, status, …) from the error's details onto the error.
    const swarmFields = ['runId', 'status', 'label', 'text', 'schemaError'];
    function swarmError(e) {
      try {
        const d = e !== null && typeof e === 'object' ? getOwnPropertyDescriptor(e, 'details') : undefined;
        const n = e !== null && typeof e === 'object' ? getOwnPropertyDescriptor(e, 'name') : undefined;
        const det = d && d.value;
        if (n && n.value === 'SwarmAgentError' && det !== null && typeof det === 'object') {
          for (let i = 0; i < swarmFields.length; i++) {
            const k = swarmFields[i];
            const v = getOwnPropertyDescriptor(det, k);
            if (v && typeof v.value === 'string') defineProperty(e, k, { value: v.value, writable: true, configurable: true, enumerable: true });
          }
        }
      } catch { /* a plain error stays as it is */ }
      throw e;
    }
    function swarmNote(kind, value) {
      if (typeof value !== 'string' || value.length === 0) throw new TE(kind + '(…) takes a non-empty string');
      ask('agents.note', { kind, text: value });
    }
    function installSwarm() {
      const agents = create(null);
      defineProperty(agents, 'run', {
        enumerable: true,
        value: function run(prompt, options) {
          const p = call('agents.run', { prompt, options: options === undefined ? null : options });
          return apply(promiseThen, p, [undefined, swarmError]);
        },
      });
      defineGlobal('agents', freeze(agents));
      defineGlobal('phase', function phase(title) { swarmNote('phase', title); });
      defineGlobal('log', function log(message) { swarmNote('log', message); });
    }
    return [setup, encode, describeError, makeError, reseed, installNamespaces, installSwarm];
  };
})
