package namespace

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/codemode-go/codemode/api"
)

// PathSep joins the segments of a callable's path in messages; keys may not contain it (N4).
const PathSep = "."

// maxScopeBytes bounds one serialized scope: it is installed into every VM of the run.
const maxScopeBytes = 1 << 20

// maxScopeDepth bounds nesting.
const maxScopeDepth = 32

// Scope is one namespace serialized for one run: the guest's plain data, and the callables the
// host resolves calls to. It holds no host object the guest could reach.
type Scope struct {
	ID         string
	GlobalName string
	PluginID   string
	// Data is the namespace value as JSON, with null where a callable goes.
	Data json.RawMessage
	// Calls are the callables by index; the guest installs a function for each at its Path and
	// calls back with the index (never a tool name: a forged call cannot pick its tool).
	Calls []Callable
}

// Callable is a callable member of a scope.
type Callable struct {
	Path  []string
	Tool  string // the backing tool's name, one of RequiredToolNames
	Input func(args []json.RawMessage) (json.RawMessage, error)
}

// Guest is the part of a scope the guest receives.
type Guest struct {
	ID     string     `json:"id"`
	Global string     `json:"global"`
	Data   any        `json:"data"`
	Calls  [][]string `json:"calls"`
}

// GuestJSON is the descriptor the prelude installs.
func (s *Scope) GuestJSON() Guest {
	paths := make([][]string, len(s.Calls))
	for i, c := range s.Calls {
		paths[i] = c.Path
	}
	return Guest{ID: s.ID, Global: s.GlobalName, Data: s.Data, Calls: paths}
}

// Build runs the namespace's CreateScope for a run and serializes the result (N3–N4).
func Build(ctx context.Context, e *Entry, sc api.NamespaceContext) (s *Scope, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("namespace %q: createScope panicked: %v", e.NS.ID, p)
		}
	}()
	sc.Config = slices.Clone(e.Config)
	v, err := e.NS.CreateScope(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("namespace %q: createScope: %w", e.NS.ID, err)
	}
	return Serialize(e, v)
}

// Serialize turns a scope value into plain data plus callables. It rejects raw functions,
// cycles, unsafe keys (__proto__, constructor, prototype, empty, containing PathSep), callables
// whose tool is not one of RequiredToolNames; shared references (the same map twice, no cycle)
// are copied; values that are not JSON become safe fallbacks (NaN and ±Inf → null, other Go
// values → their JSON encoding, or a "[type]" string).
func Serialize(e *Entry, v any) (*Scope, error) {
	s := &Scope{ID: e.NS.ID, GlobalName: e.NS.GlobalName, PluginID: e.PluginID}
	w := &walker{entry: e, scope: s, onPath: map[uintptr]bool{}}
	data, err := w.walk(reflect.ValueOf(v), nil, 0)
	if err != nil {
		return nil, fmt.Errorf("namespace %q: %w", e.NS.ID, err)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("namespace %q: %w", e.NS.ID, err)
	}
	if len(b) > maxScopeBytes {
		return nil, fmt.Errorf("namespace %q: the scope is %d bytes of data (limit %d): keep data behind tools", e.NS.ID, len(b), maxScopeBytes)
	}
	s.Data = b
	return s, nil
}

type walker struct {
	entry  *Entry
	scope  *Scope
	onPath map[uintptr]bool // maps and slices on the current path: a repeat is a cycle
}

var callableType = reflect.TypeOf((*api.NamespaceCallable)(nil))

func where(path []string) string {
	if len(path) == 0 {
		return "the scope itself"
	}
	return strings.Join(path, PathSep)
}

func (w *walker) walk(v reflect.Value, path []string, depth int) (any, error) {
	if depth > maxScopeDepth {
		return nil, fmt.Errorf("%s is nested more than %d levels deep", where(path), maxScopeDepth)
	}
	for v.IsValid() && v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return nil, nil
	}
	if v.Type() == callableType {
		c := v.Interface().(*api.NamespaceCallable)
		if c == nil {
			return nil, nil
		}
		if !slices.Contains(w.entry.NS.RequiredToolNames, c.Tool) {
			return nil, fmt.Errorf("%s targets tool %q, which is not one of the namespace's requiredToolNames %v", where(path), c.Tool, w.entry.NS.RequiredToolNames)
		}
		w.scope.Calls = append(w.scope.Calls, Callable{Path: slices.Clone(path), Tool: c.Tool, Input: c.Input})
		return nil, nil
	}
	switch v.Kind() {
	case reflect.Func:
		return nil, fmt.Errorf("%s is a raw function: scope members call tools only through api.NamespaceTool (raw functions would bypass the tool's policy, hooks and approvals)", where(path))
	case reflect.Chan, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return "[" + v.Type().String() + "]", nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.String:
		return v.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint(), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, nil
		}
		return f, nil
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
		if v.Type().Key().Kind() != reflect.String {
			return w.fallback(v, path, depth)
		}
		return w.object(v, path, depth)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice {
			if v.IsNil() {
				return nil, nil
			}
			if v.Type().Elem().Kind() == reflect.Uint8 { // []byte: JSON's base64 string
				return w.fallback(v, path, depth)
			}
		}
		return w.array(v, path, depth)
	case reflect.Pointer:
		if v.IsNil() {
			return nil, nil
		}
		if w.onPath[v.Pointer()] {
			return nil, fmt.Errorf("%s is a cycle (it contains itself)", where(path))
		}
		w.onPath[v.Pointer()] = true
		defer delete(w.onPath, v.Pointer())
		if _, ok := v.Interface().(json.Marshaler); ok {
			return w.fallback(v, path, depth)
		}
		return w.walk(v.Elem(), path, depth+1)
	}
	return w.fallback(v, path, depth)
}

func (w *walker) object(v reflect.Value, path []string, depth int) (any, error) {
	ptr := v.Pointer()
	if w.onPath[ptr] {
		return nil, fmt.Errorf("%s is a cycle (it contains itself)", where(path))
	}
	w.onPath[ptr] = true
	defer delete(w.onPath, ptr)
	keys := v.MapKeys()
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.String()
	}
	sort.Strings(names)
	out := make(map[string]any, len(keys))
	for _, k := range names {
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("%s: %w", where(append(path, k)), err)
		}
		e, err := w.walk(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())), append(path, k), depth+1)
		if err != nil {
			return nil, err
		}
		out[k] = e
	}
	return out, nil
}

func (w *walker) array(v reflect.Value, path []string, depth int) (any, error) {
	if v.Kind() == reflect.Slice && v.Len() > 0 {
		ptr := v.Pointer()
		if w.onPath[ptr] {
			return nil, fmt.Errorf("%s is a cycle (it contains itself)", where(path))
		}
		w.onPath[ptr] = true
		defer delete(w.onPath, ptr)
	}
	out := make([]any, v.Len())
	for i := range out {
		e, err := w.walk(v.Index(i), append(path, fmt.Sprint(i)), depth+1)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// fallback encodes any other Go value with encoding/json (time.Time, structs, []byte…) and walks
// the result, so what reaches the guest is always plain JSON; what cannot be encoded becomes a
// "[type]" string.
func (w *walker) fallback(v reflect.Value, path []string, depth int) (any, error) {
	if v.Kind() == reflect.Struct && hasFunc(v.Type(), 0) {
		return nil, fmt.Errorf("%s (%s) holds a function: scope members call tools only through api.NamespaceTool", where(path), v.Type())
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return "[" + v.Type().String() + "]", nil
	}
	var plain any
	if err := json.Unmarshal(b, &plain); err != nil {
		return "[" + v.Type().String() + "]", nil
	}
	return w.walk(reflect.ValueOf(plain), path, depth+1)
}

// hasFunc reports whether a struct type has an exported func field (encoding/json would fail on
// it; we want the message that says why).
func hasFunc(t reflect.Type, depth int) bool {
	if depth > 4 {
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Func {
			return true
		}
		if ft.Kind() == reflect.Struct && hasFunc(ft, depth+1) {
			return true
		}
	}
	return false
}

// checkKey refuses keys that would reach the guest's prototype machinery or confuse paths (N4).
func checkKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("empty key")
	case k == "__proto__" || k == "constructor" || k == "prototype":
		return fmt.Errorf("unsafe key %q", k)
	case strings.Contains(k, PathSep) || strings.ContainsRune(k, 0):
		return fmt.Errorf("key %q contains the path separator %q", k, PathSep)
	}
	return nil
}
