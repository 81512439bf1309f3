package admission

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"

	"github.com/codemode-go/codemode/config"
)

// slotOverhead is what a VM takes beyond its guest heap limit: the template image it starts
// from and the allocator's slack.
const slotOverhead = 8 << 20

// fallbackMemory is assumed when the physical memory cannot be read (not Linux, no /proc).
const fallbackMemory = 8 << 30

// Derive turns the configuration (runtime.admission, tools.codeMode) into a Config, filling
// absent values from the machine: MaxRunning 4 × cores (cells mostly wait on nested calls, so
// more than one per core keeps the cores busy), MaxQueued 16 × MaxRunning, MemoryBudget half
// the physical memory. A queued caller waits at most timeoutMs for a slot.
func Derive(cfg *config.Config) Config {
	return FromSettings(cfg.Runtime.Admission, cfg.Tools.CodeMode)
}

// FromSettings is Derive for settings given on their own (a library's Options.Admission).
func FromSettings(a config.Admission, cm config.CodeMode) Config {
	c := Config{MaxRunning: a.MaxRunning, MaxQueued: a.MaxQueued, MemoryBudget: a.MemoryBudgetBytes,
		SlotBytes: cm.MemoryLimitBytes + slotOverhead, MaxWait: cm.Timeout()}
	if c.MaxRunning == 0 {
		c.MaxRunning = 4 * runtime.NumCPU()
	}
	switch c.MaxQueued {
	case 0:
		c.MaxQueued = 16 * c.MaxRunning
	case -1: // an explicit 0 in the file
		c.MaxQueued = 0
	}
	if c.MemoryBudget == 0 {
		c.MemoryBudget = PhysicalMemory() / 2
	}
	return c
}

// PhysicalMemory is MemTotal from /proc/meminfo, or 8 GiB when it cannot be read.
func PhysicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return fallbackMemory
	}
	if n := memTotal(b); n > 0 {
		return n
	}
	return fallbackMemory
}

// memTotal parses "MemTotal:  24576000 kB" out of /proc/meminfo.
func memTotal(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "MemTotal:" {
			n, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil || n <= 0 {
				return 0
			}
			if len(f) >= 3 && string(f[2]) == "kB" {
				n *= 1024
			}
			return n
		}
	}
	return 0
}

// GoMemoryLimit is the soft limit for the Go runtime (debug.SetMemoryLimit) that keeps the
// process near its budget: VM memories are Go memory, and without a limit the collector lets
// garbage from finished VMs reach twice the live heap before it runs.
func GoMemoryLimit(c Config) int64 { return c.MemoryBudget + goOverhead }

// goOverhead is the room beside the VMs: catalogs, templates, sessions, buffers.
const goOverhead = 512 << 20
