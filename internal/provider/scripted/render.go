package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// piece is how many bytes of text or arguments one stream delta carries: small, so clients
// must really accumulate.
const piece = 16

func (s *Server) render(w http.ResponseWriter, r *http.Request, req *Request, rep Reply) {
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	switch {
	case rep.Body != "":
		ct := rep.ContentType
		if ct == "" {
			ct = "text/plain; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(rep.Body))
	case status >= 400:
		writeError(w, req.Provider, status, nil, rep.ErrorType, rep.ErrorMessage)
	default:
		for i := range rep.ToolCalls {
			if rep.ToolCalls[i].ID == "" {
				rep.ToolCalls[i].ID = callID(req, i)
			}
		}
		st := &streamer{w: w, ctx: r, delay: rep.EventDelay}
		switch {
		case req.Provider == OpenAI && req.Stream:
			openaiStream(st, req, rep)
		case req.Provider == OpenAI:
			writeJSON(w, status, nil, openaiCompletion(req, rep))
		case req.Stream:
			anthropicStream(st, req, rep)
		default:
			writeJSON(w, status, nil, anthropicMessage(req, rep))
		}
	}
}

func callID(req *Request, i int) string {
	if req.Provider == Anthropic {
		return fmt.Sprintf("toolu_%d_%d", req.N, i)
	}
	return fmt.Sprintf("call_%d_%d", req.N, i)
}

func usage(req *Request, rep Reply) (in, out int) {
	in, out = rep.InputTokens, rep.OutputTokens
	if in == 0 {
		in = len(req.Body)/4 + 1
	}
	if out == 0 {
		n := len(rep.Text)
		for _, c := range rep.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
		out = n/4 + 1
	}
	return in, out
}

func writeJSON(w http.ResponseWriter, status int, h http.Header, v any) {
	for k, vs := range h {
		w.Header()[k] = vs
	}
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"scripted model: cannot encode reply"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError renders an error in the provider's own format, with its usual types by status.
func writeError(w http.ResponseWriter, provider string, status int, h http.Header, typ, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	if provider == Anthropic {
		if typ == "" {
			typ = anthropicErrorType(status)
		}
		writeJSON(w, status, h, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg},
			"request_id": w.Header().Get("Request-Id")})
		return
	}
	t, code := openaiErrorType(status)
	if typ != "" {
		t = typ
	}
	writeJSON(w, status, h, map[string]any{"error": map[string]any{"message": msg, "type": t, "param": nil, "code": code}})
}

func anthropicErrorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func openaiErrorType(status int) (typ string, code any) {
	switch status {
	case 401:
		return "invalid_request_error", "invalid_api_key"
	case 403:
		return "invalid_request_error", "unsupported_country_region_territory"
	case 404:
		return "invalid_request_error", "model_not_found"
	case 429:
		return "requests", "rate_limit_exceeded"
	}
	if status >= 500 {
		return "server_error", nil
	}
	return "invalid_request_error", nil
}

// streamer writes server-sent events, flushing each and stopping when the client is gone.
type streamer struct {
	w       http.ResponseWriter
	ctx     *http.Request
	delay   time.Duration
	started bool
	gone    bool
}

func (st *streamer) start() {
	if st.started {
		return
	}
	st.started = true
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	st.w.WriteHeader(http.StatusOK)
}

// event writes one event (name may be empty: OpenAI's streams have data lines only).
func (st *streamer) event(name string, data any) {
	if st.gone {
		return
	}
	st.start()
	if st.delay > 0 && !sleep(st.ctx.Context(), st.delay) {
		st.gone = true
		return
	}
	var b []byte
	switch d := data.(type) {
	case string:
		b = []byte(d)
	default:
		var err error
		if b, err = json.Marshal(d); err != nil {
			b = []byte(`{}`)
		}
	}
	var out []byte
	if name != "" {
		out = append(out, "event: "+name+"\n"...)
	}
	out = append(out, "data: "...)
	out = append(out, b...)
	out = append(out, "\n\n"...)
	if _, err := st.w.Write(out); err != nil {
		st.gone = true
		return
	}
	if f, ok := st.w.(http.Flusher); ok {
		f.Flush()
	}
}

// pieces splits s into chunks of at most n bytes without splitting a UTF-8 sequence.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
