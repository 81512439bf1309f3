package nativetool

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

type decodeArgs struct {
	Path   string   `json:"path"`
	Offset *int     `json:"offset"`
	All    bool     `json:"all"`
	Ratio  float64  `json:"ratio"`
	Tags   []string `json:"tags"`
	Opts   struct {
		Deep bool `json:"deep"`
	} `json:"opts"`
	Size    uint   `json:"size,omitempty"`
	Ignored string `json:"-"`
}

// TestDecode: the strict decoding rules every native tool's input goes through (hostile input:
// exact keys, types named in errors, bounded size).
func TestDecode(t *testing.T) {
	tests := []struct {
		name, input string
		want        string // error substring; "" means success
	}{
		{"absent counts as {}", ``, ""},
		{"null counts as {}", `null`, ""},
		{"blank counts as {}", " \n\t ", ""},
		{"all fields", `{"path":"a","offset":2,"all":true,"ratio":0.5,"tags":["x"],"opts":{"deep":true},"size":3}`, ""},
		{"unknown key", `{"path":"a","bogus":1}`, `t: unknown field "bogus" (accepted: path, offset, all, ratio, tags, opts, size)`},
		{"first unknown key in order", `{"zz":1,"aa":2}`, `unknown field "aa"`},
		{"keys are case-sensitive", `{"Path":"a"}`, `unknown field "Path"`},
		{"a json:\"-\" field is no key", `{"Ignored":"x"}`, `unknown field "Ignored"`},
		{"unknown nested key", `{"opts":{"deeper":true}}`, `t: invalid input: json: unknown field "deeper"`},
		{"string", `{"path":7}`, `t: field "path" must be a string, not number`},
		{"integer from string", `{"offset":"2"}`, `field "offset" must be an integer, not string`},
		{"integer from fraction", `{"offset":1.5}`, `field "offset" must be an integer, not number 1.5`},
		{"unsigned", `{"size":-1}`, `field "size" must be an integer`},
		{"boolean", `{"all":"yes"}`, `field "all" must be a boolean, not string`},
		{"number", `{"ratio":"x"}`, `field "ratio" must be a number, not string`},
		{"array", `{"tags":"x"}`, `field "tags" must be an array, not string`},
		{"object", `{"opts":[]}`, `field "opts" must be an object, not array`},
		{"not an object", `["a"]`, `t: input must be a JSON object`},
		{"a string", `"a"`, `t: input must be a JSON object`},
		{"trailing data", `{"path":"a"} {}`, `t: input is not a valid JSON object`},
		{"truncated", `{"path":`, `t: input is not a valid JSON object`},
		{"too large", `{"path":"` + strings.Repeat("a", 200) + `"}`, `t: input is 211 bytes (limit 200)`},
		{"the bound is on the trimmed input", " \n" + `{"path":"` + strings.Repeat("a", 189) + `"}` + "\n ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v decodeArgs
			err := Decode("t", json.RawMessage(tc.input), &v, 200)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Decode(%s) = %v", tc.input, err)
			case tc.want != "" && err == nil:
				t.Fatalf("Decode(%s) succeeded, want %q", tc.input, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Decode(%s) = %q, want it to contain %q", tc.input, err, tc.want)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	var v decodeArgs
	if err := Decode("t", json.RawMessage(`{"path":"a b","offset":3,"tags":["x","y"]}`), &v, 1<<10); err != nil {
		t.Fatal(err)
	}
	if v.Path != "a b" || v.Offset == nil || *v.Offset != 3 || len(v.Tags) != 2 || v.All {
		t.Fatalf("decoded %+v", v)
	}
	v = decodeArgs{}
	if err := Decode("t", nil, &v, 1<<10); err != nil || v.Offset != nil {
		t.Fatalf("Decode(nil) = %v, %+v", err, v)
	}
}

func TestIntArg(t *testing.T) {
	ptr := func(n int) *int { return &n }
	tests := []struct {
		name    string
		v       *int
		want    int
		wantErr string
	}{
		{"absent gives the default", nil, 7, ""},
		{"low bound", ptr(1), 1, ""},
		{"high bound", ptr(10), 10, ""},
		{"below", ptr(0), 0, "t: limit must be between 1 and 10, not 0"},
		{"above", ptr(11), 0, "t: limit must be between 1 and 10, not 11"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IntArg("t", "limit", tc.v, 7, 1, 10)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("IntArg = %d, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("IntArg = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// FuzzDecode: whatever the input, Decode does not panic, and what it accepts is a JSON object
// (or nothing) whose keys are all the struct's tags.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"path":"a"}`, `{"offset":1e400}`, `{"tags":[1]}`,
		`{"opts":{"deep":1}}`, `{"path":"a"}x`, `[`, `{"Path":"a"}`, `{"path":"\ud800"}`} {
		f.Add([]byte(s))
	}
	known := map[string]bool{"path": true, "offset": true, "all": true, "ratio": true, "tags": true, "opts": true, "size": true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v decodeArgs
		if err := Decode("t", raw, &v, 4096); err != nil {
			if !strings.HasPrefix(err.Error(), "t: ") {
				t.Fatalf("error %q does not name the tool", err)
			}
			return
		}
		// Decode trims Unicode white space (bytes.TrimSpace), a little more than JSON's.
		s := bytes.TrimSpace(raw)
		if len(s) == 0 || string(s) == "null" {
			return
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(s, &keys); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object: %v", raw, err)
		}
		for k := range keys {
			if !known[k] {
				t.Fatalf("accepted %q with the unknown key %q", raw, k)
			}
		}
	})
}
