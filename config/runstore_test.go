package config

import "testing"

func TestRunStore(t *testing.T) { // issue 15: runStore.redis parses; absent means in-process
	cfg, err := Parse([]byte(`{runStore: {redis: {url: "redis://127.0.0.1:6379/0", keyEnv: "CODEMODE_RUNSTORE_KEY", prefix: "{cm}:"}}}`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.RunStore.Redis; r == nil || r.URL != "redis://127.0.0.1:6379/0" || r.KeyEnv != "CODEMODE_RUNSTORE_KEY" || r.Prefix != "{cm}:" {
		t.Fatalf("%+v", cfg.RunStore.Redis)
	}
	if cfg, err := Parse([]byte(`{runStore: {}}`), "t.json5"); err != nil || cfg.RunStore.Redis != nil {
		t.Fatalf("%v %+v", err, cfg)
	}
	if Default().RunStore.Redis != nil {
		t.Fatal("the default keeps runs in the process")
	}
}

// issue 20 item 1: Sentinel and Cluster, credentials and the seal key from the environment or
// files, TLS files, and the timing knobs.
func TestRunStoreModes(t *testing.T) {
	cfg, err := Parse([]byte(`{runStore: {redis: {
		mode: "sentinel", url: "rediss://sentinel-1:26379/0", addrs: ["sentinel-2:26379", "sentinel-3:26379"],
		masterName: "mymaster", username: {env: "REDIS_USER"}, password: {file: "/run/secrets/redis-password"},
		sentinelPassword: {env: "SENTINEL_PASSWORD"},
		tls: {caFile: "/etc/redis/ca.pem", certFile: "/etc/redis/client.pem", keyFile: "/etc/redis/client.key", serverName: "redis.internal"},
		key: {file: "/run/secrets/runstore-key"}, timeoutMs: 1500, takeoverMs: 2000}}}`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.RunStore.Redis
	want := RedisStore{Mode: RedisSentinel, URL: "rediss://sentinel-1:26379/0", Addrs: []string{"sentinel-2:26379", "sentinel-3:26379"},
		MasterName: "mymaster", Username: Secret{Env: "REDIS_USER"}, Password: Secret{File: "/run/secrets/redis-password"},
		SentinelPassword: Secret{Env: "SENTINEL_PASSWORD"},
		TLS:              &RedisTLS{CAFile: "/etc/redis/ca.pem", CertFile: "/etc/redis/client.pem", KeyFile: "/etc/redis/client.key", ServerName: "redis.internal"},
		Key:              Secret{File: "/run/secrets/runstore-key"}, TimeoutMs: 1500, TakeoverMs: 2000}
	if r == nil || r.Mode != want.Mode || r.URL != want.URL || len(r.Addrs) != 2 || r.Addrs[1] != want.Addrs[1] || r.MasterName != want.MasterName ||
		r.Username != want.Username || r.Password != want.Password || r.SentinelPassword != want.SentinelPassword ||
		*r.TLS != *want.TLS || r.Key != want.Key || r.KeyEnv != "" || r.Timeout().Milliseconds() != 1500 || r.Takeover().Milliseconds() != 2000 {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
	cfg, err = Parse([]byte(`{runStore: {redis: {mode: "cluster", url: {env: "REDIS_URL"}, addrs: ["node-2:6379"], keyEnv: "K"}}}`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.RunStore.Redis; r.Mode != RedisCluster || r.URL != "" || r.URLSecret != (Secret{Env: "REDIS_URL"}) {
		t.Fatalf("%+v", r)
	}
}
