package source

import "testing"

// A JavaScript syntax error on TypeScript says to use language "typescript" (issue 24); plain
// JavaScript, object literals, ternaries and labels do not trigger the hint.
func TestLooksLikeTypeScript(t *testing.T) {
	for _, tc := range []struct {
		code string
		want bool
	}{
		{"const n: number = 1; return n", true},
		{"let xs: string[] = []", true},
		{"function f(a: string, b: number) { return a }", true},
		{"const f = (a: unknown) => a", true},
		{"const f = (a, b): number => a + b", true},
		{"function g(): Promise<void> {}", false}, // generic return: unsure, quiet
		{"function g(): string { return '' }", true},
		{"interface User { id: string }\nreturn 1", true},
		{"type Id = string; return 1", true},
		{"enum Color { Red }", true},
		{"const v = (await tools.x({})) as any", true},
		{"class A { private x: number = 1 }", true},
		{"return {a: 1, b: cond ? x : y}", false},
		{"const o = {name: 'x', n: 2}; return o", false},
		{"outer: for (const x of xs) { break outer }", false},
		{"const s = 'const n: number'; return s", false},
		{"// interface A {}\nreturn 1", false},
		{"const type = 1; return type", false},
		{"f(a ? b : c)", false},
		{"return x", false},
	} {
		if got := LooksLikeTypeScript(tc.code); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.code, got, tc.want)
		}
	}
}
