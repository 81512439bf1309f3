package deploy

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/testtools/redistest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
)

// issue 20 item 7: the image, built and run as closely to deploy/Containerfile as this machine
// allows. The Containerfile's base images (node, golang, distroless) come from container
// registries, which a test machine may not reach; so this test
//
//   - does stage 2 itself: the same static build (CGO_ENABLED=0, -trimpath, -ldflags "-s -w"),
//     with the engine embedded;
//   - stands in for gcr.io/distroless/static-debian12:nonroot with `FROM scratch` plus the files
//     of that base the binary uses (/etc/passwd and /etc/group naming nonroot 65532, /tmp,
//     /home/nonroot, the CA bundle);
//   - builds the Containerfile's final stage verbatim on top, with buildah;
//   - checks the image (user, entrypoint, no shell anywhere, nothing but the expected files) and
//     runs it with podman the way deploy/kubernetes runs it: read-only root filesystem, every
//     capability dropped, no privilege escalation, the ConfigMap's configuration and the Secret's
//     files mounted, an emptyDir-like cache, a real Redis with a password;
//   - checks /healthz and /readyz, an exec and a suspend/resume over MCP, the user the process
//     runs as, and that SIGTERM drains and exits 0.
//
// It needs root, podman, buildah and runc (scripts/install-podman.sh, which it runs itself) and
// takes about 20 s when the static build is cached.
func TestImage(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("builds a container image")
	case os.Geteuid() != 0:
		t.Skip("the image test needs root (rootful podman storage, and installing podman, buildah and runc)")
	case fileMissing("../internal/quickjs/assets/quickjs.wasm"):
		t.Skip("the QuickJS wasm is not in internal/quickjs/assets (run `make wasm`): the image embeds it")
	}
	if out, err := exec.Command("../scripts/install-podman.sh").CombinedOutput(); err != nil {
		t.Skipf("cannot install podman, buildah and runc: %v\n%s", err, out)
	}
	podman, buildah := tool(t, "podman"), tool(t, "buildah")
	// crun (podman's default) refuses hosts whose cgroups are in hybrid mode ("cgroups in hybrid
	// mode not supported, drop all controllers from cgroupv2"); runc runs there and everywhere.
	var global []string
	if _, err := exec.LookPath("runc"); err == nil {
		global = []string{"--runtime", "runc"}
	}
	run := func(name string, args ...string) (string, error) {
		if name == podman {
			args = append(append([]string{}, global...), args...)
		}
		out, err := exec.Command(name, args...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	must := func(name string, args ...string) string {
		t.Helper()
		out, err := run(name, args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
		}
		return out
	}

	// The build context: the binary (stage 2), the base's files, the Containerfile.
	dir := t.TempDir()
	bctx := filepath.Join(dir, "context")
	for _, d := range []string{"out/cache", "out/work", "base/etc", "base/tmp", "nonroot"} {
		if err := os.MkdirAll(filepath.Join(bctx, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(bctx, "out", "codemode"), "./cmd/codemode")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(bctx, "base/etc/passwd"), 0o644, "root:x:0:0:root:/root:/sbin/nologin\n"+
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
	writeFile(t, filepath.Join(bctx, "base/etc/group"), 0o644, "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")
	if err := os.Chmod(filepath.Join(bctx, "base/tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	if ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		writeFile(t, filepath.Join(bctx, "base/etc/ssl/certs/ca-certificates.crt"), 0o644, string(ca))
	}
	final := finalStage(t)
	containerfile := "# deploy/Containerfile's final stage on a stand-in for its base (deploy/image_test.go)\n" +
		"FROM scratch AS build\nCOPY out /out\n" +
		"FROM scratch\nCOPY base /\nCOPY --chown=65532:65532 nonroot /home/nonroot\n" + final
	writeFile(t, filepath.Join(dir, "Containerfile"), 0o644, containerfile)
	tag := fmt.Sprintf("localhost/codemode-imagetest:%d", os.Getpid())
	must(buildah, "build", "--quiet", "-f", filepath.Join(dir, "Containerfile"), "-t", tag, bctx)
	t.Cleanup(func() { _, _ = run(podman, "rmi", "-f", tag) })

	// The image's configuration.
	var inspect []struct {
		Config struct {
			User         string
			Entrypoint   []string
			Cmd          []string
			WorkingDir   string
			ExposedPorts map[string]any
		}
	}
	if err := json.Unmarshal([]byte(must(podman, "image", "inspect", tag)), &inspect); err != nil || len(inspect) != 1 {
		t.Fatalf("image inspect: %v", err)
	}
	ic := inspect[0].Config
	if ic.User != "65532:65532" || strings.Join(ic.Entrypoint, " ") != "/usr/local/bin/codemode" || ic.WorkingDir != "/work" ||
		ic.ExposedPorts["8080/tcp"] == nil || strings.Join(ic.Cmd, " ") != "serve --http :8080 --config /etc/codemode/config.json5" {
		t.Errorf("image config: %+v", ic)
	}

	// Its files: the binary and the base's few files, no shell or anything else to run.
	name := fmt.Sprintf("codemode-imagetest-%d", os.Getpid())
	must(podman, "create", "--name", name+"-x", tag)
	t.Cleanup(func() { _, _ = run(podman, "rm", "-f", name+"-x") })
	export := exec.Command(podman, append(append([]string{}, global...), "export", name+"-x")...)
	stream, _ := export.StdoutPipe()
	if err := export.Start(); err != nil {
		t.Fatal(err)
	}
	files := map[string]*tar.Header{}
	tr := tar.NewReader(stream)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("podman export: %v", err)
		}
		files[strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")] = h
	}
	_ = export.Wait()
	for p, h := range files {
		base := filepath.Base(p)
		if h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 && p != "usr/local/bin/codemode" || base == "sh" || base == "busybox" {
			t.Errorf("the image has %s (mode %o): only the codemode binary may be executable", p, h.Mode)
		}
	}
	if h := files["usr/local/bin/codemode"]; h == nil || h.Mode&0o111 == 0 {
		t.Error("the image has no executable /usr/local/bin/codemode")
	} else {
		t.Logf("image: %d entries, the binary %.1f MB", len(files), float64(h.Size)/(1<<20))
	}
	for _, p := range []string{"home/nonroot/.cache/codemode", "work"} {
		if h := files[p]; h == nil || h.Uid != 65532 {
			t.Errorf("%s is not the non-root user's (%+v)", p, h)
		}
	}

	// Run it as deploy/kubernetes does, on a real Redis with a password.
	rs := redistest.Start(t)
	const password, storeKey = "image-test-redis-password", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), DisableIdentity: true})
	if err := rdb.ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	_ = rdb.Close()
	m := manifests(t)
	conf, _ := get(m["ConfigMap"], "data", "config.json5").(string)
	secrets := filepath.Join(dir, "secrets")
	writeFile(t, filepath.Join(dir, "config.json5"), 0o644, conf)
	writeFile(t, filepath.Join(secrets, "redis-password"), 0o644, password)
	writeFile(t, filepath.Join(secrets, "runstore-key"), 0o644, storeKey)
	token := "image-test-token-0123456789abcdef"
	port := freePort(t)
	var nofile syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile)
	nofile.Cur, nofile.Max = min(nofile.Cur, 65536), min(nofile.Max, 65536)
	args := []string{"run", "-d", "--name", name,
		// deploy/kubernetes's securityContext
		"--read-only", "--read-only-tmpfs=false", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		// its volumes: the ConfigMap's file, the Secret's files, the cache emptyDir
		"-v", filepath.Join(dir, "config.json5") + ":/etc/codemode/config.json5:ro",
		"-v", secrets + ":/etc/codemode/secrets:ro",
		"--tmpfs", "/home/nonroot/.cache:rw,mode=0777",
		"-e", "CODEMODE_TOKEN=" + token, "-e", "REDIS_URL=" + rs.URL(),
		// Podman raises the container's nofile and nproc limits by default (to 1048576), which
		// needs CAP_SYS_RESOURCE, and sandboxes drop it ("setrlimit RLIMIT_NOFILE: Operation not
		// permitted"): keep the host's open-file limit, and a modest process limit (one gateway
		// runs a few shell commands and stdio servers).
		"--ulimit", rlimit("nofile", nofile), "--ulimit", "nproc=4096:4096",
		// The host's network, so that the container reaches the test's Redis on loopback; hence
		// a loopback port instead of the image's :8080 (the rest of the CMD is the image's).
		"--network", "host",
		tag, "serve", "--http", fmt.Sprintf("127.0.0.1:%d", port), "--config", "/etc/codemode/config.json5"}
	must(podman, args...)
	t.Cleanup(func() { _, _ = run(podman, "rm", "-f", "-t", "0", name) })
	logs := func() string { out, _ := run(podman, "logs", name); return out }
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _ := httpGet(base+"/healthz", token); code == 200 {
			break
		}
		if state, _ := run(podman, "inspect", "--format", "{{.State.Status}}", name); state == "exited" || time.Now().After(deadline) {
			t.Fatalf("the container does not serve /healthz (%s): %s", state, logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := httpGet(base+"/readyz", token); code != 200 || !strings.Contains(body, `"state":"ok"`) {
		t.Errorf("/readyz %d: %s", code, body)
	}
	if code, _ := httpGet(base+"/healthz", ""); code != 401 {
		t.Errorf("/healthz without the token: %d", code)
	}
	pid := must(podman, "inspect", "--format", "{{.State.Pid}}", name)
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if uids := regexp.MustCompile(`(?m)^Uid:\s+(.*)$`).FindStringSubmatch(string(status)); uids == nil || strings.Join(strings.Fields(uids[1]), " ") != "65532 65532 65532 65532" {
		t.Errorf("the server runs as %v, want uid 65532 everywhere", uids)
	}

	// An exec, and a run suspended in Redis and resumed, over MCP.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hc := &http.Client{Transport: bearer(token)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "imagetest", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v\n%s", err, logs())
	}
	call := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if r := call("exec", map[string]any{"code": `return 6 * 7`}); r["status"] != "completed" || r["value"] != float64(42) {
		t.Errorf("exec: %v", r)
	}
	r := call("exec", map[string]any{"code": `await yield_control(); return "resumed from Redis"`})
	if r["status"] != "waiting" || r["runId"] == nil {
		t.Fatalf("exec: %v", r)
	}
	if r := call("wait", map[string]any{"runId": r["runId"]}); r["status"] != "completed" || r["value"] != "resumed from Redis" {
		t.Errorf("wait: %v", r)
	}
	_ = cs.Close()

	// SIGTERM: the drain, then exit 0.
	stopped := time.Now()
	must(podman, "stop", "-t", "30", name)
	t.Logf("SIGTERM to exit: %v", time.Since(stopped).Round(time.Millisecond))
	if code := must(podman, "inspect", "--format", "{{.State.ExitCode}}", name); code != "0" {
		t.Errorf("exit code %s after SIGTERM: %s", code, logs())
	}
}

// finalStage is deploy/Containerfile's last stage without its FROM line.
func finalStage(t *testing.T) string {
	b, err := os.ReadFile("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	loc := regexp.MustCompile(`(?m)^FROM\s+\S+.*\n`).FindAllIndex(b, -1)
	if len(loc) == 0 {
		t.Fatal("no FROM in Containerfile")
	}
	return string(b[loc[len(loc)-1][1]:])
}

func tool(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (scripts/install-podman.sh as root)", name)
	}
	return p
}

func fileMissing(p string) bool {
	_, err := os.Stat(p)
	return err != nil
}

func writeFile(t *testing.T, p string, mode os.FileMode, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func rlimit(name string, l syscall.Rlimit) string {
	f := func(v uint64) string {
		if v == ^uint64(0) {
			return "-1"
		}
		return strconv.FormatUint(v, 10)
	}
	return name + "=" + f(l.Cur) + ":" + f(l.Max)
}

func httpGet(url, token string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b)
}

type bearer string

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(req)
}
