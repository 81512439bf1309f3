package enginefetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
)

// DefaultRegistry is npm's public registry.
const DefaultRegistry = "https://registry.npmjs.org/"

// EnvRegistry names the environment variable that points fetches at another npm registry (a
// mirror or an internal proxy). npm's own npm_config_registry is honoured after it.
const EnvRegistry = "CODEMODE_NPM_REGISTRY"

// FetchTimeout bounds one download, whoever waits for it.
const FetchTimeout = 2 * time.Minute

// Options configure Get. Only Pin is required.
type Options struct {
	Pin Pin
	// Dir is the cache root; "" means DefaultDir(). When no directory can be found (no $HOME),
	// the module is fetched into memory on every Get and a warning is logged.
	Dir string
	// Registry is the npm registry base URL; "" means RegistryFromEnv().
	Registry string
	// NoFetch makes Get use the cache only.
	NoFetch bool
	// Client does the download; nil means a client with FetchTimeout and the proxy settings of
	// the environment.
	Client *http.Client
	// Logger receives the one line logged per download and warnings about the cache; nil
	// discards them.
	Logger *slog.Logger
	// Artifact, when set, makes Get produce something other than the QuickJS module from the
	// pinned tarball (e.g. the search package's WordNet index); nil means the module.
	Artifact *Artifact
}

// Artifact is what Get makes from a verified tarball and caches. The pin's WasmSHA256 is then the
// sha256 of Derive's output, so a derivation must be deterministic (same members, same bytes):
// a cache hit is verified by that hash exactly as the module's is.
type Artifact struct {
	// What names it in log lines and errors ("the WordNet index").
	What string
	// Members are the tarball members Derive needs ("package/dict/data.noun"), each a regular
	// file of at most MaxWasmBytes.
	Members []string
	// Derive turns the members' contents into the artifact, at most MaxWasmBytes.
	Derive func(members map[string][]byte) ([]byte, error)
	// File is the cache file's name in the pin's directory ("wordnet.idx").
	File string
}

func (o *Options) artifact() *Artifact {
	if o.Artifact != nil {
		return o.Artifact
	}
	return &Artifact{What: "the QuickJS engine", Members: []string{WasmEntry}, File: "quickjs.wasm",
		Derive: func(m map[string][]byte) ([]byte, error) { return m[WasmEntry], nil }}
}

// RegistryFromEnv returns the registry named by $CODEMODE_NPM_REGISTRY, else by npm's
// $npm_config_registry, else DefaultRegistry, and where it came from (for error messages).
func RegistryFromEnv() (registry, source string) {
	for _, k := range []string{EnvRegistry, "npm_config_registry", "NPM_CONFIG_REGISTRY"} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v, "$" + k
		}
	}
	return DefaultRegistry, "the default"
}

var (
	// flights makes concurrent first uses in one process share one download. Across processes
	// the atomic rename in writeAtomic is enough: each writes the same verified bytes.
	flights       singleflight.Group
	defaultClient = &http.Client{Timeout: FetchTimeout}
)

// Get returns the pinned module: the cached copy when it verifies, else (unless NoFetch) a fresh
// download that is verified and then cached. The returned bytes always hash to the pin's
// WasmSHA256. Errors say what went wrong; they do not say what the user should do about it,
// which depends on the caller.
func Get(ctx context.Context, o Options) ([]byte, error) {
	tarSum, wasmSum, err := o.Pin.digests()
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	art := o.artifact()
	if !safeFileName(art.File) || len(art.Members) == 0 || art.Derive == nil {
		return nil, fmt.Errorf("enginefetch: invalid artifact %q", art.File)
	}
	root := o.Dir
	if root == "" {
		if root, err = DefaultDir(); err != nil {
			log.Warn("no user cache directory: "+art.What+" cannot be cached", "err", err)
		}
	}
	var file string
	if root != "" {
		file = artifactPath(root, o.Pin, art.File)
		b, err := readVerified(file, wasmSum)
		switch {
		case err == nil:
			return b, nil
		case errors.Is(err, errMismatch):
			if o.NoFetch {
				return nil, fmt.Errorf("the cached copy of %s at %s does not match the pinned sha256 (delete it, or allow fetching to replace it)", art.What, file)
			}
			log.Warn("the cached copy of "+art.What+" does not match its pin: ignoring it and fetching again", "path", file)
		case !isNotExist(err):
			log.Warn("cannot read the cached copy of "+art.What, "err", err)
		}
	}
	if o.NoFetch {
		if file == "" {
			return nil, errors.New("there is no cache directory")
		}
		return nil, fmt.Errorf("there is no verified copy at %s", file)
	}
	registry, source := o.Registry, "Options.Registry"
	if registry == "" {
		registry, source = RegistryFromEnv()
	}
	u, err := o.Pin.tarballURL(registry)
	if err != nil {
		return nil, fmt.Errorf("%v (from %s)", err, source)
	}
	client := o.Client
	if client == nil {
		client = defaultClient
	}
	f := &fetcher{pin: o.Pin, url: u.String(), shown: u.Redacted(), file: file, tarSum: tarSum, wasmSum: wasmSum, client: client, log: log, art: art}
	// The key holds everything that decides the result, so callers with different pins (tests)
	// never share a flight.
	key := strings.Join([]string{file, f.url, o.Pin.Integrity, o.Pin.WasmSHA256, art.File}, "\x00")
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The download outlives a caller that gives up (others may be waiting), bounded by
	// FetchTimeout.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FetchTimeout)
	ch := flights.DoChan(key, func() (any, error) {
		defer cancel()
		return f.fetch(fctx)
	})
	select {
	case r := <-ch:
		// A caller that joined someone else's flight did not start its own: release its timer.
		cancel()
		if r.Err != nil {
			return nil, r.Err
		}
		return bytes.Clone(r.Val.([]byte)), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type fetcher struct {
	pin        Pin
	url, shown string // shown has any password redacted
	file       string // "" when there is no cache directory
	tarSum     [sha512.Size]byte
	wasmSum    [sha256.Size]byte
	client     *http.Client
	log        *slog.Logger
	art        *Artifact
}

// fetch runs once per flight.
func (f *fetcher) fetch(ctx context.Context) ([]byte, error) {
	if f.file != "" {
		// Another process (or a flight that just ended) may have cached it meanwhile.
		if b, err := readVerified(f.file, f.wasmSum); err == nil {
			return b, nil
		}
	}
	f.log.Info(f.art.What+" is not cached yet: fetching it once from the npm registry", "package", f.pin.String(), "url", f.shown, "cache", f.file)
	wasm, err := f.download(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetching %s from %s: %w", f.pin, f.shown, err)
	}
	if f.file != "" {
		if err := writeAtomic(f.file, wasm); err != nil {
			f.log.Warn("cannot cache "+f.art.What+": it will be fetched again next time", "err", err)
		}
	}
	return wasm, nil
}

// download returns the artifact derived from the verified tarball (package/quickjs.wasm by
// default).
func (f *fetcher) download(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/octet-stream")
	req.Header.Set("User-Agent", "codemode-enginefetch")
	resp, err := f.client.Do(req)
	if err != nil {
		// The caller names the URL already (with any password redacted).
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the registry answered %s", resp.Status)
	}
	if resp.ContentLength > MaxTarballBytes {
		return nil, fmt.Errorf("the tarball is %d bytes (limit %d)", resp.ContentLength, MaxTarballBytes)
	}
	tgz, err := io.ReadAll(io.LimitReader(resp.Body, MaxTarballBytes+1))
	if err != nil {
		return nil, err
	}
	if len(tgz) > MaxTarballBytes {
		return nil, fmt.Errorf("the tarball is larger than %d bytes", MaxTarballBytes)
	}
	return f.fromTarball(tgz, true)
}

// fromTarball verifies tgz against the pin and derives the artifact from it.
func (f *fetcher) fromTarball(tgz []byte, checkSum bool) ([]byte, error) {
	// Nothing of the tarball is looked at before this check.
	if got := sha512.Sum512(tgz); got != f.tarSum {
		return nil, fmt.Errorf("integrity mismatch: the tarball is sha512-%s, the pin says %s",
			base64.StdEncoding.EncodeToString(got[:]), f.pin.Integrity)
	}
	members, err := extractMembers(tgz, f.art.Members, MaxWasmBytes)
	if err != nil {
		return nil, err
	}
	out, err := f.art.Derive(members)
	if err != nil {
		return nil, fmt.Errorf("deriving %s: %w", f.art.What, err)
	}
	if len(out) == 0 || len(out) > MaxWasmBytes {
		return nil, fmt.Errorf("%s is %d bytes (limit %d)", f.art.What, len(out), MaxWasmBytes)
	}
	if got := sha256.Sum256(out); checkSum && got != f.wasmSum {
		what := WasmEntry
		if f.art.File != "quickjs.wasm" {
			what = f.art.What + " derived from the verified tarball"
		}
		return nil, fmt.Errorf("%s in the verified tarball has sha256 %s, the pin says %s (the pin file is inconsistent)",
			what, hex.EncodeToString(got[:]), f.pin.WasmSHA256)
	}
	return out, nil
}

// FromTarball makes an artifact (nil: the QuickJS module) from a tarball already in hand, such as
// a build script's `npm pack`, with the checks of a download: the pinned sha512 integrity before
// anything is parsed, then the members, the derivation and the pinned sha256. checkSum false
// skips only the last check, to print the sha256 of a new version when moving a pin.
func FromTarball(tgz []byte, pin Pin, art *Artifact, checkSum bool) ([]byte, error) {
	if !checkSum && pin.WasmSHA256 == "" {
		pin.WasmSHA256 = strings.Repeat("0", 2*sha256.Size) // not checked
	}
	tarSum, wasmSum, err := pin.digests()
	if err != nil {
		return nil, err
	}
	o := Options{Pin: pin, Artifact: art}
	if len(tgz) > MaxTarballBytes {
		return nil, fmt.Errorf("the tarball is larger than %d bytes", MaxTarballBytes)
	}
	f := &fetcher{pin: pin, tarSum: tarSum, wasmSum: wasmSum, art: o.artifact()}
	return f.fromTarball(tgz, checkSum)
}
