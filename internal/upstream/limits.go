package upstream

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// Bounds on what an upstream server may hand us. Servers are untrusted: their metadata reaches
// catalogs, hints and declaration files, and their results reach the sandbox.
const (
	maxNameBytes      = 128     // tool names: longer ones are skipped
	maxLabelBytes     = 256     // titles: truncated
	maxDescBytes      = 8 << 10 // descriptions: truncated
	maxSchemaBytes    = 256 << 10
	maxToolsPerServer = 1000
	maxListPages      = 1000
	maxResultBytes    = 8 << 20  // one result (tools/call, resources/read, prompts/get, a list page)
	maxBodyBytes      = 16 << 20 // one HTTP JSON response body: beyond it the connection fails
	maxStderrLine     = 4 << 10  // one logged stderr line
)

// Notifications a server may send per second (and in a burst) before we stop reading from it
// until the rate is back under the bound. A server can write list_changed or progress as fast
// as it can: unbounded, decoding them alone took a core. Past the rate the server's own
// messages wait in its pipe or socket (its results too: its own doing); other servers and the
// gateway are not affected.
const (
	notificationRate  = 1000
	notificationBurst = 1000
)

func newNotificationLimiter() *rate.Limiter {
	return rate.NewLimiter(notificationRate, notificationBurst)
}

// validToolName reports whether name is 1–128 bytes of printable, non-space characters.
func validToolName(name string) bool {
	if name == "" || len(name) > maxNameBytes || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// clip makes s valid UTF-8 and cuts it to at most n bytes on a character boundary.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// schemaBytes returns raw compacted if it is a JSON object of at most maxSchemaBytes, or why not.
func schemaBytes(raw []byte) (json.RawMessage, string) {
	if len(raw) > maxSchemaBytes {
		return nil, "larger than 256 KiB"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, "not JSON"
	}
	if buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, "not a JSON object"
	}
	return buf.Bytes(), ""
}
