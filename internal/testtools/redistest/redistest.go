// Package redistest runs private redis-server instances for tests: each on a free loopback
// port, without persistence (--save "", --appendonly no), in a temporary directory, stopped when
// the tests end. A package's TestMain calls Main; its tests call Shared for the package's
// instance or Start for one of their own (to stop, pause or restart it).
//
// When redis-server cannot be found, the tests that ask for one skip and say how to install it
// (`make testdeps` does, as root). CODEMODE_REDIS_SERVER names a binary to use instead.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startTimeout bounds how long a starting server may take to answer PING.
const startTimeout = 15 * time.Second

// Binary finds redis-server.
func Binary() (string, error) {
	if p := os.Getenv("CODEMODE_REDIS_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("redis-server not found: install it (`make testdeps` as root, or `apt-get install redis-server`) or set CODEMODE_REDIS_SERVER")
}

// Server is one private redis-server.
type Server struct {
	bin, dir string
	port     int
	cfg      Config

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exits
	log  *tailBuffer
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the redis:// URL of database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

var (
	sharedMu  sync.Mutex
	shared    *Server
	sharedErr error
)

// Main runs the package's tests and stops the shared instance, if one was started.
func Main(m *testing.M) {
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		_ = shared.Stop()
		_ = os.RemoveAll(shared.dir)
	}
	sharedMu.Unlock()
	os.Exit(code)
}

// Shared returns the package's instance, starting it on first use. Tests sharing it must keep
// to their own keys (a prefix per test) and must not stop it. Without redis-server, t skips.
func Shared(t testing.TB) *Server {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		bin, err := Binary()
		if err != nil {
			t.Skip(err)
		}
		dir, err := os.MkdirTemp("", "redistest-")
		if err != nil {
			t.Fatal(err)
		}
		shared, sharedErr = start(bin, dir)
	}
	if sharedErr != nil {
		t.Fatalf("starting the shared redis-server: %v", sharedErr)
	}
	return shared
}

// Start starts an instance for one test, stopped when the test ends. Without redis-server,
// t skips.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Skip(err)
	}
	s, err := start(bin, t.TempDir())
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// Config changes how StartWith runs a server.
type Config struct {
	// AOF turns on the append-only file (appendfsync always), in the server's directory, so a
	// Restart finds the data again.
	AOF bool
	// MaxMemory replaces the default 512mb (noeviction either way).
	MaxMemory string
	// Args are more command-line options (cluster-enabled, replicaof, …).
	Args []string
	// Sentinel, when set, runs a sentinel with this configuration file's contents instead.
	Sentinel string
}

// StartWith is Start with a configuration.
func StartWith(t testing.TB, cfg Config) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Skip(err)
	}
	s, err := startWith(bin, t.TempDir(), cfg)
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Dir is the server's working directory (its AOF, nodes.conf, sentinel.conf).
func (s *Server) Dir() string { return s.dir }

func start(bin, dir string) (*Server, error) { return startWith(bin, dir, Config{}) }

func startWith(bin, dir string, cfg Config) (*Server, error) {
	var last error
	for range 3 { // a free port can be taken between finding it and binding it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{bin: bin, dir: dir, port: port, cfg: cfg}
		if last = s.launch(); last == nil {
			return s, nil
		}
	}
	return nil, last
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch runs redis-server on s.port and waits until it answers PING.
func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("redis-server is already running")
	}
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--protected-mode", "yes",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--daemonize", "no", "--logfile", "", "--loglevel", "warning",
		"--databases", "1", "--maxmemory", "512mb", "--maxmemory-policy", "noeviction"}
	if s.cfg.AOF {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	if s.cfg.MaxMemory != "" {
		args = append(args, "--maxmemory", s.cfg.MaxMemory)
	}
	args = append(args, s.cfg.Args...)
	if s.cfg.Sentinel != "" {
		conf := filepath.Join(s.dir, "sentinel.conf")
		if _, err := os.Stat(conf); err != nil { // a restart keeps what the sentinel learned
			if err := os.WriteFile(conf, []byte(s.cfg.Sentinel), 0o600); err != nil {
				return err
			}
		}
		args = []string{conf, "--sentinel", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
			"--dir", s.dir, "--daemonize", "no", "--logfile", "", "--loglevel", "warning"}
	}
	cmd := exec.Command(s.bin, args...)
	s.log = &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	setParentDeath(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(startTimeout)
	for {
		if ping(s.Addr(), cmd.Process.Pid) == nil {
			s.cmd, s.done = cmd, done
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server exited at startup: %s", strings.TrimSpace(s.log.String()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server did not answer PING within %v: %s", startTimeout, strings.TrimSpace(s.log.String()))
		}
	}
}

// ping asks the server at addr for its process id (INFO server, inline protocol) and checks it
// is pid: a server that answers but is not ours (another one took the port) does not count.
func ping(addr string, pid int) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil || n < 0 || n > 1<<20 {
		return fmt.Errorf("unexpected reply %q", head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	if !strings.Contains(string(body), "\nprocess_id:"+strconv.Itoa(pid)+"\r") {
		return fmt.Errorf("the server on %s is not the one started (pid %d)", addr, pid)
	}
	return nil
}

// Stop stops the server (SIGTERM, then SIGKILL after 5s). Its data is gone: nothing persists.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	resume(s.cmd) // a paused server cannot handle SIGTERM
	_ = terminate(s.cmd)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd, s.done = nil, nil
	return nil
}

// Kill ends the server with SIGKILL, the way a crash does: no shutdown, no final save.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd, s.done = nil, nil
}

// Restart starts a stopped server again on the same port: empty, or with its AOF's data.
func (s *Server) Restart() error {
	var err error
	for range 50 { // the old socket may linger for a moment
		if err = s.launch(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Pause freezes the server (SIGSTOP): connections stay open and nothing answers, the way a
// stalled or partitioned Redis looks to a client.
func (s *Server) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		pause(s.cmd)
	}
}

// Resume undoes Pause.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		resume(s.cmd)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
