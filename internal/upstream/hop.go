package upstream

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/codemode-go/codemode/internal/rawjson"
)

// Hop-level members (issue 21). A 2026-07-28 server's results carry members about the exchange
// itself rather than the result: resultType ("complete", or "input_required", which the SDK's
// client answers before we see the result) and, in _meta, keys under the protocol's reserved
// "io.modelcontextprotocol/" prefix — serverInfo, naming the server that answered. Between the
// gateway and its upstream they describe that hop; relayed as they are they would tell a client
// of the gateway that the upstream answered it, and hand a 2025-11-25 client members of a protocol
// it did not negotiate. So the gateway drops them from every result it takes from an upstream
// (tools/call, prompts/get, resources/read): direct calls, cells and prompts and resources then
// see the same result whichever protocol generation the upstream speaks, and the gateway's MCP
// server adds its own for a client whose protocol has them. Every other member, and every other
// _meta key, stays byte for byte.

const reservedMeta = "io.modelcontextprotocol/"

// withoutHopMembers is raw without resultType and the reserved _meta keys (an emptied _meta is
// dropped). raw is returned unchanged when it has none, or is not an object.
func withoutHopMembers(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"resultType"`)) && !bytes.Contains(raw, []byte(reservedMeta)) {
		return raw // the common case, and every result of an older server: no decoding
	}
	ms, ok := rawjson.Members(raw)
	if !ok {
		return raw
	}
	out := ms[:0:0]
	changed := false
	for _, m := range ms {
		switch m.Key {
		case "resultType":
			changed = true
			continue
		case "_meta":
			meta, ok := rawjson.Members(m.Value)
			if !ok {
				break
			}
			kept := meta[:0:0]
			for _, k := range meta {
				if !strings.HasPrefix(k.Key, reservedMeta) {
					kept = append(kept, k)
				}
			}
			if len(kept) == len(meta) {
				break
			}
			changed = true
			if len(kept) == 0 {
				continue
			}
			m.Value = rawjson.Object(kept)
		}
		out = append(out, m)
	}
	if !changed {
		return raw
	}
	return rawjson.Object(out)
}
