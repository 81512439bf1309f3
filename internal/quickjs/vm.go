package quickjs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/codemode-go/codemode/internal/wasmkill"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// fnID names an export this package calls. Calls go through per-depth function handles: wazero
// gives every api.Function its own native stack, so a handle must never be re-entered while it is
// running (a host callback that calls back into the guest uses the next depth's handles).
type fnID uint8

const (
	fnInitialize fnID = iota
	fnQjsInit
	fnSetMemoryLimit
	fnSetMaxStackSize
	fnSetInterruptHandler
	fnGetRuntimePtr
	fnGetContextPtr
	fnSetRuntimeAndContext
	fnNewHostFunction
	fnExecutePendingJob
	fnRunGC
	fnMalloc
	fnFree
	fnEval
	fnCall
	fnFreeValue
	fnDupValue
	fnGetException
	fnNewStringLen
	fnToCStringLen2
	fnFreeCString
	fnParseJSON
	fnJsonStringify
	fnNewPromiseCapability
	fnPromiseState
	fnPromiseResult
	fnGetPropertyStr
	fnSetPropertyStr
	fnGetGlobalObject
	fnIsUncatchableError
	fnThrow
	fnNewObject
	fnIsFunction
	fnSetPromiseRejectionHandler
	numFns
)

// fnNames maps fnID to export names; Load refuses a module missing any of them.
var fnNames = [numFns]string{
	fnInitialize:                 "_initialize",
	fnQjsInit:                    "qjs_init",
	fnSetMemoryLimit:             "qjs_set_memory_limit",
	fnSetMaxStackSize:            "qjs_set_max_stack_size",
	fnSetInterruptHandler:        "qjs_set_interrupt_handler",
	fnGetRuntimePtr:              "qjs_get_runtime_ptr",
	fnGetContextPtr:              "qjs_get_context_ptr",
	fnSetRuntimeAndContext:       "qjs_set_runtime_and_context",
	fnNewHostFunction:            "qjs_new_host_function",
	fnExecutePendingJob:          "qjs_execute_pending_job",
	fnRunGC:                      "qjs_run_gc",
	fnMalloc:                     "malloc",
	fnFree:                       "free",
	fnEval:                       "JS_Eval",
	fnCall:                       "JS_Call",
	fnFreeValue:                  "JS_FreeValue",
	fnDupValue:                   "JS_DupValue",
	fnGetException:               "JS_GetException",
	fnNewStringLen:               "JS_NewStringLen",
	fnToCStringLen2:              "JS_ToCStringLen2",
	fnFreeCString:                "JS_FreeCString",
	fnParseJSON:                  "JS_ParseJSON",
	fnJsonStringify:              "JS_JSONStringify",
	fnNewPromiseCapability:       "JS_NewPromiseCapability",
	fnPromiseState:               "JS_PromiseState",
	fnPromiseResult:              "JS_PromiseResult",
	fnGetPropertyStr:             "JS_GetPropertyStr",
	fnSetPropertyStr:             "JS_SetPropertyStr",
	fnGetGlobalObject:            "JS_GetGlobalObject",
	fnIsUncatchableError:         "JS_IsUncatchableError",
	fnThrow:                      "JS_Throw",
	fnNewObject:                  "JS_NewObject",
	fnIsFunction:                 "JS_IsFunction",
	fnSetPromiseRejectionHandler: "qjs_set_promise_rejection_handler",
}

// funcs gives the calls readable names: vm.f.call is fnCall.
type funcs struct {
	initialize, qjsInit, setMemoryLimit, setMaxStackSize, setInterruptHandler, getRuntimePtr, getContextPtr, setRuntimeAndContext, newHostFunction, executePendingJob, runGC, malloc, free, eval, call, freeValue, dupValue, getException, newStringLen, toCStringLen2, freeCString, parseJSON, jsonStringify, newPromiseCapability, promiseState, promiseResult, getPropertyStr, setPropertyStr, getGlobalObject, isUncatchableError, throw, newObject, isFunction, setPromiseRejectionHandler fnID
}

var fnTable = funcs{
	initialize:                 fnInitialize,
	qjsInit:                    fnQjsInit,
	setMemoryLimit:             fnSetMemoryLimit,
	setMaxStackSize:            fnSetMaxStackSize,
	setInterruptHandler:        fnSetInterruptHandler,
	getRuntimePtr:              fnGetRuntimePtr,
	getContextPtr:              fnGetContextPtr,
	setRuntimeAndContext:       fnSetRuntimeAndContext,
	newHostFunction:            fnNewHostFunction,
	executePendingJob:          fnExecutePendingJob,
	runGC:                      fnRunGC,
	malloc:                     fnMalloc,
	free:                       fnFree,
	eval:                       fnEval,
	call:                       fnCall,
	freeValue:                  fnFreeValue,
	dupValue:                   fnDupValue,
	getException:               fnGetException,
	newStringLen:               fnNewStringLen,
	toCStringLen2:              fnToCStringLen2,
	freeCString:                fnFreeCString,
	parseJSON:                  fnParseJSON,
	jsonStringify:              fnJsonStringify,
	newPromiseCapability:       fnNewPromiseCapability,
	promiseState:               fnPromiseState,
	promiseResult:              fnPromiseResult,
	getPropertyStr:             fnGetPropertyStr,
	setPropertyStr:             fnSetPropertyStr,
	getGlobalObject:            fnGetGlobalObject,
	isUncatchableError:         fnIsUncatchableError,
	throw:                      fnThrow,
	newObject:                  fnNewObject,
	isFunction:                 fnIsFunction,
	setPromiseRejectionHandler: fnSetPromiseRejectionHandler,
}

// HostFunc implements a guest-callable function. Arguments are borrowed (valid only during the
// call). It returns an owned value, or an error: a *GuestError becomes a thrown guest error built
// by the VM's ErrorFactory, ErrPendingException means the callback already threw, anything else is
// thrown as a plain Error with its message.
type HostFunc func(vm *VM, this Value, args []Value) (Value, error)

// ErrPendingException is returned by VM calls whose JavaScript threw; the exception is pending in
// the context and TakeException retrieves it. Host callbacks return it to propagate a throw.
var ErrPendingException = errors.New("quickjs: JavaScript exception pending")

// ErrKilled means the VM trapped (kill flag, wasm trap) or was closed: it is dead.
var ErrKilled = errors.New("quickjs: VM killed")

// VM is one isolated QuickJS instance: its own wazero module instance and linear memory. A VM is
// not safe for concurrent use, except Kill, which any goroutine may call.
type VM struct {
	mod     *Module
	inst    api.Module
	mem     api.Memory
	lin     *linearMemory // mem's backing buffer, for its capacity
	f       funcs
	callCtx context.Context
	levels  []*level
	depth   int

	ctxPtr, rtPtr uint32
	scratch       uint32 // start of a bump-allocated scratch area in guest memory
	scratchTop    uint32 // next free byte in it
	sp            api.MutableGlobal
	kill          api.MutableGlobal
	killed        atomic.Bool

	callbacks map[string]HostFunc
	// Interrupt is consulted by QuickJS's interrupt handler every few thousand bytecodes; returning
	// true makes the running code throw an uncatchable "interrupted" error.
	Interrupt func() bool
	// ErrorFactory builds the guest error thrown for a *GuestError returned by a HostFunc. When nil,
	// a plain Error is used.
	ErrorFactory func(vm *VM, e *GuestError) (Value, error)
	// Rejection, when set, hears of every promise rejected with no handler (handled false) and
	// of a handler attached to such a promise later (handled true). The values are borrowed: Dup
	// what must outlive the call. It runs inside guest execution and must not call into the
	// guest beyond Dup and Free.
	Rejection func(vm *VM, promise, reason Value, handled bool)
	dead      error
	// det, when set, gives the VM a fixed clock and a fixed random stream (see
	// NewDeterministicVM).
	det *rand.ChaCha8
}

// GuestError is an error a host callback wants thrown in the guest as plain data.
type GuestError struct {
	Name    string
	Message string
	Code    string
}

func (e *GuestError) Error() string { return e.Name + ": " + e.Message }

const scratchSize = 4096

// NewVM creates a fresh VM: instantiates the module, initialises the QuickJS runtime and context.
func (m *Module) NewVM(ctx context.Context) (*VM, error) { return m.newVM(ctx, false) }

// NewDeterministicVM is NewVM for building images that must be the same in every process (a
// template whose snapshots another process restores): until SetDeterministic(false), the clock
// is fixed and the entropy a fixed stream, so two processes build byte-identical images. Every
// VM copied from such an image shares those seeds anyway; guest-visible randomness (Math.random)
// is re-seeded per VM by its user.
func (m *Module) NewDeterministicVM(ctx context.Context) (*VM, error) { return m.newVM(ctx, true) }

// SetDeterministic switches the fixed clock and entropy of NewDeterministicVM on or off.
func (vm *VM) SetDeterministic(on bool) {
	vm.det = nil
	if on {
		vm.det = rand.NewChaCha8([32]byte{'c', 'o', 'd', 'e', 'm', 'o', 'd', 'e'})
	}
}

func (m *Module) newVM(ctx context.Context, det bool) (*VM, error) {
	vm, err := m.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	vm.SetDeterministic(det)
	if err := vm.callVoid(vm.f.initialize); err != nil {
		vm.Close()
		return nil, err
	}
	if r, err := vm.call1(vm.f.qjsInit); err != nil || int32(r) != 0 {
		vm.Close()
		return nil, fmt.Errorf("%w: qjs_init failed", ErrUnavailable)
	}
	rt, err := vm.call1(vm.f.getRuntimePtr)
	if err != nil {
		vm.Close()
		return nil, err
	}
	c, err := vm.call1(vm.f.getContextPtr)
	if err != nil {
		vm.Close()
		return nil, err
	}
	vm.rtPtr, vm.ctxPtr = uint32(rt), uint32(c)
	p, err := vm.call1(vm.f.malloc, scratchSize)
	if err != nil || p == 0 {
		vm.Close()
		return nil, fmt.Errorf("%w: cannot allocate scratch", ErrUnavailable)
	}
	vm.scratch, vm.scratchTop = uint32(p), uint32(p)
	if err := vm.callVoid(vm.f.setInterruptHandler, 1); err != nil {
		vm.Close()
		return nil, err
	}
	// Rejection tracking lives in the runtime's memory: every VM restored from an image of this
	// one reports rejections to its Rejection callback.
	if err := vm.callVoid(vm.f.setPromiseRejectionHandler, 1); err != nil {
		vm.Close()
		return nil, err
	}
	return vm, nil
}

func (m *Module) instantiate(ctx context.Context) (*VM, error) {
	var lin *linearMemory
	alloc := experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
		lin = memAllocator.Allocate(capacity, max).(*linearMemory)
		return lin
	})
	inst, err := m.runtime.InstantiateModule(experimental.WithMemoryAllocator(ctx, alloc), m.compiled,
		wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, fmt.Errorf("%w: instantiate: %v", ErrUnavailable, err)
	}
	vm := &VM{mod: m, inst: inst, mem: inst.Memory(), lin: lin, callbacks: map[string]HostFunc{}, f: fnTable}
	vm.callCtx = context.WithValue(context.Background(), vmKey{}, vm)
	var ok bool
	if vm.sp, ok = inst.ExportedGlobal("__stack_pointer").(api.MutableGlobal); !ok {
		inst.Close(ctx)
		return nil, fmt.Errorf("%w: __stack_pointer is not an exported mutable global", ErrUnavailable)
	}
	if vm.kill, ok = inst.ExportedGlobal(wasmkill.GlobalName).(api.MutableGlobal); !ok && m.killable {
		inst.Close(ctx)
		return nil, fmt.Errorf("%w: kill flag missing", ErrUnavailable)
	}
	return vm, nil
}

// Image is a VM's complete state: its linear memory and the few pointers outside it. Restoring
// an image into a fresh instance of the same module yields the same JavaScript heap, including
// pending promises and host function objects (which dispatch by name).
type Image struct {
	// Memory is the linear memory (or a base it shares, read-only, with other images).
	Memory []byte
	// Size, when larger than len(Memory), is the memory size to grow to (new bytes are zero).
	Size uint32
	// Patches are written over Memory after it is copied in (a snapshot's changed pages).
	Patches      []Patch
	StackPointer uint32
	RuntimePtr   uint32
	ContextPtr   uint32
	Scratch      uint32
}

// Patch replaces len(Data) bytes at Offset.
type Patch struct {
	Offset uint32
	Data   []byte
}

// Capture copies the VM's state. Only call it when no JavaScript is running (between drain
// steps): the C stack must be empty.
func (vm *VM) Capture() (*Image, error) {
	img, err := vm.CaptureView()
	if err != nil {
		return nil, err
	}
	img.Memory = append([]byte(nil), img.Memory...)
	return img, nil
}

// CaptureView is Capture without the copy: the image's Memory aliases the VM's linear memory and
// is valid only until the VM runs again or is closed. For encoders that read it right away.
func (vm *VM) CaptureView() (*Image, error) {
	if vm.dead != nil {
		return nil, vm.dead
	}
	if vm.depth != 0 {
		return nil, errors.New("quickjs: capture while JavaScript is running")
	}
	size := vm.mem.Size()
	b, ok := vm.mem.Read(0, size)
	if !ok {
		return nil, errors.New("quickjs: cannot read memory")
	}
	return &Image{
		Memory:       b,
		StackPointer: uint32(vm.sp.Get()),
		RuntimePtr:   vm.rtPtr,
		ContextPtr:   vm.ctxPtr,
		Scratch:      vm.scratch,
	}, nil
}

// Restore creates a VM from an image taken from this module.
func (m *Module) Restore(ctx context.Context, img *Image) (*VM, error) {
	if img == nil || len(img.Memory) == 0 || len(img.Memory)%65536 != 0 {
		return nil, errors.New("quickjs: invalid image")
	}
	size := max(uint32(len(img.Memory)), img.Size)
	if size%65536 != 0 {
		return nil, errors.New("quickjs: invalid image size")
	}
	if img.Scratch == 0 || img.Scratch+scratchSize > size || img.RuntimePtr >= size ||
		img.ContextPtr >= size || img.StackPointer > size {
		return nil, errors.New("quickjs: image pointers out of range")
	}
	for _, p := range img.Patches {
		if uint64(p.Offset)+uint64(len(p.Data)) > uint64(size) {
			return nil, errors.New("quickjs: image patch out of range")
		}
	}
	vm, err := m.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	if cur := vm.mem.Size(); size > cur {
		if _, ok := vm.mem.Grow((size - cur) / 65536); !ok {
			vm.Close()
			return nil, errors.New("quickjs: image larger than the memory limit")
		}
	}
	if !vm.mem.Write(0, img.Memory) {
		vm.Close()
		return nil, errors.New("quickjs: cannot write image")
	}
	if tail := vm.mem.Size() - uint32(len(img.Memory)); tail > 0 {
		// Memory the instance allocated beyond the image must read as zero, as in the original.
		if b, ok := vm.mem.Read(uint32(len(img.Memory)), tail); ok {
			clear(b)
		}
	}
	for _, p := range img.Patches {
		vm.mem.Write(p.Offset, p.Data)
	}
	vm.sp.Set(uint64(img.StackPointer))
	vm.rtPtr, vm.ctxPtr = img.RuntimePtr, img.ContextPtr
	vm.scratch, vm.scratchTop = img.Scratch, img.Scratch
	if err := vm.callVoid(vm.f.setRuntimeAndContext, uint64(img.RuntimePtr), uint64(img.ContextPtr)); err != nil {
		vm.Close()
		return nil, err
	}
	return vm, nil
}

// Close frees the instance. Safe to call more than once.
func (vm *VM) Close() {
	if vm.inst != nil {
		vm.inst.Close(context.Background())
		vm.inst = nil
	}
	if vm.dead == nil {
		vm.dead = ErrKilled
	}
}

// Kill makes the running guest trap at its next loop head. Any goroutine may call it; the VM is
// unusable afterwards.
func (vm *VM) Kill() {
	if vm.killed.CompareAndSwap(false, true) && vm.kill != nil {
		vm.kill.Set(1)
	}
}

// Killed reports whether Kill was called.
func (vm *VM) Killed() bool { return vm.killed.Load() }

// Dead returns the reason the VM can no longer be used, or nil.
func (vm *VM) Dead() error { return vm.dead }

// MemorySize is the current linear memory size in bytes.
func (vm *VM) MemorySize() uint32 { return vm.mem.Size() }

// ReservedBytes is the memory the VM holds: its linear memory's capacity, which the allocator
// reserves ahead of growth and which is larger than MemorySize. Budgets of live VMs count this.
func (vm *VM) ReservedBytes() int64 {
	if vm.lin == nil || vm.lin.buf == nil {
		return int64(vm.mem.Size())
	}
	return int64(cap(vm.lin.buf))
}

// SetMemoryLimit sets the QuickJS allocator limit (bytes; 0 = unlimited).
func (vm *VM) SetMemoryLimit(n uint64) error { return vm.callVoid(vm.f.setMemoryLimit, n) }

// SetMaxStackSize bounds the JavaScript stack so deep recursion throws a RangeError instead of
// overflowing the wasm shadow stack.
func (vm *VM) SetMaxStackSize(n uint32) error {
	return vm.callVoid(vm.f.setMaxStackSize, uint64(n))
}

// RunGC runs the cycle collector.
func (vm *VM) RunGC() error { return vm.callVoid(vm.f.runGC) }

// Register binds a host callback name; functions created with NewHostFunction(name) dispatch to
// it, including functions restored from an image.
func (vm *VM) Register(name string, fn HostFunc) { vm.callbacks[name] = fn }

// ---- raw calls ----

// maxDepth bounds host→guest re-entrance (a host callback calling into the guest, which calls a
// host callback…). The bridge needs two or three levels.
const maxDepth = 16

// level is the function handles and value stack of one re-entrance depth.
type level struct {
	fns   [numFns]api.Function
	stack []uint64
}

func (vm *VM) invoke(id fnID, params ...uint64) (uint64, error) {
	if vm.dead != nil {
		return 0, vm.dead
	}
	if vm.depth >= maxDepth {
		return 0, errors.New("quickjs: host/guest re-entrance too deep")
	}
	if vm.depth == len(vm.levels) {
		vm.levels = append(vm.levels, &level{stack: make([]uint64, 8)})
	}
	lv := vm.levels[vm.depth]
	f := lv.fns[id]
	if f == nil {
		f = vm.inst.ExportedFunction(fnNames[id])
		lv.fns[id] = f
	}
	s := lv.stack
	copy(s, params)
	vm.depth++
	err := f.CallWithStack(vm.callCtx, s)
	vm.depth--
	if err != nil {
		if vm.dead == nil {
			vm.dead = fmt.Errorf("%w: %v", ErrKilled, err)
		}
		if vm.depth > 0 {
			// A nested call (from inside a host callback) trapped: the guest's C stack below us
			// is in an unknown state, so unwind the whole outer call too. wazero turns the
			// panic into an error from the outermost Call.
			panic(vm.dead)
		}
		if vm.inst != nil {
			vm.inst.Close(context.Background())
			vm.inst = nil
		}
		return 0, vm.dead
	}
	return s[0], nil
}

func (vm *VM) call1(f fnID, params ...uint64) (uint64, error) { return vm.invoke(f, params...) }

func (vm *VM) callVoid(f fnID, params ...uint64) error {
	_, err := vm.invoke(f, params...)
	return err
}

// alloc reserves n bytes of scratch (falling back to malloc); release with the returned func.
func (vm *VM) alloc(n uint32) (uint32, func(), error) {
	n = (n + 7) &^ 7
	if vm.scratchTop+n <= vm.scratch+scratchSize {
		p := vm.scratchTop
		vm.scratchTop += n
		return p, func() { vm.scratchTop = p }, nil
	}
	p, err := vm.call1(vm.f.malloc, uint64(n))
	if err != nil {
		return 0, nil, err
	}
	if p == 0 {
		return 0, nil, errors.New("quickjs: out of memory for a host buffer")
	}
	return uint32(p), func() { _ = vm.callVoid(vm.f.free, p) }, nil
}

// writeBytes copies b plus a NUL terminator into guest memory.
func (vm *VM) writeBytes(b []byte) (uint32, func(), error) {
	p, release, err := vm.alloc(uint32(len(b)) + 1)
	if err != nil {
		return 0, nil, err
	}
	vm.mem.Write(p, b)
	vm.mem.WriteByte(p+uint32(len(b)), 0)
	return p, release, nil
}

func (vm *VM) writeString(s string) (uint32, func(), error) {
	p, release, err := vm.alloc(uint32(len(s)) + 1)
	if err != nil {
		return 0, nil, err
	}
	vm.mem.WriteString(p, s)
	vm.mem.WriteByte(p+uint32(len(s)), 0)
	return p, release, nil
}

func (vm *VM) freeHeapValue(ptr uint32) {
	if ptr == 0 {
		return
	}
	if v, ok := vm.mem.ReadUint64Le(ptr); ok {
		vm.Free(Value(v))
	}
	_ = vm.callVoid(vm.f.free, uint64(ptr))
}

// hostCall is the body of the env.host_call import.
func (vm *VM) hostCall(namePtr, nameLen, thisPtr, argc, argvPtr uint32) uint32 {
	nameBytes, ok := vm.mem.Read(namePtr, nameLen)
	if !ok {
		return 0
	}
	fn := vm.callbacks[string(nameBytes)]
	if fn == nil {
		vm.throwGuest(&GuestError{Name: "Error", Message: "host function is not available"})
		return 0
	}
	this, _ := vm.mem.ReadUint64Le(thisPtr)
	var argBuf [8]Value
	args := argBuf[:0]
	for i := uint32(0); i < argc; i++ {
		ap, ok := vm.mem.ReadUint32Le(argvPtr + 4*i)
		if !ok {
			return 0
		}
		v, ok := vm.mem.ReadUint64Le(ap)
		if !ok {
			return 0
		}
		args = append(args, Value(v))
	}
	res, err := fn(vm, Value(this), args)
	if err != nil {
		if !errors.Is(err, ErrPendingException) {
			var ge *GuestError
			if !errors.As(err, &ge) {
				ge = &GuestError{Name: "Error", Message: err.Error()}
			}
			vm.throwGuest(ge)
		}
		return 0
	}
	p, err := vm.call1(vm.f.malloc, 8)
	if err != nil || p == 0 {
		vm.Free(res)
		return 0
	}
	vm.mem.WriteUint64Le(uint32(p), uint64(res))
	return uint32(p)
}

// throwGuest makes e the pending exception.
func (vm *VM) throwGuest(e *GuestError) {
	var v Value
	var err error
	if vm.ErrorFactory != nil {
		v, err = vm.ErrorFactory(vm, e)
	} else {
		v, err = vm.NewString(e.Error())
	}
	if err != nil {
		return // the factory itself threw (e.g. out of memory): that exception stays pending
	}
	_, _ = vm.call1(vm.f.throw, uint64(vm.ctxPtr), uint64(v))
}

func (vm *VM) shouldInterrupt() bool {
	return vm.Interrupt != nil && vm.Interrupt()
}
