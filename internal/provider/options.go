package provider

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Provider names accepted in Options.Provider.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
)

// Defaults for the zero values of Options and Request.
const (
	DefaultOpenAIBaseURL      = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL   = "https://api.anthropic.com"
	DefaultMaxRetries         = 2
	DefaultTimeout            = 5 * time.Minute
	DefaultMaxRetryDelay      = time.Minute
	DefaultMaxResponseBytes   = 16 << 20
	DefaultAnthropicMaxTokens = 4096
)

// Options configure a Client. The zero value of every field but Provider means its default.
type Options struct {
	// Provider is "openai" (Chat Completions: OpenAI, Ollama, vLLM, llama.cpp, …) or "anthropic"
	// (Messages).
	Provider string
	// BaseURL defaults to the provider's public API. For OpenAI-compatible servers it usually
	// ends in /v1 (e.g. http://localhost:11434/v1 for Ollama).
	BaseURL string
	// APIKey is sent as a bearer token (OpenAI) or x-api-key (Anthropic); empty sends none.
	// Nothing here reads the environment: a key meant for one host is never sent to another
	// because a variable happened to be set.
	APIKey string
	// APIKeyVar names where the key came from (e.g. "OPENAI_API_KEY"), so an authentication
	// error can say what to fix. Defaults to the provider's usual variable.
	APIKeyVar string
	// MaxRetries bounds retries of 408/409/429/5xx and connection failures (default 2;
	// negative disables retries).
	MaxRetries int
	// MaxRetryDelay caps how long a server may ask us to wait (retry-after) before a retry; a
	// longer wait ends the call with a rate-limit error that says how long the server asked
	// for. Default one minute. It also caps the exponential backoff used when the server does
	// not say (0.5s doubling per retry, at most 8s).
	MaxRetryDelay time.Duration
	// Timeout bounds each attempt, streaming included (default 5 minutes). The caller's
	// context bounds the whole call, retries included.
	Timeout time.Duration
	// MaxResponseBytes bounds a response body, error bodies and streams included (default 16
	// MiB): a hostile or broken server cannot make us buffer without limit.
	MaxResponseBytes int64
	// Stream asks for server-sent events; the result is the same Response.
	Stream bool
	// HTTPClient defaults to a client with its own copy of http.DefaultTransport. Its
	// redirect policy is replaced: model requests never follow redirects (they carry the key).
	HTTPClient *http.Client
	// Logger receives debug logging (Debug) and retry notices; nil logs nothing.
	Logger *slog.Logger
	// CheckPayload runs on the final request body about to be sent (A10): it gets the tool
	// names found in the serialized JSON body, in order. An error aborts the call before any
	// byte reaches the server and is returned as an *Error of KindPayloadRejected.
	CheckPayload func(toolNames []string) error
	// Debug switches targeted debug logging (D1); see DebugFromEnv.
	Debug DebugOptions
}

// Accepted values of the DebugOptions fields.
const (
	DebugPayloadTools        = "tools"
	DebugPayloadFullRedacted = "full-redacted"
	DebugSSEEvents           = "events"
	DebugSSEPeek             = "peek"
)

// DebugOptions are the D1 switches for the model transport. Everything goes to Options.Logger.
type DebugOptions struct {
	// Payload: "tools" logs the tool names of each request body; "full-redacted" logs a
	// bounded, redacted JSON snapshot of the body (prompts and messages can still appear:
	// use it for short debugging sessions only).
	Payload string
	// SSE: "events" logs the type of every server-sent event; "peek" logs the first five
	// events with their data, redacted and clipped.
	SSE string
	// Transport logs every HTTP attempt: status, time, request id, retry-after.
	Transport bool
}

// Environment variables read by DebugFromEnv. CODEMODE_DEBUG_SSE is accepted too: it is the
// original's name (OPENCLAW_DEBUG_SSE) with our prefix.
const (
	EnvDebugPayload   = "CODEMODE_DEBUG_MODEL_PAYLOAD"
	EnvDebugSSE       = "CODEMODE_DEBUG_MODEL_SSE"
	EnvDebugSSEAlias  = "CODEMODE_DEBUG_SSE"
	EnvDebugTransport = "CODEMODE_DEBUG_MODEL_TRANSPORT"
)

// DebugFromEnv reads the D1 switches through getenv (os.Getenv in production). An unknown value
// is an error naming the variable and the values it accepts; the options returned leave that
// switch off.
func DebugFromEnv(getenv func(string) string) (DebugOptions, error) {
	var d DebugOptions
	var errs []string
	switch v := strings.TrimSpace(getenv(EnvDebugPayload)); v {
	case "", "0", "false", "off":
	case DebugPayloadTools, DebugPayloadFullRedacted:
		d.Payload = v
	default:
		errs = append(errs, fmt.Sprintf("%s=%q: want %q or %q", EnvDebugPayload, v, DebugPayloadTools, DebugPayloadFullRedacted))
	}
	name, sse := EnvDebugSSE, strings.TrimSpace(getenv(EnvDebugSSE))
	if sse == "" {
		name, sse = EnvDebugSSEAlias, strings.TrimSpace(getenv(EnvDebugSSEAlias))
	}
	switch sse {
	case "", "0", "false", "off":
	case DebugSSEEvents, DebugSSEPeek:
		d.SSE = sse
	default:
		errs = append(errs, fmt.Sprintf("%s=%q: want %q or %q", name, sse, DebugSSEEvents, DebugSSEPeek))
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvDebugTransport))); v {
	case "", "0", "false", "off":
	default:
		d.Transport = true
	}
	if len(errs) > 0 {
		return d, fmt.Errorf("debug logging: %s", strings.Join(errs, "; "))
	}
	return d, nil
}

// settings are Options with defaults applied and the base URL checked.
type settings struct {
	Options
	base   *url.URL
	client *http.Client // HTTPClient, without redirects
}

func (o Options) withDefaults() (settings, error) {
	s := settings{Options: o}
	switch o.Provider {
	case OpenAI:
		if s.BaseURL == "" {
			s.BaseURL = DefaultOpenAIBaseURL
		}
		if s.APIKeyVar == "" {
			s.APIKeyVar = "OPENAI_API_KEY"
		}
	case Anthropic:
		if s.BaseURL == "" {
			s.BaseURL = DefaultAnthropicBaseURL
		}
		if s.APIKeyVar == "" {
			s.APIKeyVar = "ANTHROPIC_API_KEY"
		}
	case "":
		return s, fmt.Errorf("provider: no provider given: want %q or %q", OpenAI, Anthropic)
	default:
		return s, fmt.Errorf("provider: unknown provider %q: want %q or %q", o.Provider, OpenAI, Anthropic)
	}
	u, err := url.Parse(s.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return s, fmt.Errorf("provider: base URL %q is not an http(s) URL such as %s", s.BaseURL, defaultBase(o.Provider))
	}
	if u.User != nil {
		return s, fmt.Errorf("provider: base URL %s carries credentials; pass the key as the API key instead", redactURL(u))
	}
	s.base = u
	if s.MaxRetries == 0 {
		s.MaxRetries = DefaultMaxRetries
	} else if s.MaxRetries < 0 {
		s.MaxRetries = 0
	}
	if s.MaxRetryDelay <= 0 {
		s.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxResponseBytes <= 0 {
		s.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if s.HTTPClient == nil {
		s.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	// A redirect would replay the key to wherever the server points (Go keeps x-api-key across
	// hosts), and a 301/302 would turn the POST into a GET anyway: the 3xx is reported instead.
	hc := *s.HTTPClient
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	s.client = &hc
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	switch s.Debug.Payload {
	case "", DebugPayloadTools, DebugPayloadFullRedacted:
	default:
		return s, fmt.Errorf("provider: Debug.Payload %q: want %q or %q", s.Debug.Payload, DebugPayloadTools, DebugPayloadFullRedacted)
	}
	switch s.Debug.SSE {
	case "", DebugSSEEvents, DebugSSEPeek:
	default:
		return s, fmt.Errorf("provider: Debug.SSE %q: want %q or %q", s.Debug.SSE, DebugSSEEvents, DebugSSEPeek)
	}
	return s, nil
}

func defaultBase(p string) string {
	if p == Anthropic {
		return DefaultAnthropicBaseURL
	}
	return DefaultOpenAIBaseURL
}

// redactURL prints u without user info, query or fragment: enough to say where we connected,
// nothing that could be a credential.
func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment, c.RawFragment, c.ForceQuery = nil, "", "", "", false
	return c.String()
}

// New returns a Client for opts.Provider.
func New(opts Options) (Client, error) {
	s, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if s.Provider == Anthropic {
		return newAnthropic(s), nil
	}
	return newOpenAI(s), nil
}
