package search

import (
	"reflect"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/textcut"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"create_issue", []string{"create", "issue"}},
		{"browser_take_screenshot", []string{"browser", "take", "screenshot"}},
		{"API-get-user", []string{"api", "get", "user"}},
		{"linear_createIssue", []string{"linear", "create", "issue"}},
		{"getHTTPResponse", []string{"get", "http", "response"}},
		{"APIKey", []string{"api", "key"}},
		{"HTTPServer2Config", []string{"http", "server", "2", "config"}},
		{"EC2Instance", []string{"ec2", "instance"}},
		{"PascalCaseName", []string{"pascal", "case", "name"}},
		{"kebab-case-name", []string{"kebab", "case", "name"}},
		{"dotted.name.space", []string{"dotted", "name", "space"}},
		{"mcp:github:create_issue", []string{"mcp", "github", "create", "issue"}},
		{"r2_put_object", []string{"r2", "put", "object"}},
		{"d1_query", []string{"d1", "query"}},
		{"k8s", []string{"k8s"}},
		{"base64", []string{"base", "64"}},
		{"oauth2Token", []string{"oauth", "2", "token"}},
		{"slow 3g", []string{"slow", "3g"}},
		{"Take a screenshot!", []string{"take", "a", "screenshot"}},
		{"  spaces\tand\nnewlines  ", []string{"spaces", "and", "newlines"}},
		{"🛡️ Guardrails: émoji Ünïcode", []string{"guardrails", "émoji", "ünïcode"}},
		{"get_file_contents", []string{"get", "file", "contents"}},
		{"ALLCAPS", []string{"allcaps"}},
	}
	for _, tt := range tests {
		got := splitWords(tt.in, nil)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		// Short words and non-ASCII are left alone.
		{"get", "get"}, {"use", "use"}, {"ünïcode", "ünïcode"}, {"r2", "r2"},
		// Plurals.
		{"files", "file"}, {"issues", "issu"}, {"entries", "entry"}, {"policies", "policy"},
		{"addresses", "address"}, {"boxes", "box"}, {"branches", "branch"}, {"messages", "messag"},
		{"status", "status"}, {"analysis", "analysis"}, {"process", "process"},
		// -ing / -ed, with undoubling.
		{"creating", "creat"}, {"created", "creat"}, {"create", "creat"}, {"creates", "creat"},
		{"running", "run"}, {"logging", "log"}, {"logged", "log"}, {"billing", "bill"},
		{"missing", "miss"}, {"string", "string"}, {"thing", "thing"}, {"need", "need"},
		{"notified", "notify"}, {"modified", "modify"}, {"copied", "copy"},
		// -ation, -ment, final e.
		{"migration", "migrat"}, {"migrate", "migrat"}, {"deployment", "deploy"},
		{"deployments", "deploy"}, {"management", "manag"}, {"manage", "manag"},
		{"comment", "comment"}, {"page", "page"}, {"pages", "page"}, {"delete", "delet"},
		{"deleted", "delet"},
	}
	for _, tt := range tests {
		if got := stem(tt.in); got != tt.want {
			t.Errorf("stem(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Inflections of one word meet on one stem.
	for _, group := range [][]string{
		{"create", "creates", "created", "creating"},
		{"screenshot", "screenshots"},
		{"repository", "repositories"},
		{"notify", "notified", "notifies"},
		{"deploy", "deploys", "deployed", "deploying", "deployment"},
	} {
		for _, w := range group[1:] {
			if stem(w) != stem(group[0]) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q: want equal", w, stem(w), group[0], stem(group[0]))
			}
		}
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"the of and", nil},
		{"List open pull requests", []string{"list", "open", "pull", "request"}},
		{"what files did this PR touch", []string{"file", "pull", "request", "touch"}},
		{"fork a repo", []string{"fork", "repository"}},
		{"sign out", []string{"logout"}},
		{"who am I logged in as", []string{"whoami", "login"}},
		{"k8s pods", []string{"kubernet", "pod"}},
		{"linear_createIssue", []string{"linear", "creat", "issu"}},
		{"edit the wrangler config", []string{"edit", "wrangler", "configurat"}},
		{"a b c 7", []string{"7"}},
	}
	for _, tt := range tests {
		if got := Terms(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormKey(t *testing.T) {
	want := "createissue"
	for _, in := range []string{"create_issue", "createIssue", "Create Issue", "create-issue", "CREATE.ISSUE", " create issue "} {
		if got := normKey(in); got != want {
			t.Errorf("normKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTruncateUTF8(t *testing.T) {
	s := strings.Repeat("é", 10) // 20 bytes
	for n := 0; n <= 21; n++ {
		got := textcut.Prefix(s, n)
		if len(got) > n || len(got)%2 != 0 {
			t.Errorf("textcut.Prefix(n=%d) = %d bytes", n, len(got))
		}
	}
}

func TestSynonyms(t *testing.T) {
	// Entries are stemmed, symmetric, and never contain the term itself.
	for term, syns := range synonyms {
		for _, s := range syns {
			if s == term {
				t.Errorf("synonyms[%q] contains itself", term)
			}
			found := false
			for _, back := range synonyms[s] {
				if back == term {
					found = true
				}
			}
			if !found {
				t.Errorf("synonyms[%q] has %q but not the reverse", term, s)
			}
		}
	}
	has := func(a, b string) bool {
		for _, s := range synonyms[Terms(a)[0]] {
			if s == Terms(b)[0] {
				return true
			}
		}
		return false
	}
	for _, p := range [][2]string{
		{"get", "fetch"}, {"fetch", "retrieve"}, {"list", "enumerate"}, {"delete", "remove"},
		{"create", "make"}, {"update", "edit"}, {"modify", "update"}, {"search", "find"},
		{"screenshot", "capture"}, {"file", "document"}, {"issue", "ticket"}, {"bug", "issue"},
		{"folder", "directory"}, {"sprint", "cycle"},
	} {
		if !has(p[0], p[1]) {
			t.Errorf("%q and %q are not synonyms", p[0], p[1])
		}
	}
	if has("create", "delete") {
		t.Error("create and delete are synonyms")
	}
}
