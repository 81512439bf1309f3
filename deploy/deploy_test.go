package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/httpauth"
	"go.yaml.in/yaml/v4"
)

type obj = map[string]any

func get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(obj)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

func str(o any, path ...string) string { s, _ := get(o, path...).(string); return s }

func list(o any, path ...string) []any { l, _ := get(o, path...).([]any); return l }

// manifests decodes every document of deploy/kubernetes/*.yaml, by kind.
func manifests(t *testing.T) map[string]obj {
	t.Helper()
	files, _ := filepath.Glob("kubernetes/*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifests in deploy/kubernetes")
	}
	out := map[string]obj{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o obj
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kind, api, name := str(o, "kind"), str(o, "apiVersion"), str(o, "metadata", "name")
			if kind == "" || api == "" || name == "" {
				t.Fatalf("%s: a document without kind, apiVersion or metadata.name: %v", f, o)
			}
			want := map[string]string{"ConfigMap": "v1", "Secret": "v1", "Service": "v1", "Deployment": "apps/v1",
				"PodDisruptionBudget": "policy/v1", "HorizontalPodAutoscaler": "autoscaling/v2"}[kind]
			if want == "" || want != api {
				t.Fatalf("%s: %s %s: unexpected kind or apiVersion (want %q)", f, kind, api, want)
			}
			if _, dup := out[kind]; dup {
				t.Fatalf("two %s documents", kind)
			}
			out[kind] = o
		}
	}
	return out
}

func sameLabels(a, b any) bool {
	am, _ := a.(obj)
	bm, _ := b.(obj)
	if len(am) == 0 {
		return false
	}
	for k, v := range am {
		if bm[k] != v {
			return false
		}
	}
	return true
}

// issue 20 item 7: the Kubernetes manifests hang together — the selectors select the pods,
// every secret reference names a key the Secret has, the probes hit /healthz and /readyz with
// the token, the grace period outlasts the drain, the pod runs as non-root, and the embedded
// configuration passes the real configuration parser with every file it names mounted.
func TestKubernetesManifests(t *testing.T) {
	m := manifests(t)
	for _, k := range []string{"ConfigMap", "Secret", "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"} {
		if m[k] == nil {
			t.Fatalf("no %s", k)
		}
	}
	dep := m["Deployment"]
	podLabels := get(dep, "spec", "template", "metadata", "labels")
	if !sameLabels(get(dep, "spec", "selector", "matchLabels"), podLabels) {
		t.Error("the Deployment's selector does not select its pods")
	}
	if !sameLabels(get(m["Service"], "spec", "selector"), podLabels) {
		t.Error("the Service does not select the pods")
	}
	if !sameLabels(get(m["PodDisruptionBudget"], "spec", "selector", "matchLabels"), podLabels) {
		t.Error("the PodDisruptionBudget does not select the pods")
	}
	replicas, _ := get(dep, "spec", "replicas").(int)
	if min, _ := get(m["PodDisruptionBudget"], "spec", "minAvailable").(int); min < 1 || min >= replicas {
		t.Errorf("PodDisruptionBudget minAvailable %d with %d replicas: a node drain could never proceed, or could take all", min, replicas)
	}
	if ref := get(m["HorizontalPodAutoscaler"], "spec", "scaleTargetRef"); str(ref, "kind") != "Deployment" || str(ref, "name") != str(dep, "metadata", "name") {
		t.Errorf("the HPA scales %v", ref)
	}
	if min, _ := get(m["HorizontalPodAutoscaler"], "spec", "minReplicas").(int); min < 2 {
		t.Errorf("HPA minReplicas %d: a fleet needs at least two", min)
	}

	secret := m["Secret"]
	secretKeys, _ := get(secret, "stringData").(obj)
	spec := get(dep, "spec", "template", "spec")
	containers := list(spec, "containers")
	if len(containers) != 1 {
		t.Fatalf("%d containers", len(containers))
	}
	c := containers[0]
	env := map[string]string{}
	for _, e := range list(c, "env") {
		ref := get(e, "valueFrom", "secretKeyRef")
		if ref == nil {
			continue
		}
		if str(ref, "name") != str(secret, "metadata", "name") || secretKeys[str(ref, "key")] == nil {
			t.Errorf("env %s refers to a missing secret key %v", str(e, "name"), ref)
		}
		env[str(e, "name")] = str(ref, "key")
	}
	if env["CODEMODE_TOKEN"] == "" {
		t.Error("CODEMODE_TOKEN does not come from the Secret")
	}
	token, _ := secretKeys[env["CODEMODE_TOKEN"]].(string)
	if msg := httpauth.CheckToken(token); msg != "" {
		t.Errorf("the Secret's token: %s", msg)
	}

	// Volumes: which paths hold which files.
	files := map[string]bool{}
	volumes := map[string]any{}
	for _, v := range list(spec, "volumes") {
		volumes[str(v, "name")] = v
	}
	var configPath string
	for _, vm := range list(c, "volumeMounts") {
		v := volumes[str(vm, "name")]
		if v == nil {
			t.Fatalf("volumeMount %s has no volume", str(vm, "name"))
		}
		mp := str(vm, "mountPath")
		switch {
		case get(v, "secret") != nil:
			if str(v, "secret", "secretName") != str(secret, "metadata", "name") {
				t.Errorf("volume %s mounts another Secret", str(v, "name"))
			}
			for _, it := range list(v, "secret", "items") {
				if secretKeys[str(it, "key")] == nil {
					t.Errorf("secret volume item %v: no such key", it)
				}
				files[filepath.Join(mp, str(it, "path"))] = true
			}
		case get(v, "configMap") != nil:
			if str(v, "configMap", "name") != str(m["ConfigMap"], "metadata", "name") {
				t.Errorf("volume %s mounts another ConfigMap", str(v, "name"))
			}
			configPath = mp
		}
	}

	// The configuration: the real parser, and every secret file it names is mounted.
	src, _ := get(m["ConfigMap"], "data", "config.json5").(string)
	cfg, err := config.Parse([]byte(src), "config.json5")
	if err != nil {
		t.Fatalf("the ConfigMap's configuration: %v", err)
	}
	args := list(c, "args")
	if len(args) < 5 || args[0] != "serve" || args[1] != "--http" || args[3] != "--config" || args[4] != configPath {
		t.Errorf("container args %v: want serve --http ADDR --config %s", args, configPath)
	}
	rs := cfg.RunStore.Redis
	if rs == nil {
		t.Fatal("the configuration has no runStore.redis: a fleet needs a shared run store")
	}
	for what, s := range map[string]config.Secret{"url": rs.URLSecret, "password": rs.Password, "key": rs.Key} {
		switch {
		case s.File != "" && !files[s.File]:
			t.Errorf("runStore.redis.%s reads %s, which no volume provides", what, s.File)
		case s.Env != "" && env[s.Env] == "":
			t.Errorf("runStore.redis.%s reads $%s, which the container does not get from the Secret", what, s.Env)
		}
	}
	if rs.KeyEnv != "" || rs.Key.IsZero() {
		t.Error("the sealing key should come from the mounted Secret (key: {file})")
	}

	// Probes and the drain.
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		p := get(c, probe, "httpGet")
		if str(p, "path") != path || str(p, "port") != "http" {
			t.Errorf("%s: %v", probe, p)
		}
		auth := false
		for _, h := range list(p, "httpHeaders") {
			auth = auth || (str(h, "name") == "Authorization" && str(h, "value") == "Bearer "+token)
		}
		if !auth {
			t.Errorf("%s does not send the token (every path needs it)", probe)
		}
	}
	grace, _ := get(spec, "terminationGracePeriodSeconds").(int)
	pre, _ := get(c, "lifecycle", "preStop", "sleep", "seconds").(int)
	drain := 2*cfg.Tools.CodeMode.Timeout() + 5*time.Second
	if time.Duration(grace)*time.Second <= drain+time.Duration(pre)*time.Second {
		t.Errorf("terminationGracePeriodSeconds %d does not outlast the preStop pause (%ds) and the drain (%v)", grace, pre, drain)
	}
	if get(spec, "securityContext", "runAsNonRoot") != true || get(c, "securityContext", "allowPrivilegeEscalation") != false {
		t.Error("the pod must run as non-root without privilege escalation")
	}
	if get(m["Service"], "spec", "sessionAffinity") != "ClientIP" {
		t.Error("the Service needs session affinity: MCP sessions live on one replica")
	}
}

// issue 20 item 7: the image definition is multi-stage, ends on a base without a shell, runs as
// a numeric non-root user and embeds the engine; it is built where the machine can build images
// and reach a registry for the base images. Where no registry is reachable, TestImage builds
// its final stage on a stand-in base and runs it.
func TestContainerfile(t *testing.T) {
	b, err := os.ReadFile("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(src, -1)
	if len(froms) < 2 {
		t.Fatalf("%d stages: the image must be built in one stage and shipped from another", len(froms))
	}
	if final := froms[len(froms)-1][1]; !strings.Contains(final, "distroless/static") {
		t.Errorf("final stage %s: want a distroless static base (no shell)", final)
	}
	if !regexp.MustCompile(`(?m)^USER\s+65532:65532\s*$`).MatchString(src) {
		t.Error("the image must run as a numeric non-root user")
	}
	if !regexp.MustCompile(`(?m)^ENTRYPOINT \["/usr/local/bin/codemode"\]`).MatchString(src) {
		t.Error("ENTRYPOINT must be exec form (no shell)")
	}
	if !strings.Contains(src, "scripts/fetch-quickjs.sh") || !strings.Contains(src, "CGO_ENABLED=0") {
		t.Error("the build must fetch and verify the engine and link a static binary that embeds it")
	}

	builder := ""
	for _, b := range []string{"podman", "buildah"} {
		if p, err := exec.LookPath(b); err == nil {
			builder = p
			break
		}
	}
	if builder == "" || testing.Short() {
		t.Skip("no podman or buildah here (Debian: apt-get install podman): the image is not built")
	}
	// The base images come from container registries; a machine that reaches none cannot build.
	probe := exec.Command(builder, "pull", "--quiet", "gcr.io/distroless/static-debian12:nonroot")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("cannot pull the base image (no container registry reachable): %v %s", err, out)
	}
	args := []string{"build", "-f", "deploy/Containerfile", "-t", "codemode:test", "."}
	if filepath.Base(builder) == "buildah" {
		args[0] = "bud"
	}
	cmd := exec.Command(builder, args...)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s build: %v\n%s", builder, err, out)
	}
	out, err := exec.Command(builder, "run", "--rm", "codemode:test", "version").CombinedOutput()
	if err != nil {
		t.Fatalf("the image does not run: %v %s", err, out)
	}
}
