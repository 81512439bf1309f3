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
