package catalog

import (
	"fmt"
	"strconv"
	"strings"
)

// QuickIndexBytes bounds the quick index (Q1): past it, an overflow line points to tools.search.
const QuickIndexBytes = 8000

// renderQuickIndex lists the guest-visible core and plugin entries (never MCP or client entries:
// their metadata is untrusted) with exact ids, how to call them, a compact input hint and the
// declared output hint or `-> ?` (Q1–Q3). No descriptions: hostile prose must not steer the model.
func renderQuickIndex(c *Catalog) string {
	var b strings.Builder
	shown, eligible := 0, 0
	for _, e := range c.guest {
		if e.Tool.Source == "client" {
			continue
		}
		eligible++
		line := quickLine(e)
		if b.Len()+len(line)+1 > QuickIndexBytes-120 {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
		shown++
	}
	if rest := eligible - shown; rest > 0 {
		fmt.Fprintf(&b, "… and %d more: find them with await tools.search(\"what you need\") or read ALL_TOOLS.\n", rest)
	}
	return b.String()
}

func quickLine(e *Entry) string {
	out := "?"
	if e.Output != "" {
		out = e.Output
	}
	if e.SafeName != "" {
		return "tools." + e.SafeName + "(" + e.Input + ") -> " + out + "  // " + e.ID
	}
	return "tools.callValue(" + strconv.Quote(e.ID) + ", " + e.Input + ") -> " + out
}
