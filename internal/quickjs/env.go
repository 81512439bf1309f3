package quickjs

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The complete list of what the guest can import. Anything not here does not exist for it: the
// module is a WASI reactor, but we do not instantiate wazero's WASI implementation, so there are no
// files, sockets, arguments, environment variables or exit codes to reach.

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoInval   = 28
)

var processStart = time.Now()

// deterministicEpoch is the realtime clock of a deterministic VM.
var deterministicEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type vmKey struct{}

func vmFrom(ctx context.Context) *VM {
	vm, _ := ctx.Value(vmKey{}).(*VM)
	return vm
}

func instantiateHostModules(ctx context.Context, rt wazero.Runtime) error {
	env := rt.NewHostModuleBuilder("env")
	fn := func(name string, f api.GoModuleFunc, params, results []api.ValueType) {
		env.NewFunctionBuilder().WithGoModuleFunction(f, params, results).Export(name)
	}
	fn("host_call", func(ctx context.Context, m api.Module, stack []uint64) {
		vm := vmFrom(ctx)
		if vm == nil {
			stack[0] = 0
			return
		}
		stack[0] = uint64(vm.hostCall(uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]), uint32(stack[4])))
	}, []api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i32})
	fn("host_interrupt", func(ctx context.Context, m api.Module, stack []uint64) {
		stack[0] = 0
		if vm := vmFrom(ctx); vm != nil && vm.shouldInterrupt() {
			stack[0] = 1
		}
	}, nil, []api.ValueType{i32})
	fn("host_promise_rejection", func(ctx context.Context, m api.Module, stack []uint64) {
		// The trampoline hands us the promise and the reason as heap values we must free.
		vm := vmFrom(ctx)
		if vm == nil {
			return
		}
		if vm.Rejection != nil && stack[0] != 0 && stack[1] != 0 {
			p, ok1 := vm.mem.ReadUint64Le(uint32(stack[0]))
			r, ok2 := vm.mem.ReadUint64Le(uint32(stack[1]))
			if ok1 && ok2 {
				vm.Rejection(vm, Value(p), Value(r), uint32(stack[2]) != 0)
			}
		}
		vm.freeHeapValue(uint32(stack[0]))
		vm.freeHeapValue(uint32(stack[1]))
	}, []api.ValueType{i32, i32, i32}, nil)
	// No module loader: import declarations never parse in a cell and dynamic import() rejects.
	fn("host_module_normalize", func(ctx context.Context, m api.Module, stack []uint64) { stack[0] = 0 },
		[]api.ValueType{i32, i32}, []api.ValueType{i32})
	fn("host_module_load", func(ctx context.Context, m api.Module, stack []uint64) { stack[0] = 0 },
		[]api.ValueType{i32, i32}, []api.ValueType{i32})
	// The guest's local time zone is UTC: the host's zone is not the guest's business.
	fn("host_get_timezone_offset", func(ctx context.Context, m api.Module, stack []uint64) { stack[0] = 0 },
		[]api.ValueType{i32, i32}, []api.ValueType{i32})
	if _, err := env.Instantiate(ctx); err != nil {
		return err
	}

	wasi := rt.NewHostModuleBuilder("wasi_snapshot_preview1")
	wfn := func(name string, f api.GoModuleFunc, params, results []api.ValueType) {
		wasi.NewFunctionBuilder().WithGoModuleFunction(f, params, results).Export(name)
	}
	// Real clocks, deliberately: Date.now() is the wall clock (models ask for "today"), and
	// performance.now() is monotonic since process start. Neither reveals anything secret.
	wfn("clock_time_get", func(ctx context.Context, m api.Module, stack []uint64) {
		id, resultPtr := uint32(stack[0]), uint32(stack[2])
		var ns uint64
		det := false
		if vm := vmFrom(ctx); vm != nil && vm.det != nil {
			det = true
		}
		switch {
		case id == 0 && det: // a fixed realtime while building a shared image
			ns = uint64(deterministicEpoch.UnixNano())
		case id == 0: // realtime
			ns = uint64(time.Now().UnixNano())
		case id <= 3 && det:
			ns = 0
		case id <= 3: // monotonic, process and thread CPU time
			ns = uint64(time.Since(processStart).Nanoseconds())
		default:
			stack[0] = errnoInval
			return
		}
		if !m.Memory().WriteUint64Le(resultPtr, ns) {
			stack[0] = errnoInval
			return
		}
		stack[0] = errnoSuccess
	}, []api.ValueType{i32, i64, i32}, []api.ValueType{i32})
	wfn("fd_close", func(ctx context.Context, m api.Module, stack []uint64) { stack[0] = errnoBadf },
		[]api.ValueType{i32}, []api.ValueType{i32})
	wfn("fd_fdstat_get", func(ctx context.Context, m api.Module, stack []uint64) { stack[0] = errnoBadf },
		[]api.ValueType{i32, i32}, []api.ValueType{i32})
	wfn("fd_seek", func(ctx context.Context, m api.Module, stack []uint64) { stack[0] = errnoBadf },
		[]api.ValueType{i32, i64, i32, i32}, []api.ValueType{i32})
	// stdout/stderr writes (QuickJS prints nothing in normal operation) are counted and dropped.
	wfn("fd_write", func(ctx context.Context, m api.Module, stack []uint64) {
		fd, iovs, n, nwritten := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
		if fd != 1 && fd != 2 {
			stack[0] = errnoBadf
			return
		}
		var total uint32
		mem := m.Memory()
		for i := uint32(0); i < n && i < 1024; i++ {
			l, ok := mem.ReadUint32Le(iovs + i*8 + 4)
			if !ok {
				stack[0] = errnoInval
				return
			}
			total += l
		}
		mem.WriteUint32Le(nwritten, total)
		stack[0] = errnoSuccess
	}, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32})
	wfn("random_get", func(ctx context.Context, m api.Module, stack []uint64) {
		buf, n := uint32(stack[0]), uint32(stack[1])
		b, ok := m.Memory().Read(buf, n)
		if !ok {
			stack[0] = errnoInval
			return
		}
		if vm := vmFrom(ctx); vm != nil && vm.det != nil {
			_, _ = vm.det.Read(b)
		} else {
			_, _ = rand.Read(b)
		}
		stack[0] = errnoSuccess
	}, []api.ValueType{i32, i32}, []api.ValueType{i32})
	_, err := wasi.Instantiate(ctx)
	return err
}
