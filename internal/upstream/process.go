package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// process is one started stdio server: its process group and its stderr.
//
// Stderr goes to an os.Pipe we own rather than an io.Writer, so exec.Cmd starts no copying
// goroutine that Wait would block on while a grandchild still holds the pipe. A reader
// goroutine drains the pipe continuously (the child never blocks on a full pipe) into a
// bounded queue; a logger goroutine logs each line, cut to maxStderrLine bytes. If the logger
// falls more than stderrQueue lines behind, further lines are counted and the count is logged.
type process struct {
	log  *slog.Logger
	cmd  *exec.Cmd
	r, w *os.File
	wg   *sync.WaitGroup // the manager's

	mu      sync.Mutex
	pid     int
	readers chan struct{} // closed when the stderr goroutines are done
	stopped bool
}

const stderrQueue = 1024

func (s *server) startCommand() (*process, mcp.Transport, error) {
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Dir = s.cfg.Cwd
	cmd.Env = childEnv(os.Environ(), s.cfg.InheritEnv, s.cfg.Env)
	setProcAttr(cmd)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = w
	p := &process{log: s.log, cmd: cmd, r: r, w: w, wg: &s.m.wg}
	return p, &commandTransport{cmd: cmd, terminate: s.m.opts.terminateGrace}, nil
}

// baseEnv are the gateway variables every stdio server gets: what programs need to run (find
// executables, a home and temp directory, the user, locale and terminal), nothing that carries
// credentials.
var baseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "TERM", "LANG", "LANGUAGE"}

// childEnv is a stdio server's environment: the base variables and LC_*, the variables named in
// inheritEnv, then the configured env (which wins). The gateway's other variables — API keys,
// tokens, CODEMODE_TOKEN — never reach a server unless the configuration names them.
func childEnv(gateway, inherit []string, set map[string]string) []string {
	keep := map[string]bool{}
	for _, k := range baseEnv {
		keep[k] = true
	}
	for _, k := range inherit {
		keep[k] = true
	}
	var env []string
	for _, kv := range gateway {
		k, _, ok := strings.Cut(kv, "=")
		if ok && (keep[k] || strings.HasPrefix(k, "LC_")) {
			if _, override := set[k]; !override {
				env = append(env, kv)
			}
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+set[k])
	}
	if env == nil {
		env = []string{} // never nil: nil would mean "inherit everything"
	}
	return env
}

// started runs once the command has started.
func (p *process) started() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pid = p.cmd.Process.Pid
	_ = p.w.Close() // the child has its copy
	p.w = nil
	p.readers = make(chan struct{})
	lines := make(chan []byte, stderrQueue)
	var dropped int
	var dmu sync.Mutex
	p.wg.Add(2)
	go func() { // reader
		defer p.wg.Done()
		defer close(lines)
		br := bufio.NewReaderSize(p.r, maxStderrLine)
		for {
			line, err := readLine(br)
			if len(line) > 0 || err == nil {
				select {
				case lines <- line:
				default:
					dmu.Lock()
					dropped++
					dmu.Unlock()
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // logger
		defer p.wg.Done()
		defer close(p.readers)
		log := p.log.With("pid", p.pid)
		for line := range lines {
			log.Info("MCP server stderr", "line", string(line))
			dmu.Lock()
			n := dropped
			dropped = 0
			dmu.Unlock()
			if n > 0 {
				log.Warn("MCP server stderr lines dropped: the log is not keeping up", "lines", n)
			}
		}
	}()
}

// readLine returns the next line without its end, cut to maxStderrLine bytes (the rest of a
// long line is read and discarded, and counted in a marker).
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return append([]byte(nil), bytes.TrimRight(line, "\r\n")...), err
	}
	out := []byte(clip(string(line), maxStderrLine-40))
	skipped := len(line) - len(out)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		skipped += len(bytes.TrimRight(line, "\r\n"))
	}
	return fmt.Appendf(out, "… [%d more bytes]", skipped), err
}

// stop kills the process group (the server and anything it started) and waits for stderr to
// drain. The SDK has already closed stdin and reaped the direct child, or is about to; the group
// kill catches grandchildren (npm → node) and servers that ignore stdin closing. It is safe on
// nil and idempotent.
func (p *process) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	pid, readers, w := p.pid, p.readers, p.w
	p.w = nil
	p.mu.Unlock()
	if w != nil { // never started
		_ = w.Close()
		_ = p.r.Close()
		return
	}
	if pid > 0 {
		killGroup(pid)
	}
	// A process that left our group may still hold the pipe: stop reading after a grace period.
	t := time.NewTimer(2 * time.Second)
	select {
	case <-readers:
		t.Stop()
	case <-t.C:
	}
	_ = p.r.Close()
	<-readers
}
