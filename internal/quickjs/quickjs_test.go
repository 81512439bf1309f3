package quickjs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	modOnce sync.Once
	testMod *Module
	modErr  error
)

func module(t testing.TB) *Module {
	t.Helper()
	modOnce.Do(func() { testMod, modErr = Load(context.Background(), ModuleOptions{}) })
	if modErr != nil {
		t.Fatalf("QuickJS module unavailable (run `make wasm`): %v", modErr)
	}
	return testMod
}

func newVM(t testing.TB) *VM {
	t.Helper()
	vm, err := module(t).NewVM(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Close)
	return vm
}

func evalString(t *testing.T, vm *VM, code string) string {
	t.Helper()
	v, err := vm.Eval(code, "t.js", EvalGlobal)
	if err != nil {
		t.Fatalf("%s: %v", code, err)
	}
	defer vm.Free(v)
	s, err := vm.ToString(v, -1)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestValues(t *testing.T) {
	vm := newVM(t)
	cases := []struct {
		code string
		tag  int32
	}{
		{"1", TagInt}, {"1.5", TagFloat64}, {"'s'", TagString}, {"undefined", TagUndefined}, {"null", TagNull},
		{"true", TagBool}, {"({})", TagObject}, {"Symbol()", TagSymbol}, {"10n ** 30n", TagBigInt},
	}
	for _, c := range cases {
		v, err := vm.Eval(c.code, "t.js", EvalGlobal)
		if err != nil {
			t.Fatal(err)
		}
		if v.Tag() != c.tag {
			t.Errorf("%s: tag %d, want %d", c.code, v.Tag(), c.tag)
		}
		vm.Free(v)
	}
	v, _ := vm.Eval("-2.25", "t.js", EvalGlobal)
	if v.Float() != -2.25 {
		t.Errorf("Float() = %v", v.Float())
	}
	if Int32(-7).Int() != -7 || Int32(5).Tag() != TagInt {
		t.Error("Int32")
	}
}

func TestStrings(t *testing.T) {
	vm := newVM(t)
	for _, s := range []string{"", "plain", "héllo wörld", "emoji 😀", "nul\x00inside", strings.Repeat("x", 100000)} {
		v, err := vm.NewString(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := vm.ToString(v, -1)
		vm.Free(v)
		if err != nil || got != s {
			t.Fatalf("round trip of %q: %q %v", s[:min(len(s), 20)], got[:min(len(got), 20)], err)
		}
	}
	v, _ := vm.NewString(strings.Repeat("y", 1000))
	defer vm.Free(v)
	var tl *TooLongError
	if _, err := vm.ToString(v, 10); !errors.As(err, &tl) || tl.Len != 1000 {
		t.Fatalf("bound: %v", err)
	}
}

func TestJSON(t *testing.T) {
	vm := newVM(t)
	v, err := vm.ParseJSON([]byte(`{"a":[1,2,{"b":"c"}],"d":null}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := vm.JSONStringify(v)
	vm.Free(v)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := vm.ToString(s, -1)
	vm.Free(s)
	if got != `{"a":[1,2,{"b":"c"}],"d":null}` {
		t.Fatal(got)
	}
	if _, err := vm.ParseJSON([]byte(`{bad`)); !errors.Is(err, ErrPendingException) {
		t.Fatalf("%v", err)
	}
	vm.Free(vm.TakeException())
	// The engine's own JSON ignores a replaced global JSON.
	evalString(t, vm, `JSON.parse = () => "forged"; ""`)
	v, _ = vm.ParseJSON([]byte(`[1]`))
	s, _ = vm.JSONStringify(v)
	got, _ = vm.ToString(s, -1)
	if got != "[1]" {
		t.Fatal(got)
	}
}

func TestHostFunctionsSurviveRestore(t *testing.T) {
	vm := newVM(t)
	calls := 0
	add := func(vm *VM, this Value, args []Value) (Value, error) {
		calls++
		if len(args) != 2 {
			return Undefined, &GuestError{Name: "TypeError", Message: "two arguments"}
		}
		return Int32(args[0].Int() + args[1].Int()), nil
	}
	vm.Register("host.add", add)
	fn, err := vm.NewHostFunction("host.add", 2)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := vm.Global()
	if err := vm.Set(g, "add", fn); err != nil {
		t.Fatal(err)
	}
	vm.Free(g)
	if got := evalString(t, vm, `globalThis.kept = 40; String(add(1, 2))`); got != "3" {
		t.Fatal(got)
	}
	if got := evalString(t, vm, `try { add(1) } catch (e) { e }`); got != "TypeError: two arguments" && !strings.Contains(got, "two arguments") {
		t.Fatal(got)
	}
	img, err := vm.Capture()
	if err != nil {
		t.Fatal(err)
	}
	vm2, err := module(t).Restore(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	defer vm2.Close()
	// Not registered yet in the new VM: the call throws instead of doing anything silently.
	if got := evalString(t, vm2, `try { add(1, 1); "called" } catch (e) { "threw" }`); got != "threw" {
		t.Fatal(got)
	}
	vm2.Register("host.add", add)
	if got := evalString(t, vm2, `String(add(kept, 2))`); got != "42" {
		t.Fatal(got)
	}
}

func TestPromises(t *testing.T) {
	vm := newVM(t)
	cap, err := vm.NewPromise()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := vm.Global()
	vm.Set(g, "p", vm.Dup(cap.Promise))
	vm.Free(g)
	evalString(t, vm, `globalThis.seen = "none"; p.then(v => { seen = "got " + v }); ""`)
	if vm.PromiseState(cap.Promise) != PromisePending {
		t.Fatal("not pending")
	}
	v, _ := vm.NewString("it")
	r, err := vm.Call(cap.Resolve, Undefined, v)
	if err != nil {
		t.Fatal(err)
	}
	vm.Free(r)
	vm.Free(v)
	for {
		n, err := vm.ExecutePendingJob()
		if err != nil || n <= 0 {
			break
		}
	}
	if vm.PromiseState(cap.Promise) != PromiseFulfilled || evalString(t, vm, "seen") != "got it" {
		t.Fatal("not settled")
	}
}

func TestRestoreRejectsBadImages(t *testing.T) {
	vm := newVM(t)
	img, _ := vm.Capture()
	bad := []*Image{
		nil,
		{Memory: nil},
		{Memory: make([]byte, 100)},
		{Memory: img.Memory, StackPointer: img.StackPointer, RuntimePtr: 1 << 31, ContextPtr: img.ContextPtr, Scratch: img.Scratch},
		{Memory: img.Memory, StackPointer: img.StackPointer, RuntimePtr: img.RuntimePtr, ContextPtr: img.ContextPtr, Scratch: 0},
		{Memory: img.Memory, Size: uint32(len(img.Memory)) + 1, StackPointer: img.StackPointer, RuntimePtr: img.RuntimePtr, ContextPtr: img.ContextPtr, Scratch: img.Scratch},
		{Memory: img.Memory, Patches: []Patch{{Offset: uint32(len(img.Memory)) - 1, Data: []byte{1, 2}}}, StackPointer: img.StackPointer, RuntimePtr: img.RuntimePtr, ContextPtr: img.ContextPtr, Scratch: img.Scratch},
	}
	for i, b := range bad {
		if vm, err := module(t).Restore(context.Background(), b); err == nil {
			vm.Close()
			t.Errorf("image %d restored", i)
		}
	}
}

func TestKill(t *testing.T) { // the hard stop: a VM spinning in wasm traps and is dead afterwards
	vm := newVM(t)
	go func() {
		time.Sleep(50 * time.Millisecond)
		vm.Kill()
	}()
	start := time.Now()
	_, err := vm.Eval(`for (;;) {}`, "t.js", EvalGlobal)
	if !errors.Is(err, ErrKilled) || !vm.Killed() || vm.Dead() == nil {
		t.Fatalf("err %v killed %v", err, vm.Killed())
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("kill took %v", time.Since(start))
	}
	if _, err := vm.Eval("1", "t.js", EvalGlobal); !errors.Is(err, ErrKilled) {
		t.Fatalf("a killed VM ran again: %v", err)
	}
}

func TestInterrupt(t *testing.T) { // the soft deadline: uncatchable in the guest, the VM survives
	vm := newVM(t)
	deadline := time.Now().Add(50 * time.Millisecond)
	vm.Interrupt = func() bool { return time.Now().After(deadline) }
	_, err := vm.Eval(`let n = 0; while (true) { try { n++ } catch (e) {} }`, "t.js", EvalGlobal)
	if !errors.Is(err, ErrPendingException) {
		t.Fatal(err)
	}
	exc := vm.TakeException()
	if !vm.IsUncatchable(exc) {
		t.Fatal("interrupt is catchable")
	}
	vm.Free(exc)
	vm.Interrupt = nil
	if got := evalString(t, vm, "String(1 + 1)"); got != "2" {
		t.Fatal(got)
	}
}

func TestUnavailable(t *testing.T) { // fail closed: a bad module is ErrUnavailable, never a panic
	for _, wasm := range [][]byte{[]byte("not wasm"), []byte("\x00asm\x01\x00\x00\x00")} {
		if _, err := Load(context.Background(), ModuleOptions{Wasm: wasm, DisableCache: true}); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%v", err)
		}
	}
	if p := Pinned(); p.Package != "quickjs-wasi" || p.Version == "" || !strings.HasPrefix(p.Integrity, "sha512-") {
		t.Fatalf("%+v", p)
	}
}

// TestRejectionTracker: the VM reports promises rejected with no handler, and handlers attached
// to them later; a VM restored from an image reports too.
func TestRejectionTracker(t *testing.T) {
	vm := newVM(t)
	type event struct {
		reason  string
		handled bool
	}
	var events []event
	track := func(vm *VM, promise, reason Value, handled bool) {
		s, _ := vm.ToString(reason, 100)
		events = append(events, event{s, handled})
	}
	vm.Rejection = track
	evalString(t, vm, `globalThis.p = Promise.reject("a"); Promise.resolve().then(() => { throw "b" }); "ok"`)
	for {
		n, err := vm.ExecutePendingJob()
		if err != nil || n <= 0 {
			break
		}
	}
	evalString(t, vm, `p.catch(() => {}); "ok"`)
	want := []event{{"a", false}, {"b", false}, {"a", true}}
	if len(events) != len(want) {
		t.Fatalf("events %+v, want %+v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("events %+v, want %+v", events, want)
		}
	}
	img, err := vm.Capture()
	if err != nil {
		t.Fatal(err)
	}
	vm2, err := module(t).Restore(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	defer vm2.Close()
	events = nil
	vm2.Rejection = track
	evalString(t, vm2, `Promise.reject("c"); "ok"`)
	if len(events) != 1 || events[0] != (event{"c", false}) {
		t.Fatalf("restored VM: %+v", events)
	}
}

func TestMemoryPoolBounded(t *testing.T) { // bursts do not stay resident
	SetMemoryPoolSize(2)
	defer SetMemoryPoolSize(16)
	var ms []*linearMemory
	for range 5 {
		m := memAllocator.Allocate(1<<20, 64<<20).(*linearMemory)
		m.Reallocate(1 << 20)
		ms = append(ms, m)
	}
	for _, m := range ms {
		m.Free()
	}
	if got := PooledMemory(); got <= 0 || got > 2*memPoolMax {
		t.Fatalf("pooled %d bytes after 5 frees into a pool of 2", got)
	}
	m := memAllocator.Allocate(0, 64<<20).(*linearMemory)
	if b := m.Reallocate(100); len(b) != 100 || b[0] != 0 || b[99] != 0 {
		t.Fatal("a recycled memory is not zeroed")
	}
	m.Free()
	ReleaseIdleMemory()
	if PooledMemory() != 0 {
		t.Fatal("ReleaseIdleMemory kept buffers")
	}
}

// The pool hands its buffers back by itself once nobody has used it for poolIdle, whatever
// returned them (a burst's VMs, or hot suspended runs expiring long after it); while it is in
// use it keeps them.
func TestMemoryPoolEmptiesWhenIdle(t *testing.T) {
	setIdle := func(d time.Duration) time.Duration { // a timer armed with the old value goes
		memPool.Lock()
		defer memPool.Unlock()
		old := poolIdle
		poolIdle = d
		if memPool.timer != nil {
			memPool.timer.Stop()
			memPool.timer = nil
		}
		return old
	}
	defer setIdle(setIdle(300 * time.Millisecond))
	ReleaseIdleMemory()
	m := memAllocator.Allocate(1<<20, 64<<20).(*linearMemory)
	m.Reallocate(1 << 20)
	m.Free()
	if PooledMemory() == 0 {
		t.Fatal("nothing pooled")
	}
	// In use: an allocate-and-free every 10 ms keeps the buffer pooled.
	for range 20 {
		time.Sleep(10 * time.Millisecond)
		m := memAllocator.Allocate(1<<20, 64<<20).(*linearMemory)
		m.Reallocate(1 << 20)
		m.Free()
	}
	if PooledMemory() == 0 {
		t.Fatal("the pool emptied while in use")
	}
	deadline := time.Now().Add(10 * time.Second) // generous: the bound proves it happens at all
	for PooledMemory() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pool kept its buffers though nobody used it")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
