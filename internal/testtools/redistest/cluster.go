package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a private Redis Cluster of masters without replicas, each a Server, the 16384
// slots split evenly between them.
type Cluster struct {
	Nodes []*Server
	ids   []string
}

// StartCluster starts n masters (cluster-enabled), assigns the slots and waits until the
// cluster says ok. Without redis-server, t skips.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{}
	for range n {
		c.Nodes = append(c.Nodes, StartWith(t, Config{Args: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
			"--cluster-require-full-coverage", "yes"}}))
	}
	ctx := context.Background()
	per := 16384 / n
	for i, s := range c.Nodes {
		cl := s.client()
		id, err := cl.ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		c.ids = append(c.ids, id)
		lo, hi := i*per, (i+1)*per-1
		if i == n-1 {
			hi = 16383
		}
		if err := cl.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if err := cl.ClusterMeet(ctx, "127.0.0.1", fmt.Sprint(c.Nodes[0].Port())).Err(); err != nil {
				t.Fatal(err)
			}
		}
		_ = cl.Close()
	}
	c.waitOK(t)
	return c
}

func (s *Server) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr(), DisableIdentity: true})
}

// waitOK waits until every node knows every other and says cluster_state:ok.
func (c *Cluster) waitOK(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	ok := func(cl *redis.Client) (string, bool) {
		info, err := cl.ClusterInfo(ctx).Result()
		return info, err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") &&
			strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d\r", len(c.Nodes)))
	}
	// Every node must say ok twice in a row, 100 ms apart: a node that has just met the others
	// may still flip to fail for a moment.
	for stable := 0; stable < 2; {
		all := true
		var last string
		for _, s := range c.Nodes {
			cl := s.client()
			info, good := ok(cl)
			_ = cl.Close()
			if !good {
				all, last = false, info
			}
		}
		if all {
			stable++
		} else {
			stable = 0
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok after 30s: %s", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SlotOf asks the cluster for a key's hash slot.
func (c *Cluster) SlotOf(ctx context.Context, key string) (int, error) {
	cl := c.Nodes[0].client()
	defer cl.Close()
	n, err := cl.ClusterKeySlot(ctx, key).Result()
	return int(n), err
}

// Addrs are the nodes' host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr()
	}
	return out
}

// MoveSlots reshards: it migrates slots (and their keys) from node `from` to node `to` the way
// redis-cli --cluster reshard does (IMPORTING/MIGRATING, MIGRATE in batches, SETSLOT NODE), while
// clients keep working and follow ASK and MOVED. It returns how many keys moved.
func (c *Cluster) MoveSlots(ctx context.Context, from, to int, slots []int) (int, error) {
	src, dst := c.Nodes[from].client(), c.Nodes[to].client()
	defer src.Close()
	defer dst.Close()
	moved := 0
	for _, slot := range slots {
		if err := dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", c.ids[from]).Err(); err != nil {
			return moved, err
		}
		if err := src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", c.ids[to]).Err(); err != nil {
			return moved, err
		}
		for {
			keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
			if err != nil {
				return moved, err
			}
			if len(keys) == 0 {
				break
			}
			args := []any{"MIGRATE", "127.0.0.1", c.Nodes[to].Port(), "", 0, 5000, "KEYS"}
			for _, k := range keys {
				args = append(args, k)
			}
			if err := src.Do(ctx, args...).Err(); err != nil {
				return moved, err
			}
			moved += len(keys)
		}
		for _, cl := range []*redis.Client{dst, src} {
			if err := cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", c.ids[to]).Err(); err != nil {
				return moved, err
			}
		}
		for i, s := range c.Nodes { // the others learn it by gossip; tell them now
			if i == from || i == to {
				continue
			}
			cl := s.client()
			err := cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", c.ids[to]).Err()
			_ = cl.Close()
			if err != nil {
				return moved, err
			}
		}
	}
	return moved, nil
}

// SlotsOf returns the slots node i serves.
func (c *Cluster) SlotsOf(ctx context.Context, i int) ([]int, error) {
	cl := c.Nodes[i].client()
	defer cl.Close()
	shards, err := cl.ClusterShards(ctx).Result()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, sh := range shards {
		mine := false
		for _, n := range sh.Nodes {
			mine = mine || n.ID == c.ids[i]
		}
		if !mine {
			continue
		}
		for _, r := range sh.Slots {
			for s := int(r.Start); s <= int(r.End); s++ {
				out = append(out, s)
			}
		}
	}
	return out, nil
}
