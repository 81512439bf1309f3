package quickjs

import (
	"errors"
	"math"
)

// Value is a QuickJS JSValue as the wasm32 build represents it: NaN-boxed in 64 bits, the tag in
// the high word. Values with a negative tag hold a reference that must be released with Free.
type Value uint64

// Tags from quickjs.h (QuickJS-NG).
const (
	TagBigInt      = -9
	TagSymbol      = -8
	TagString      = -7
	TagStringRope  = -6
	TagObject      = -1
	TagInt         = 0
	TagBool        = 1
	TagNull        = 2
	TagUndefined   = 3
	TagException   = 6
	TagShortBigInt = 7
	TagFloat64     = 8
)

func mkval(tag int32, v uint32) Value { return Value(uint64(uint32(tag))<<32 | uint64(v)) }

// Constant values.
var (
	Undefined = mkval(TagUndefined, 0)
	Null      = mkval(TagNull, 0)
	True      = mkval(TagBool, 1)
	False     = mkval(TagBool, 0)
)

// Tag returns the normalised tag (all doubles report TagFloat64).
func (v Value) Tag() int32 {
	t := int32(uint64(v) >> 32)
	if uint32(t-TagBigInt) >= uint32(TagFloat64-TagBigInt) {
		return TagFloat64
	}
	return t
}

// IsException reports the JS_EXCEPTION marker.
func (v Value) IsException() bool { return v.Tag() == TagException }

// IsUndefined reports undefined.
func (v Value) IsUndefined() bool { return v.Tag() == TagUndefined }

// IsObject reports an object (functions and arrays included).
func (v Value) IsObject() bool { return v.Tag() == TagObject }

// IsString reports a string (including ropes).
func (v Value) IsString() bool { t := v.Tag(); return t == TagString || t == TagStringRope }

func (v Value) refCounted() bool { return int32(uint64(v)>>32) < 0 && v.Tag() != TagFloat64 }

// Int returns an int value's payload (valid when Tag()==TagInt).
func (v Value) Int() int32 { return int32(uint32(v)) }

// Float returns a double value (valid when Tag()==TagFloat64).
func (v Value) Float() float64 {
	// JS_FLOAT64_TAG_ADDEND = 0x7ff80000 - JS_TAG_FIRST + 1
	const addend = uint64(0x7ff80000-TagBigInt+1) << 32
	return math.Float64frombits(uint64(v) + addend)
}

// Free releases a reference.
func (vm *VM) Free(v Value) {
	if !v.refCounted() || vm.dead != nil {
		return
	}
	_ = vm.callVoid(vm.f.freeValue, uint64(vm.ctxPtr), uint64(v))
}

// Dup adds a reference.
func (vm *VM) Dup(v Value) Value {
	if !v.refCounted() {
		return v
	}
	r, err := vm.call1(vm.f.dupValue, uint64(vm.ctxPtr), uint64(v))
	if err != nil {
		return Undefined
	}
	return Value(r)
}

func (vm *VM) result(r uint64, err error) (Value, error) {
	if err != nil {
		return Undefined, err
	}
	if Value(r).IsException() {
		return Undefined, ErrPendingException
	}
	return Value(r), nil
}

// Eval flags (JS_EVAL_*).
const (
	EvalGlobal            = 0
	EvalStrict            = 1 << 3
	EvalBacktraceBarrier  = 1 << 6
	EvalAsync             = 1 << 7
	evalCompileOnly       = 1 << 5
	EvalFlagsScriptStrict = EvalGlobal | EvalStrict
)

// Eval evaluates a script and returns its completion value.
func (vm *VM) Eval(code, filename string, flags int) (Value, error) {
	cp, rc, err := vm.writeString(code)
	if err != nil {
		return Undefined, err
	}
	defer rc()
	fp, rf, err := vm.writeString(filename)
	if err != nil {
		return Undefined, err
	}
	defer rf()
	return vm.result(vm.call1(vm.f.eval, uint64(vm.ctxPtr), uint64(cp), uint64(len(code)), uint64(fp), uint64(flags)))
}

// Call calls fn with this and args (all borrowed) and returns an owned result.
func (vm *VM) Call(fn, this Value, args ...Value) (Value, error) {
	var argv uint32
	if len(args) > 0 {
		p, release, err := vm.alloc(uint32(8 * len(args)))
		if err != nil {
			return Undefined, err
		}
		defer release()
		for i, a := range args {
			vm.mem.WriteUint64Le(p+uint32(8*i), uint64(a))
		}
		argv = p
	}
	return vm.result(vm.call1(vm.f.call, uint64(vm.ctxPtr), uint64(fn), uint64(this), uint64(len(args)), uint64(argv)))
}

// TakeException returns (and clears) the pending exception.
func (vm *VM) TakeException() Value {
	r, err := vm.call1(vm.f.getException, uint64(vm.ctxPtr))
	if err != nil {
		return Undefined
	}
	return Value(r)
}

// IsUncatchable reports QuickJS's uncatchable errors (interrupt, some out-of-memory paths).
func (vm *VM) IsUncatchable(v Value) bool {
	r, err := vm.call1(vm.f.isUncatchableError, uint64(v))
	return err == nil && r != 0
}

// IsFunction reports a callable.
func (vm *VM) IsFunction(v Value) bool {
	r, err := vm.call1(vm.f.isFunction, uint64(vm.ctxPtr), uint64(v))
	return err == nil && r != 0
}

// NewString creates a string from UTF-8 (invalid sequences become U+FFFD in the guest).
func (vm *VM) NewString(s string) (Value, error) {
	p, release, err := vm.writeString(s)
	if err != nil {
		return Undefined, err
	}
	defer release()
	return vm.result(vm.call1(vm.f.newStringLen, uint64(vm.ctxPtr), uint64(p), uint64(len(s))))
}

// NewObject creates an empty plain object.
func (vm *VM) NewObject() (Value, error) {
	return vm.result(vm.call1(vm.f.newObject, uint64(vm.ctxPtr)))
}

// ToString converts v to a Go string with JavaScript's ToString (which may run guest code for
// objects; callers pass strings when that matters). max bounds the bytes copied out: a longer
// string returns ErrTooLong without copying.
func (vm *VM) ToString(v Value, max int) (string, error) {
	lenp, release, err := vm.alloc(8)
	if err != nil {
		return "", err
	}
	defer release()
	p, err := vm.call1(vm.f.toCStringLen2, uint64(vm.ctxPtr), uint64(lenp), uint64(v), 0)
	if err != nil {
		return "", err
	}
	if p == 0 {
		return "", ErrPendingException
	}
	defer func() { _ = vm.callVoid(vm.f.freeCString, uint64(vm.ctxPtr), p) }()
	n, _ := vm.mem.ReadUint32Le(lenp)
	if max >= 0 && int(n) > max {
		return "", &TooLongError{Len: int(n)}
	}
	b, ok := vm.mem.Read(uint32(p), n)
	if !ok {
		return "", errors.New("quickjs: string out of range")
	}
	return string(b), nil
}

// ToStringPrefix converts v to a string and returns at most max bytes of its UTF-8 form (cut
// wherever max falls: the caller cuts on a rune boundary) and the full length in bytes.
func (vm *VM) ToStringPrefix(v Value, max int) (string, int, error) {
	lenp, release, err := vm.alloc(8)
	if err != nil {
		return "", 0, err
	}
	defer release()
	p, err := vm.call1(vm.f.toCStringLen2, uint64(vm.ctxPtr), uint64(lenp), uint64(v), 0)
	if err != nil {
		return "", 0, err
	}
	if p == 0 {
		return "", 0, ErrPendingException
	}
	defer func() { _ = vm.callVoid(vm.f.freeCString, uint64(vm.ctxPtr), p) }()
	n, _ := vm.mem.ReadUint32Le(lenp)
	read := n
	if max >= 0 && int(read) > max {
		read = uint32(max)
	}
	b, ok := vm.mem.Read(uint32(p), read)
	if !ok {
		return "", 0, errors.New("quickjs: string out of range")
	}
	return string(b), int(n), nil
}

// TooLongError reports a string longer than the caller's bound.
type TooLongError struct{ Len int }

func (e *TooLongError) Error() string { return "quickjs: string too long" }

// ParseJSON parses JSON text with the engine's own parser (no guest globals are consulted).
func (vm *VM) ParseJSON(text []byte) (Value, error) {
	p, release, err := vm.writeBytes(text)
	if err != nil {
		return Undefined, err
	}
	defer release()
	fp, rf, err := vm.writeString("<json>")
	if err != nil {
		return Undefined, err
	}
	defer rf()
	return vm.result(vm.call1(vm.f.parseJSON, uint64(vm.ctxPtr), uint64(p), uint64(len(text)), uint64(fp)))
}

// JSONStringify runs the engine's JSON.stringify (toJSON methods and getters of the value run).
func (vm *VM) JSONStringify(v Value) (Value, error) {
	return vm.result(vm.call1(vm.f.jsonStringify, uint64(vm.ctxPtr), uint64(v), uint64(Undefined), uint64(Undefined)))
}

// Global returns the global object (owned).
func (vm *VM) Global() (Value, error) {
	return vm.result(vm.call1(vm.f.getGlobalObject, uint64(vm.ctxPtr)))
}

// Get reads obj[name] (owned; getters run).
func (vm *VM) Get(obj Value, name string) (Value, error) {
	p, release, err := vm.writeString(name)
	if err != nil {
		return Undefined, err
	}
	defer release()
	return vm.result(vm.call1(vm.f.getPropertyStr, uint64(vm.ctxPtr), uint64(obj), uint64(p)))
}

// Set writes obj[name] = val, consuming val.
func (vm *VM) Set(obj Value, name string, val Value) error {
	p, release, err := vm.writeString(name)
	if err != nil {
		vm.Free(val)
		return err
	}
	defer release()
	r, err := vm.call1(vm.f.setPropertyStr, uint64(vm.ctxPtr), uint64(obj), uint64(p), uint64(val))
	if err != nil {
		return err
	}
	if int32(r) < 0 {
		return ErrPendingException
	}
	return nil
}

// NewHostFunction creates a guest function that dispatches to the callback registered under name.
func (vm *VM) NewHostFunction(name string, length int) (Value, error) {
	p, release, err := vm.writeString(name)
	if err != nil {
		return Undefined, err
	}
	defer release()
	hp, err := vm.call1(vm.f.newHostFunction, uint64(p), uint64(len(name)), uint64(length))
	if err != nil {
		return Undefined, err
	}
	if hp == 0 {
		return Undefined, errors.New("quickjs: cannot create host function")
	}
	v, _ := vm.mem.ReadUint64Le(uint32(hp))
	_ = vm.callVoid(vm.f.free, hp)
	return vm.result(v, nil)
}

// PromiseCapability is a promise with its resolving functions, all owned by the host.
type PromiseCapability struct{ Promise, Resolve, Reject Value }

// NewPromise creates a promise whose resolving functions only the host holds.
func (vm *VM) NewPromise() (PromiseCapability, error) {
	fp, release, err := vm.alloc(16)
	if err != nil {
		return PromiseCapability{}, err
	}
	defer release()
	p, err := vm.result(vm.call1(vm.f.newPromiseCapability, uint64(vm.ctxPtr), uint64(fp)))
	if err != nil {
		return PromiseCapability{}, err
	}
	res, _ := vm.mem.ReadUint64Le(fp)
	rej, _ := vm.mem.ReadUint64Le(fp + 8)
	return PromiseCapability{Promise: p, Resolve: Value(res), Reject: Value(rej)}, nil
}

// Promise states.
const (
	PromisePending   = 0
	PromiseFulfilled = 1
	PromiseRejected  = 2
)

// PromiseState returns the state of a promise (-1 if v is not a promise).
func (vm *VM) PromiseState(p Value) int {
	r, err := vm.call1(vm.f.promiseState, uint64(vm.ctxPtr), uint64(p))
	if err != nil {
		return -1
	}
	return int(int32(r))
}

// PromiseResult returns a settled promise's value or reason (owned).
func (vm *VM) PromiseResult(p Value) Value {
	r, err := vm.call1(vm.f.promiseResult, uint64(vm.ctxPtr), uint64(p))
	if err != nil {
		return Undefined
	}
	return Value(r)
}

// ExecutePendingJob runs one queued job: 1 ran one, 0 none queued, -1 the job threw (the
// exception is pending; only uncatchable errors get here).
func (vm *VM) ExecutePendingJob() (int, error) {
	r, err := vm.call1(vm.f.executePendingJob)
	if err != nil {
		return 0, err
	}
	return int(int32(r)), nil
}

// Int32 makes an int value.
func Int32(n int32) Value { return mkval(TagInt, uint32(n)) }
