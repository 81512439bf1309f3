// Package sandbox runs code-mode cells in QuickJS VMs: one fresh VM per exec or resume, copied
// from a warm template in which the guest prelude already ran. It owns the bridge loop: guest
// requests go to a Host; their results come back into the VM while the deadline lasts (X9); the
// soft deadline (QuickJS interrupt) and the hard kill (wasmkill flag) bound the time whatever the
// guest does (R2); memory is bounded inside the VM (R3).
package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/codemode-go/codemode/internal/quickjs"
)

//go:embed prelude.js
var preludeJS string

// Host callback names. They are baked into VM memory (function objects dispatch by name), so they
// are part of the snapshot format: change them only with a snapshot version bump.
const (
	hostOut   = "codemode.out"
	hostSync  = "codemode.sync"
	hostAsync = "codemode.async"
)

// maxStackSize bounds the JavaScript stack well below the module's 1 MiB shadow stack, so deep
// recursion throws a catchable RangeError instead of trapping the VM.
const maxStackSize = 256 << 10

// Engine holds the compiled module and the template image every VM starts from. It is safe for
// concurrent use; each Run gets its own VM.
type Engine struct {
	mod  *quickjs.Module
	tmpl *quickjs.Image
	fns  preludeFns
	// snapKey ties snapshots to this module build and prelude.
	snapKey [32]byte
	// hot keeps suspended runs' VMs alive (nil: every suspension snapshots and closes its VM).
	hot *HotCache
	// owner names this process in exported states (see SetOwner).
	owner string
}

// SetHotCache makes suspended runs keep their VMs alive within h's bounds (nil turns it off).
// Call it before the engine runs anything.
func (e *Engine) SetHotCache(h *HotCache) { e.hot = h }

// HotCache returns the engine's hot cache (nil when off).
func (e *Engine) HotCache() *HotCache { return e.hot }

// preludeFns are the prelude's internal functions, kept alive in the template's heap; their
// values stay valid in every VM restored from it (and from any snapshot of those).
type preludeFns struct {
	Setup, Encode, DescribeError, MakeError, Reseed, InstallNamespaces, InstallSwarm quickjs.Value
}

// NewEngine builds the template: a VM with the prelude evaluated and the host functions created.
func NewEngine(ctx context.Context, mod *quickjs.Module) (*Engine, error) {
	// The template is built deterministically: snapshots name it by hash, and another process
	// resuming one of them must build the very same image (issue 15).
	vm, err := mod.NewDeterministicVM(ctx)
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	if err := vm.SetMaxStackSize(maxStackSize); err != nil {
		return nil, err
	}
	factory, err := vm.Eval(preludeJS, "codemode/prelude.js", quickjs.EvalStrict)
	if err != nil {
		return nil, fmt.Errorf("sandbox: prelude: %w", describeInitError(vm, err))
	}
	var hostFns [3]quickjs.Value
	for i, name := range []string{hostOut, hostSync, hostAsync} {
		if hostFns[i], err = vm.NewHostFunction(name, 2); err != nil {
			return nil, fmt.Errorf("sandbox: host function %s: %w", name, err)
		}
	}
	install, err := vm.Call(factory, quickjs.Undefined)
	if err != nil {
		return nil, fmt.Errorf("sandbox: prelude factory: %w", describeInitError(vm, err))
	}
	arr, err := vm.Call(install, quickjs.Undefined, hostFns[0], hostFns[1], hostFns[2])
	if err != nil {
		return nil, fmt.Errorf("sandbox: prelude install: %w", describeInitError(vm, err))
	}
	var fns preludeFns
	for i, dst := range []*quickjs.Value{&fns.Setup, &fns.Encode, &fns.DescribeError, &fns.MakeError, &fns.Reseed, &fns.InstallNamespaces, &fns.InstallSwarm} {
		v, err := vm.Get(arr, fmt.Sprint(i))
		if err != nil || !vm.IsFunction(v) {
			return nil, errors.New("sandbox: prelude returned an unexpected value")
		}
		*dst = v // owned: deliberately never freed, it lives in the template
	}
	// The factory, install and the array are garbage; the host functions live on in closures.
	for _, v := range []quickjs.Value{factory, install, arr, hostFns[0], hostFns[1], hostFns[2]} {
		vm.Free(v)
	}
	if err := vm.RunGC(); err != nil {
		return nil, err
	}
	img, err := vm.Capture()
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256([]byte(preludeJS + hostOut + hostSync + hostAsync))
	for i := range key {
		key[i] ^= mod.Hash[i]
	}
	var id [9]byte
	_, _ = rand.Read(id[:])
	owner := "engine-" + base64.RawURLEncoding.EncodeToString(id[:])
	return &Engine{mod: mod, tmpl: img, fns: fns, snapKey: key, owner: owner}, nil
}

// TemplateBytes is the size of the template image (each VM starts as a copy of it).
func (e *Engine) TemplateBytes() int { return len(e.tmpl.Memory) }

func describeInitError(vm *quickjs.VM, err error) error {
	if !errors.Is(err, quickjs.ErrPendingException) {
		return err
	}
	exc := vm.TakeException()
	defer vm.Free(exc)
	st, _ := vm.Get(exc, "stack")
	defer vm.Free(st)
	s, _ := vm.ToString(exc, 4096)
	t, _ := vm.ToString(st, 4096)
	return fmt.Errorf("%s\n%s", s, t)
}

// newVM restores a VM from an image and configures it for one run.
func (e *Engine) newVM(ctx context.Context, img *quickjs.Image, memoryLimit uint64) (*quickjs.VM, error) {
	vm, err := e.mod.Restore(ctx, img)
	if err != nil {
		return nil, err
	}
	if err := vm.SetMemoryLimit(memoryLimit); err != nil {
		vm.Close()
		return nil, err
	}
	if err := vm.SetMaxStackSize(maxStackSize); err != nil {
		vm.Close()
		return nil, err
	}
	return vm, nil
}

// Template is a VM image with a run catalog already installed (ALL_TOOLS, tools.*, MCP). Every
// run with the same catalog starts from it, so installing a 1,000-tool catalog costs once per
// catalog version instead of once per exec.
type Template struct {
	img  *quickjs.Image
	hash [32]byte // identifies the image in snapshots made from it
}

func newTemplate(img *quickjs.Image) *Template {
	return &Template{img: img, hash: sha256.Sum256(img.Memory)}
}

// Bytes is the template's memory size.
func (t *Template) Bytes() int { return len(t.img.Memory) }

// NewTemplate installs a catalog (setup is the JSON given to the prelude's setup) into a copy of
// the base template and captures it.
func (e *Engine) NewTemplate(ctx context.Context, setup []byte) (*Template, error) {
	vm, err := e.newVM(ctx, e.tmpl, 0)
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	vm.SetDeterministic(true)
	sv, err := vm.NewString(string(setup))
	if err != nil {
		return nil, err
	}
	res, err := vm.Call(e.fns.Setup, quickjs.Undefined, sv)
	vm.Free(sv)
	if err != nil {
		return nil, fmt.Errorf("sandbox: installing the catalog: %w", describeInitError(vm, err))
	}
	vm.Free(res)
	if err := vm.RunGC(); err != nil {
		return nil, err
	}
	img, err := vm.Capture()
	if err != nil {
		return nil, err
	}
	return newTemplate(img), nil
}

// BenchRestore restores the base template into a fresh VM and evaluates one expression: the
// fixed cost every exec pays before the cell runs (`codemode bench`).
func (e *Engine) BenchRestore(ctx context.Context) error {
	vm, err := e.newVM(ctx, e.tmpl, 64<<20)
	if err != nil {
		return err
	}
	defer vm.Close()
	v, err := vm.Eval("1+1", "bench.js", quickjs.EvalGlobal)
	if err != nil {
		return err
	}
	if v.Int() != 2 {
		return errors.New("sandbox: 1+1 is not 2")
	}
	return nil
}
