package swarm

import (
	"encoding/json"
	"strings"
)

// Under a shared run store a child is a long nested call whose parent run can move to another
// replica. The child's progress is a checkpoint — written by its runner after each step, kept in
// the run's stored results under JournalKey(call id) — so that if the process running it dies,
// the replica that resumes the run continues the child from its last checkpoint instead of
// losing it or running it again from the start (see RATIONALE.md, "Why do children checkpoint").

// journalSuffix marks a child's checkpoint among a run's stored results. Call ids end in
// "/<digits>", decisions in "#d": no collision.
const journalSuffix = "#agent"

// JournalKey is the stored-results key of the checkpoint of the child started by callID.
func JournalKey(callID string) string { return callID + journalSuffix }

// JournalCall reports whether key is a child's checkpoint, and of which agents.run call.
func JournalCall(key string) (string, bool) {
	return strings.CutSuffix(key, journalSuffix)
}

// checkpoint keeps a child's latest checkpoint and writes it when the run's record exists.
func (g *Group) checkpoint(callID string, state []byte) {
	g.mu.Lock()
	if g.ckpts == nil {
		g.ckpts = map[string][]byte{}
	}
	g.ckpts[callID] = state
	sink := g.sink
	g.mu.Unlock()
	if sink != nil {
		sink(JournalKey(callID), state)
	}
}

// SetCheckpointSink makes checkpoints go to sink (the durable layer's writer of the run's
// results) from now on, starting with the latest of each running child.
func (g *Group) SetCheckpointSink(sink func(key string, data []byte)) {
	g.mu.Lock()
	g.sink = sink
	pending := make(map[string][]byte, len(g.ckpts))
	for k, v := range g.ckpts {
		pending[k] = v
	}
	g.mu.Unlock()
	if sink == nil {
		return
	}
	for callID, state := range pending {
		sink(JournalKey(callID), state)
	}
}

// Resume hands the group a stored checkpoint: if the child's call starts here again (its process
// died), the child continues from it.
func (g *Group) Resume(callID string, state []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resume == nil {
		g.resume = map[string][]byte{}
	}
	g.resume[callID] = state
}

// groupState is what crosses to another replica with the run's record.
type groupState struct {
	Total int `json:"total"`
	Notes int `json:"notes,omitempty"`
}

// Export is the group's state for the run's record.
func (g *Group) Export() json.RawMessage {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, _ := json.Marshal(groupState{Total: g.total, Notes: g.notes})
	return b
}

// Import restores a group's state from a run's record (a corrupt one leaves the counts at 0).
func (g *Group) Import(b json.RawMessage) {
	var st groupState
	if len(b) == 0 || json.Unmarshal(b, &st) != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total = max(g.total, min(max(st.Total, 0), g.rt.lim.MaxTotal))
	g.notes = max(g.notes, min(max(st.Notes, 0), MaxNotes))
}
