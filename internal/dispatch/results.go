package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/results"
	"github.com/codemode-go/codemode/internal/sandbox"
)

// The run's result store (issue 22 items 1 and 2): results.save/load/delete from cells, and the
// final values too large for their result. Values are kept for the run's scope; provenance
// travels with them, so a cell that loads what an untrusted result produced is marked the same.

var _ sandbox.ValueSpiller = (*Dispatcher)(nil)

// saveDescriptorBytes bounds what results.save returns to the cell.
const saveDescriptorBytes = 2048

// storeTimeout bounds one store operation made on the VM goroutine (an oversized final value).
const storeTimeout = 5 * time.Second

func (d *Dispatcher) resultsOp(ctx context.Context, c *sandbox.Call) ([]byte, error) {
	if d.Results == nil {
		return nil, &api.ToolError{Name: "Error", Code: "unavailable", Message: "results are not available in this run (no result store)"}
	}
	sc := d.resultScope()
	switch c.Op {
	case "results.save":
		if d.RestartSafe {
			return nil, notReplaySafe("results.save")
		}
		e, err := d.Results.Save(ctx, sc, c.Payload, c.Provenance())
		if err != nil {
			return nil, resultsError(err)
		}
		shape := results.Scan(c.Payload)
		return results.Descriptor{ID: e.ID, Bytes: e.Bytes, Count: shape.Count, Shape: shape, JSON: c.Payload}.Render(saveDescriptorBytes), nil
	case "results.load":
		id, err := resultID(c.Payload)
		if err != nil {
			return nil, err
		}
		v, e, err := d.Results.Load(ctx, sc, id)
		if err != nil {
			return nil, resultsError(err)
		}
		c.Untrusted(e.Untrusted...)
		return v, nil
	case "results.delete":
		if d.RestartSafe {
			return nil, notReplaySafe("results.delete")
		}
		id, err := resultID(c.Payload)
		if err != nil {
			return nil, err
		}
		ok, err := d.Results.Delete(ctx, sc, id)
		if err != nil {
			return nil, resultsError(err)
		}
		return json.Marshal(map[string]bool{"deleted": ok})
	}
	return nil, &api.ToolError{Name: "Error", Code: "unknown_request", Message: "unknown bridge request " + c.Op}
}

func notReplaySafe(what string) error {
	return &api.ToolError{Name: "Error", Code: "not_replay_safe",
		Message: what + " is not available in a restartSafe exec: a replay after a restart could not repeat it"}
}

func resultID(payload []byte) (string, error) {
	var p struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return "", badRequest(err)
	}
	if !results.ValidID(p.ID) {
		return "", &api.ToolError{Name: "TypeError", Code: "result_not_found",
			Message: fmt.Sprintf("%q is not a result id: ids look like res_… and come from results.save or an oversized return value", clipID(p.ID))}
	}
	return p.ID, nil
}

func clipID(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// resultsError is a store error as the cell sees it: a refusal keeps its code; an outage of a
// shared store says so.
func resultsError(err error) error {
	var re *results.Error
	if errors.As(err, &re) {
		return re.Guest()
	}
	return &api.ToolError{Name: "Error", Code: "unavailable", Message: "the result store is unavailable: " + err.Error()}
}

// SpillLimit implements sandbox.ValueSpiller.
func (d *Dispatcher) SpillLimit() int {
	if d.Results == nil {
		return 0
	}
	return results.MaxEntryBytes
}

// Spill implements sandbox.ValueSpiller: an oversized final value is saved for the run and
// replaced by a reference; when it cannot be saved, by its start and the reason.
func (d *Dispatcher) Spill(v sandbox.Oversized) []byte {
	var why string
	switch {
	case v.RestartSafe:
		why = "a restartSafe exec keeps nothing"
	case d.Results == nil:
		why = "no result store in this run"
	case !v.Complete:
		why = fmt.Sprintf("it is larger than the %d bytes a saved result may hold", results.MaxEntryBytes)
	default:
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		e, err := d.Results.Save(ctx, d.resultScope(), v.JSON, v.Untrusted)
		cancel()
		if err == nil {
			shape := results.Scan(v.JSON)
			return results.Reference(results.Descriptor{ID: e.ID, Bytes: v.Total, Count: shape.Count, Shape: shape, JSON: v.JSON}, v.MaxOutputBytes, v.Budget)
		}
		why = "the result store refused it: " + err.Error()
	}
	return results.Truncated(v.JSON, v.Total, v.MaxOutputBytes, v.Budget, why)
}

// ResultsPath is the virtual declaration file of the results global (API.read).
const ResultsPath = "results.d.ts"

// ResultsDTS declares results.* for API.read("results.d.ts").
const ResultsDTS = `/**
 * Values kept between the cells of this run: save a large intermediate value once, load it in
 * later execs instead of fetching it again. A saved value is a detached JSON copy (converted as a
 * return value is); every load returns a new copy. Entries belong to this run, are bounded (count
 * and bytes per run, bytes per session) and expire an hour after their last use; a new save
 * fails when the run is full (delete what you no longer need). Loaded data is unknown: look at
 * its shape before you rely on fields.
 */
declare const results: {
  /** Keeps value and describes it: the id to load it with, its size and an observed sample. */
  save(value: unknown): Promise<ResultDescriptor>;
  /** The saved value, whole. Rejects (code "result_not_found") when unknown, deleted or expired. */
  load(id: string): Promise<unknown>;
  /** Frees an entry; resolves to whether there was one. */
  delete(id: string): Promise<{ deleted: boolean }>;
};

interface ResultDescriptor {
  id: string;            // "res_…"
  bytes: number;         // size of the saved JSON
  count: number;         // top-level array length, object key count, or 1
  /** Paths observed in the value with their types and counts ("$[*].id": "number ×500"): a
   *  bounded sample of this value, not a schema. */
  shape?: Record<string, string>;
  shapeNote?: string;
  shapeTruncated?: true;
  preview?: string;      // the start of the JSON
  previewTruncated?: true;
}

/** A return value too large for its result arrives as this instead (and is saved). */
interface OversizedValue {
  truncated: true;
  reference?: ResultDescriptor;   // load it with results.load(reference.id)
  guidance: string;
  bytes?: number; omittedBytes?: number; prefix?: string;   // when it could not be saved
}
`

// Provenance names the source of a tool's results for untrusted-content marking: the MCP
// server ("mcp:github"), or the tool's id.
func Provenance(t *api.Tool) string {
	if t.Source == api.SourceMCP {
		return "mcp:" + t.Owner
	}
	return t.ID()
}

// markUntrusted marks a call's result with the tool's provenance when the tool says its results
// are untrusted.
func markUntrusted(c *sandbox.Call, e *catalog.Entry) {
	if c != nil && e.Tool.Untrusted {
		c.Untrusted(Provenance(e.Tool))
	}
}

// resultScope is the scope of the run's saved values: the run's, or — for a child agent — the
// run of the cell at the root of its swarm, so parent and children pass values by id.
func (d *Dispatcher) resultScope() results.Scope {
	sc := results.ScopeOf(d.Run)
	if d.ResultsRunID != "" {
		sc.RunID = d.ResultsRunID
	}
	return sc
}
