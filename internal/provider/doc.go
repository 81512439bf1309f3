// Package provider talks to model providers: OpenAI Chat Completions (OpenAI, Ollama, vLLM,
// llama.cpp and every other OpenAI-compatible server) and Anthropic Messages, through the
// official SDKs (openai-go/v3, anthropic-sdk-go/v2), behind one provider-neutral Client.
//
// A Request is the whole conversation so far (user text, assistant text and tool calls, tool
// results) plus the model-visible tools; a Response is the model's text and tool calls, the
// same whether it arrived as one JSON body or as a server-sent event stream (Options.Stream).
//
// # Why it is built this way
//
// The SDKs own the wire formats, retries and streaming; this package owns what they leave to
// the caller, and every piece of it lives in one per-call SDK middleware (transport.go), which
// sees each HTTP attempt:
//
//   - A10 at the real payload. The middleware reads the serialized body about to be sent,
//     extracts the tool names from it and runs Options.CheckPayload. A refusal cancels the call
//     before any byte is written, so the SDK does not retry it either. Checking the body rather
//     than Request.Tools means nothing added later (an SDK default, an option) can slip by.
//   - Bounded everything. A hostile or broken server cannot make us buffer without limit
//     (MaxResponseBytes covers JSON bodies, error bodies and streams) or sleep as long as its
//     retry-after says (longer than MaxRetryDelay ends the call with a rate-limit error that
//     says how long the server asked for; Anthropic's SDK would otherwise wait).
//   - Errors a person can act on. Status, headers and the start of every body are recorded as
//     they pass, so an *Error can say "check the key in OPENAI_API_KEY" or "is this the base URL
//     of an OpenAI-compatible API?" even when the SDK could not parse what came back (an HTML
//     page from a wrong base URL). Server text is clipped and stripped of control characters.
//   - Debugging (D1): the tool names of each body, a bounded redacted snapshot of it, every SSE
//     event as it was on the wire, every HTTP attempt — see DebugFromEnv.
//
// The SDKs' environment lookups are disabled: a key in OPENAI_API_KEY must never travel to a
// local server that was configured without one. Options are the only source of settings.
//
// Malformed tool calls are kept, not dropped or replaced by `{}`: ToolCall.Malformed says why
// and RawArguments keeps the text, so the harness can answer with an error the model learns
// from. (Anthropic's stream accumulator replaces unparsable input with `{}`; the raw partial
// JSON is collected beside it for that reason.)
//
// Not supported on purpose: images and other non-text content, extended-thinking blocks (they
// are dropped from responses and never replayed), provider-side tools.
//
// Package scripted is the test double: a server that speaks both wire formats from a script.
package provider
