package nativetool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
)

type echoArgs struct {
	Text string `json:"text"`
}

type echoDetails struct {
	Text string `json:"text"`
}

var echoSpec = Spec{
	Name: "echo", Label: "Echo", Description: "Echoes text.",
	Input: `{
  "type": "object",
  "properties": {"text": {"type": "string"}},
  "additionalProperties": false
}`,
	Output:        `{"type": "object", "properties": {"text": {"type": "string"}}}`,
	Owner:         "demo",
	ReadOnly:      true,
	MaxInputBytes: 1 << 10,
}

func echo(_ context.Context, in *echoArgs) (*echoDetails, error) {
	if in.Text == "fail" {
		return nil, errors.New("echo: asked to fail")
	}
	return &echoDetails{Text: in.Text}, nil
}

func echoText(d *echoDetails) string { return "said " + d.Text }

func call(t *testing.T, tool *api.Tool, input string) (*api.Result, error) {
	t.Helper()
	return tool.Execute(context.Background(), &api.Call{Input: json.RawMessage(input)})
}

func TestRendered(t *testing.T) {
	tool := Rendered(echoSpec, echo, echoText)
	if tool.Name != "echo" || tool.Label != "Echo" || tool.Description != "Echoes text." ||
		tool.Source != api.SourceNative || tool.Owner != "demo" || !tool.ReadOnly || tool.ID() != "native:demo:echo" {
		t.Fatalf("tool fields: %+v", tool)
	}
	if got, want := string(tool.InputSchema), `{"type":"object","properties":{"text":{"type":"string"}},"additionalProperties":false}`; got != want {
		t.Errorf("InputSchema = %s, want %s (compact, key order kept)", got, want)
	}
	if got, want := string(tool.OutputSchema), `{"type":"object","properties":{"text":{"type":"string"}}}`; got != want {
		t.Errorf("OutputSchema = %s, want %s", got, want)
	}

	tests := []struct {
		name, input, text, details, err string
	}{
		{"renders text and details", `{"text":"<a&b>"}`, "said <a&b>", `{"text":"<a&b>"}`, ""},
		{"null input", `null`, "said ", `{"text":""}`, ""},
		{"decode error names the tool", `{"txt":"x"}`, "", "", `echo: unknown field "txt" (accepted: text)`},
		{"input bound", `{"text":"` + strings.Repeat("x", 2000) + `"}`, "", "", "echo: input is 2011 bytes (limit 1024)"},
		{"run error passes through", `{"text":"fail"}`, "", "", "echo: asked to fail"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := call(t, tool, tc.input)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != tc.text {
				t.Errorf("content %+v, want one text block %q", res.Content, tc.text)
			}
			if string(res.Details) != tc.details {
				t.Errorf("details %s, want %s (HTML not escaped, no trailing newline)", res.Details, tc.details)
			}
		})
	}
}

func TestTypedPassesDecodedInput(t *testing.T) {
	var got *echoArgs
	tool := Typed(echoSpec, func(_ context.Context, in *echoArgs) (*api.Result, error) {
		got = in
		return Result("ok", nil)
	})
	res, err := call(t, tool, `{"text":"hi"}`)
	if err != nil || got == nil || got.Text != "hi" {
		t.Fatalf("run saw %+v (err %v)", got, err)
	}
	if string(res.Details) != "null" {
		t.Errorf("details %s", res.Details)
	}
}

func TestResultError(t *testing.T) {
	if _, err := Result("x", func() {}); err == nil {
		t.Fatal("Result of an unencodable value succeeded")
	}
}

func TestSchemaPanicsOnMalformedLiteral(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "invalid schema literal") {
			t.Fatalf("recover() = %v", r)
		}
	}()
	Schema(`{"type": }`)
}
