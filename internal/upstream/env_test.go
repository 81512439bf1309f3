package upstream

import (
	"slices"
	"testing"
)

func TestChildEnv(t *testing.T) { // upstream hygiene: the gateway's secrets stay in the gateway
	gw := []string{"PATH=/bin", "HOME=/root", "LC_ALL=C.UTF-8", "OPENAI_API_KEY=sk-secret", "CODEMODE_TOKEN=tok",
		"GITHUB_TOKEN=ghp", "AWS_SECRET_ACCESS_KEY=x", "LANG=en_US.UTF-8", "NOEQUALS"}
	cases := []struct {
		name    string
		inherit []string
		set     map[string]string
		want    []string
	}{
		{"minimal", nil, nil, []string{"PATH=/bin", "HOME=/root", "LC_ALL=C.UTF-8", "LANG=en_US.UTF-8"}},
		{"inherit by name", []string{"GITHUB_TOKEN", "MISSING"}, nil, []string{"PATH=/bin", "HOME=/root", "LC_ALL=C.UTF-8", "GITHUB_TOKEN=ghp", "LANG=en_US.UTF-8"}},
		{"env wins and adds", nil, map[string]string{"HOME": "/srv", "A": "1"}, []string{"PATH=/bin", "LC_ALL=C.UTF-8", "LANG=en_US.UTF-8", "A=1", "HOME=/srv"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := childEnv(gw, c.inherit, c.set)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
	if got := childEnv(nil, nil, nil); got == nil {
		t.Fatal("nil env would inherit everything")
	}
}
