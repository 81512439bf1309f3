package redisstore

import (
	"fmt"
	"strconv"
)

// The key layout. Every key starts with the configured prefix (default "codemode:").
//
// One run's keys share the hash tag {runId}, so one Redis Cluster slot holds all of them and
// every run script is single-slot:
//
//	P{ID}:run    hash: scope digests, principal and session digests, sealed record, version, ttl
//	P{ID}:res    hash: call id -> sealed result
//	P{ID}:lease  the current holder's token
//	P{ID}:cx     "cancelled" marker, for the run's ttl
//	P{ID}:own:D  a live-call owner's heartbeat (D: digest of run id and owner)
//
// The limits are counted in accountShards shards, tag {acct:NN}. A principal's runs all count
// in the shard its digest picks, with its sessions' indexes, so the per-principal and
// per-session limits are exact, checked and applied by one script on one slot:
//
//	P{acct:NN}:idx     zset: run id -> expiry of every run of the shard
//	P{acct:NN}:sz      hash: run id -> bytes
//	P{acct:NN}:bytes   sum of sz
//	P{acct:NN}:p:PD    zset: the runs of one principal
//	P{acct:NN}:s:SD    zset: the runs of one session
//	P{acct:NN}:a:ID    hash: the record's and each result's bytes of one run
//
// No key is global: a fleet with many principals spreads its accounting over the shards (and
// so over a cluster's masters); the fleet-wide limits add the other shards' totals, read at
// most once a second (RATIONALE.md, "Why fleet-wide limits are counted in shards").
//
// A prefix that contains a hash tag itself ("{codemode}:") pins every key to one slot: that
// works on a cluster too, on one master.
const accountShards = 16

type runKeys [4]string

func (s *Store) runKeys(id string) runKeys {
	b := s.prefix + "{" + id + "}:"
	return runKeys{b + "run", b + "res", b + "lease", b + "cx"}
}

func (k runKeys) list(extra ...string) []string { return append(k[:], extra...) }

func (s *Store) ownerKeyName(id, ownerDigest string) string {
	return s.prefix + "{" + id + "}:own:" + ownerDigest
}

// shardOf picks a principal's shard from its digest (hex).
func shardOf(principalDigest string) int {
	if len(principalDigest) < 2 {
		return 0
	}
	n, err := strconv.ParseUint(principalDigest[:2], 16, 8)
	if err != nil {
		return 0
	}
	return int(n) % accountShards
}

func (s *Store) shardBase(shard int) string {
	return fmt.Sprintf("%s{acct:%02d}:", s.prefix, shard)
}

// acctKeys are the keys of the accounting scripts for one run of one principal and session.
func (s *Store) acctKeys(shard int, pd, sd, id string) []string {
	b := s.shardBase(shard)
	return []string{b + "idx", b + "sz", b + "bytes", b + "p:" + pd, b + "s:" + sd, b + "a:" + id}
}

func (s *Store) usageKeys(shard int) []string {
	b := s.shardBase(shard)
	return []string{b + "idx", b + "sz", b + "bytes"}
}

func (s *Store) sessionKey(shard int, sd string) string { return s.shardBase(shard) + "s:" + sd }
