package redistest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// SentinelSet is a private primary, one replica and three sentinels (quorum 2) watching them
// under the name MasterName, with short timeouts: a primary that dies is replaced in about a
// second.
type SentinelSet struct {
	Primary, Replica *Server
	Sentinels        []*Server
}

// MasterName is the name the sentinels monitor.
const MasterName = "codemode"

// StartSentinel starts the set and waits until every sentinel sees the replica. Without
// redis-server, t skips.
func StartSentinel(t testing.TB) *SentinelSet {
	t.Helper()
	set := &SentinelSet{Primary: StartWith(t, Config{})}
	set.Replica = StartWith(t, Config{Args: []string{"--replicaof", "127.0.0.1", fmt.Sprint(set.Primary.Port())}})
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %[1]s 500\nsentinel failover-timeout %[1]s 3000\nsentinel parallel-syncs %[1]s 1\n",
		MasterName, set.Primary.Port())
	for range 3 {
		set.Sentinels = append(set.Sentinels, StartWith(t, Config{Sentinel: conf}))
	}
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range set.Sentinels {
		cl := s.client()
		for {
			reps, err := cl.Do(ctx, "SENTINEL", "REPLICAS", MasterName).Slice()
			sens, err2 := cl.Do(ctx, "SENTINEL", "SENTINELS", MasterName).Slice()
			if err == nil && err2 == nil && len(reps) == 1 && len(sens) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sentinels not ready after 30s: %v %v %v %v", reps, err, sens, err2)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = cl.Close()
	}
	return set
}

// Addrs are the sentinels' host:port.
func (s *SentinelSet) Addrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, x := range s.Sentinels {
		out[i] = x.Addr()
	}
	return out
}

// PrimaryAddr asks a sentinel where the primary is now.
func (s *SentinelSet) PrimaryAddr(ctx context.Context) (string, error) {
	cl := s.Sentinels[0].client()
	defer cl.Close()
	v, err := cl.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName).StringSlice()
	if err != nil || len(v) != 2 {
		return "", fmt.Errorf("sentinel: %v %v", v, err)
	}
	return v[0] + ":" + v[1], nil
}

// SyncReplica waits until the replica has everything the primary has (WAIT 1): a test that
// kills the primary next knows what a failover must keep.
func (s *SentinelSet) SyncReplica(ctx context.Context) error {
	cl := s.Primary.client()
	defer cl.Close()
	n, err := cl.Wait(ctx, 1, 5*time.Second).Result()
	if err == nil && n < 1 {
		err = fmt.Errorf("the replica did not acknowledge within 5s")
	}
	return err
}

// KillPrimary kills the primary (SIGKILL) and waits until the sentinels have promoted the
// replica, returning how long that took.
func (s *SentinelSet) KillPrimary(ctx context.Context) (time.Duration, error) {
	old := s.Primary.Addr()
	start := time.Now()
	s.Primary.Kill()
	for time.Since(start) < 30*time.Second {
		if addr, err := s.PrimaryAddr(ctx); err == nil && addr != old {
			cl := s.Replica.client()
			role, err := cl.Do(ctx, "ROLE").Slice()
			_ = cl.Close()
			if err == nil && len(role) > 0 && role[0] == "master" {
				return time.Since(start), nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start), fmt.Errorf("no failover within 30s")
}
