// Command libonly is a program that uses only the root package: TestLibraryLinksOnlyWhatItUses
// builds it and checks what it links.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

func main() {
	ctx := context.Background()
	cfg := config.Default()
	cfg.RunStore.Redis = &config.RedisStore{URL: "redis://127.0.0.1:6379/0", KeyEnv: "UNUSED"}
	if _, err := codemode.OpenRunStore(ctx, cfg, nil); !errors.Is(err, codemode.ErrNoRedis) {
		fmt.Println("OpenRunStore without the Redis backend:", err)
		os.Exit(1)
	}
	rt, err := codemode.New(ctx, codemode.Options{})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer rt.Close()
	s := rt.Activate(api.RunContext{}, nil)
	fmt.Println(s.Handle(ctx, "c", "exec", json.RawMessage(`{"code":"return 1"}`)).Text())
}
