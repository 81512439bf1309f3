package trajectory

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/httpauth"
)

// Registered secrets are credentials the process knows — its configuration's tokens, header
// values and credential-named environment variables — masked wherever they appear in a record,
// whatever the key or shape around them (issue 22 item 7).

// minSecretBytes is the shortest value registered: shorter ones would mask ordinary words.
const minSecretBytes = 8

// AddSecrets registers values to mask in every event the writer records from now on.
func (w *Writer) AddSecrets(secrets ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range secrets {
		if len(s) < minSecretBytes || slices.Contains(w.secrets, s) {
			continue
		}
		w.secrets = append(w.secrets, s)
		// A value with characters JSON escapes appears escaped in a record: mask that form too.
		if b, _ := marshal(s); string(b[1:len(b)-1]) != s {
			w.secrets = append(w.secrets, string(b[1:len(b)-1]))
		}
	}
	// Longest first, so that a secret containing another is masked whole.
	slices.SortFunc(w.secrets, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(w.secrets))
	for _, s := range w.secrets {
		pairs = append(pairs, s, redacted)
	}
	w.mask = strings.NewReplacer(pairs...)
}

// maskLine applies the registered secrets to an encoded event. A mask that would break the
// line's JSON (a secret that spells JSON structure) drops the event's content instead.
func maskLine(line []byte, r *strings.Replacer, secrets []string) []byte {
	hit := false
	for _, s := range secrets {
		if bytes.Contains(line, []byte(s)) {
			hit = true
			break
		}
	}
	if !hit {
		return line
	}
	out := []byte(r.Replace(string(line)))
	if json.Valid(bytes.TrimSpace(out)) {
		return out
	}
	b, _ := marshal(map[string]string{"kind": "dropped", "error": "an event holding a registered secret could not be masked and was not recorded"})
	return append(b, '\n')
}

// ConfigSecrets lists the credentials a configuration holds or names: the serve token
// (CODEMODE_TOKEN included), the principals' tokens and the requestState key, the run store's
// URL password, password, sentinel password and seal key (resolved from their environment
// variables or files), credential-named header values and environment values of MCP servers,
// and the process's own credential-named environment variables (API keys of model providers,
// for example).
func ConfigSecrets(cfg *config.Config) []string {
	var out []string
	add := func(name, v string) {
		if v != "" && (name == "" || hasAny(name, keyWords) && secretKey.MatchString(name)) {
			out = append(out, v)
		}
	}
	addSecret := func(sec config.Secret) {
		if !sec.IsZero() {
			if v, err := sec.Resolve(); err == nil {
				add("", v)
			}
		}
	}
	addURL := func(raw string) {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			p, _ := u.User.Password()
			add("", p)
		}
	}
	add("", cfg.Serve.HTTP.Token)
	add("", os.Getenv(httpauth.TokenEnv))
	addSecret(cfg.Serve.HTTP.RequestStateKey)
	for _, p := range cfg.Serve.Principals {
		addSecret(p.Token)
	}
	if r := cfg.RunStore.Redis; r != nil {
		addURL(r.URL)
		if !r.URLSecret.IsZero() {
			if v, err := r.URLSecret.Resolve(); err == nil {
				addURL(v)
			}
		}
		for _, sec := range []config.Secret{r.Password, r.SentinelPassword, r.Key} {
			addSecret(sec)
		}
		if r.KeyEnv != "" {
			add("", os.Getenv(r.KeyEnv))
		}
	}
	for _, name := range cfg.MCP.ServerNames() {
		s := cfg.MCP.Servers[name]
		for k, v := range s.Env {
			add(k, v)
		}
		for k, v := range s.Headers {
			add(k, v)
			if strings.EqualFold(k, "authorization") {
				if _, cred, ok := strings.Cut(v, " "); ok {
					add("", strings.TrimSpace(cred))
				}
			}
		}
	}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			add(k, v)
		}
	}
	return out
}
