package source

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/tdewolff/parse/v2/js"
	"golang.org/x/sync/errgroup"
)

// nestFamilies are the ways a TypeScript cell can make esbuild recurse or work super-linearly
// (issue 18 item 1): each builds a cell of nesting n. They are the seeds of FuzzNesting and the
// cases of TestTransformStackBounded.
var nestFamilies = []struct {
	name string
	gen  func(n int) string
}{
	{"parens", func(n int) string { return "return " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) }},
	{"brackets", func(n int) string { return "return " + strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }},
	{"multi-line arrays", func(n int) string { return "return " + strings.Repeat("[\n", n) + "1" + strings.Repeat("]", n) }},
	{"blocks", func(n int) string { return strings.Repeat("{", n) + strings.Repeat("}", n) }},
	{"objects", func(n int) string { return "return " + strings.Repeat("{a:\n", n) + "1" + strings.Repeat("}", n) }},
	{"not", func(n int) string { return "return " + strings.Repeat("!", n) + "1" }},
	{"not on lines", func(n int) string { return "return " + strings.Repeat("!\n", n) + "1" }},
	{"unary minus", func(n int) string { return "return " + strings.Repeat("- ", n) + "1" }},
	{"typeof", func(n int) string { return "return " + strings.Repeat("typeof ", n) + "1" }},
	{"await", func(n int) string { return "return " + strings.Repeat("await ", n) + "1" }},
	{"new", func(n int) string { return "return " + strings.Repeat("new ", n) + "a" }},
	{"member chain", func(n int) string { return "return a" + strings.Repeat(".b", n) }},
	{"member chain on lines", func(n int) string { return "return a" + strings.Repeat("\n.b", n) }},
	{"optional chain", func(n int) string { return "return a" + strings.Repeat("?.b", n) }},
	{"call chain", func(n int) string { return "return a" + strings.Repeat("()", n) }},
	{"nested calls", func(n int) string { return "return " + strings.Repeat("f(", n) + strings.Repeat(")", n) }},
	{"index chain", func(n int) string { return "return a" + strings.Repeat("[0]", n) }},
	{"tagged templates", func(n int) string { return "return a" + strings.Repeat("``", n) }},
	{"templates", func(n int) string { return "return " + strings.Repeat("`${", n) + "1" + strings.Repeat("}`", n) }},
	{"non-null", func(n int) string { return "return a" + strings.Repeat("!", n) }},
	{"comma", func(n int) string { return "return a" + strings.Repeat(",a", n) }},
	{"comma in a block", func(n int) string { return "{a" + strings.Repeat(",a", n) + "}" }},
	{"comma after return and newline", func(n int) string { return "return\n{a" + strings.Repeat(",a", n) + "}" }},
	{"comma in a group", func(n int) string { return "return (a" + strings.Repeat(",a", n) + ")" }},
	{"comma in an index", func(n int) string { return "return x![a" + strings.Repeat(",a", n) + "]" }},
	{"comma after a generic", func(n int) string { return "function f(): Promise<T> {a" + strings.Repeat(",a", n) + "}" }},
	{"string concatenation", func(n int) string { return "return 'x'" + strings.Repeat("+'x'", n) }},
	{"exponent", func(n int) string { return "return a" + strings.Repeat("**a", n) }},
	{"assignment", func(n int) string { return strings.Repeat("a=", n) + "1" }},
	{"conditional", func(n int) string { return "return " + strings.Repeat("a?b:", n) + "c" }},
	{"arrows", func(n int) string { return "return " + strings.Repeat("a=>", n) + "1" }},
	{"async arrows", func(n int) string { return "return " + strings.Repeat("async () => ", n) + "1" }},
	{"arrow bodies", func(n int) string { return "return " + strings.Repeat("a=>{return ", n) + "1" + strings.Repeat("}", n) }},
	{"functions", func(n int) string {
		return "return " + strings.Repeat("function(){return ", n) + "1" + strings.Repeat("}", n)
	}},
	{"classes", func(n int) string {
		return "return " + strings.Repeat("class { m() { return ", n) + "1" + strings.Repeat("} }", n)
	}},
	{"class heritage", func(n int) string { return "return " + strings.Repeat("class extends ", n) + "A {}" }},
	{"if", func(n int) string { return strings.Repeat("if(a)", n) + ";" }},
	{"if on lines", func(n int) string { return strings.Repeat("if(a)\n", n) + ";" }},
	{"else if", func(n int) string { return "if(a){}" + strings.Repeat("else if(a){}", n) }},
	{"else if after ;", func(n int) string { return "if(a);" + strings.Repeat("else if(a);", n) }},
	{"else if on lines", func(n int) string { return "if(a)x\n" + strings.Repeat("else if(a)x\n", n) }},
	{"else", func(n int) string { return strings.Repeat("if(a);else ", n) + ";" }},
	{"do", func(n int) string { return strings.Repeat("do ", n) + ";" + strings.Repeat(" while(0)", n) }},
	{"labels", func(n int) string { return strings.Repeat("a:", n) + ";" }},
	{"labels on lines", func(n int) string { return strings.Repeat("a:\n", n) + ";" }},
	{"declare", func(n int) string { return strings.Repeat("declare ", n) + "let x;" }},
	{"namespaces", func(n int) string { return strings.Repeat("namespace A {", n) + strings.Repeat("}", n) }},
	{"generic types", func(n int) string {
		return "let x: " + strings.Repeat("A<", n) + "B" + strings.Repeat(">", n) + "; return 1"
	}},
	{"object types", func(n int) string {
		return "let x: " + strings.Repeat("{a:", n) + "B" + strings.Repeat("}", n) + "; return 1"
	}},
	{"conditional types", func(n int) string { return "type X = " + strings.Repeat("A extends B ? C : ", n) + "D; return 1" }},
	{"function types", func(n int) string { return "type X = " + strings.Repeat("(a: A) => ", n) + "D; return 1" }},
	{"keyof", func(n int) string { return "type X = " + strings.Repeat("keyof ", n) + "D; return 1" }},
	{"array types", func(n int) string { return "type X = A" + strings.Repeat("[]", n) + "; return 1" }},
	{"as", func(n int) string { return "return a" + strings.Repeat(" as any", n) }},
	{"mixed chain", func(n int) string { return "return " + strings.Repeat("!a.b(c)[d]?.e`f`+", n) + "1" }},
}

// nearDeepest is an n within a few percent of the largest whose cell passes Check: the depth a
// family measures grows linearly with n, so one measurement places the limit and a few Checks
// confirm it (a binary search costs seconds under -race).
func nearDeepest(gen func(int) string) int {
	const probe = 64
	d, sc, _ := measureNesting(gen(probe), 1<<30, 1<<30)
	n := 1 << 17
	if d > 0 {
		n = min(n, probe*MaxNesting/d)
	}
	if sc > 0 {
		n = min(n, probe*MaxScopeNesting/sc)
	}
	if per := len(gen(probe+1)) - len(gen(probe)); per > 0 {
		n = min(n, MaxTypeScriptBytes/per)
	}
	for n > 0 && Check(gen(n), TypeScript) != nil {
		n -= max(1, n/50)
	}
	return n
}

// T3. The 520 KB cell of issue 18 item 1 ended the process in esbuild's parser; it and its siblings
// are invalid_input now, at the token that crossed the limit, and naming it.
func TestNestingRefused(t *testing.T) {
	tests := []struct {
		name, code, want string
	}{
		{"260,000 parens", "return " + strings.Repeat("(", 260000) + "1" + strings.Repeat(")", 260000), "deeper than 4096 levels"},
		{"260,000 brackets", "return " + strings.Repeat("[", 260000) + "1" + strings.Repeat("]", 260000), "deeper than 4096 levels"},
		{"member chain", "return a" + strings.Repeat(".b", 5000), "deeper than 4096 levels"},
		{"not", "return " + strings.Repeat("!", 5000) + "1", "deeper than 4096 levels"},
		{"else if after ;", "if(a);" + strings.Repeat("else if(a);", 5000), "deeper than 4096 levels"},
		{"comma operator", "return a" + strings.Repeat(",a", 3000), "deeper than 4096 levels"},
		{"nested arrows", "return " + strings.Repeat("a=>", 65) + "1", "more than 64 blocks and functions"},
		{"nested blocks", strings.Repeat("{", 65) + strings.Repeat("}", 65), "more than 64 blocks and functions"},
		{"large", "return 1;" + strings.Repeat(" ", MaxTypeScriptBytes), "the limit is 65536: send larger cells as JavaScript"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Prepare(tt.code, TypeScript)
			e := asError(t, err)
			if !strings.Contains(e.Msg, tt.want) || !strings.HasPrefix(e.Msg, "exec: TypeScript") {
				t.Fatalf("message %q, want it to say %q", e.Msg, tt.want)
			}
			if tt.name != "large" && (e.Line != 1 || e.Column < 2) {
				t.Fatalf("position %d:%d", e.Line, e.Column)
			}
			if TypeScriptUsed() && !tsUsedBefore {
				t.Fatal("the transform ran for a refused cell")
			}
		})
	}
	// JavaScript has its own parser's bounds (tdewolff: 1,000 nested statements and
	// expressions, then a token scan; QuickJS: a 256 KiB stack): the same cell is not refused
	// by this check, which is the transform's.
	if err := Check("return "+strings.Repeat("(", 260000)+"1"+strings.Repeat(")", 260000), JavaScript); err != nil {
		t.Fatal(err)
	}
}

var tsUsedBefore = TypeScriptUsed()

// Real code is far from the bounds: the TypeScript of the npm packages in the test cache
// measures at most 830 (p99 495) and 18 scopes (see RATIONALE.md); these shapes must pass.
func TestNestingAccepted(t *testing.T) {
	var semicolonFree, elseIfs, guards strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&semicolonFree, "const v%d = await tools.get({ id: %d })\n", i, i)
		fmt.Fprintf(&elseIfs, "else if (x === %d) { y = %d }\n", i, i)
		fmt.Fprintf(&guards, "if (!v%d) return null\n", i)
	}
	tests := []struct{ name, code string }{
		{"array of 15,000 numbers", "const a: number[] = [" + strings.Repeat("1,", 15000) + "]; return a.length"},
		{"object of 4,000 properties", "const o = {" + strings.Repeat("k: 1,\n", 4000) + "}; return o"},
		{"nested data", "return " + strings.Repeat("[{a: 1, b: ", 60) + "0" + strings.Repeat("}]", 60)},
		{"semicolon-free statements", semicolonFree.String() + "return 1"},
		{"300 else-ifs", "let y = 0\nif (x === -1) { y = -1 }\n" + elseIfs.String() + "return y"},
		{"300 guards", guards.String() + "return 1"},
		{"callbacks", "return xs" + strings.Repeat(".map((x: number) => x + 1)", 200)},
		{"string concatenation", "return 'a'" + strings.Repeat(" + 'b'", 1500)},
		{"60 nested functions", strings.Repeat("function f() {\n", 60) + strings.Repeat("}\n", 60) + "return 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code := "declare const tools: any, xs: number[], x: number\n" + tt.code
			if _, err := Prepare(code, TypeScript); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Every family at the deepest nesting Check accepts transforms within a 32 MiB goroutine stack
// (the runtime's limit is 1 GB, and exceeding it is a fatal error): if the measure ever
// underestimated a construct, this test would crash rather than pass. Issue 18 item 1.
func TestTransformStackBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("transforms the deepest cell of every family")
	}
	defer debug.SetMaxStack(debug.SetMaxStack(transformStackBound))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, f := range nestFamilies {
		g.Go(func() error {
			n := nearDeepest(f.gen)
			if n < 16 {
				return fmt.Errorf("%s: only %d levels accepted", f.name, n)
			}
			_, _ = Prepare(f.gen(n), TypeScript) // a diagnostic is fine; a crash is not
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// JavaScript needs no measure of ours: the module check's parser (tdewolff) stops at 1,000
	// nested statements or expressions and falls back to a token scan (a loop). Every family,
	// 256 KiB deep (far past the parser's limits), goes through within the same stack bound.
	if js.NestedExprLimit > 1000 || js.NestedStmtLimit > 1000 {
		t.Fatalf("tdewolff's limits were raised: %d, %d", js.NestedExprLimit, js.NestedStmtLimit)
	}
	for _, f := range nestFamilies {
		g.Go(func() error {
			per := max(1, len(f.gen(2))-len(f.gen(1)))
			_, _ = Prepare(f.gen(min(260000, (256<<10)/per)), JavaScript)
			return nil
		})
	}
	_ = g.Wait()
}

// transformStackBound is the goroutine stack esbuild gets in the tests: at the limits it used
// at most 16 MiB (sampled per family on this machine, rounded up to the runtime's doubling).
const transformStackBound = 32 << 20

// FuzzNesting: any cell built from these fragments either fails Check or transforms within
// transformStackBound (a deeper recursion is a fatal error, which the fuzzer reports). Each
// input byte pair picks a fragment and how many times it repeats.
func FuzzNesting(f *testing.F) {
	for i := range nestFragments {
		f.Add([]byte{byte(i), 255})
	}
	f.Add([]byte{0, 255, 1, 255, 2, 200, 3, 255})
	f.Add([]byte{7, 128, 8, 128, 9, 255, 10, 255})
	f.Fuzz(func(t *testing.T, prog []byte) {
		var b strings.Builder
		for i := 0; i+1 < len(prog) && b.Len() <= MaxTypeScriptBytes; i += 2 {
			frag := nestFragments[int(prog[i])%len(nestFragments)]
			b.WriteString(strings.Repeat(frag, 1+int(prog[i+1])*24))
		}
		code := b.String()
		if Check(code, TypeScript) != nil {
			return
		}
		defer debug.SetMaxStack(debug.SetMaxStack(transformStackBound))
		_, _ = Prepare(code, TypeScript)
	})
}

var nestFragments = []string{
	"(", ")", "[", "]", "{", "}", "!", "-", ".b", "()", "?.", "a", "=", "=>", "a=>", ",", ";", "\n",
	"if(a)", "else ", "do ", "while(a)", "a:", "?", ":", "`${", "}`", "``", "new ", "typeof ", "await ",
	"**", "+", "'x'", "<", ">", "A<", "keyof ", " as any", "function(){", "class{", "return ", "x!",
	"namespace A{", "declare ", "async ", "...", "&&", "|", "{a:", "[\n",
}
