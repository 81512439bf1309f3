package codemode

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// publicPackages are the packages a library user imports; everything else is internal/.
var publicPackages = []string{".", "api", "config", "gateway", "agentloop", "redisstore"}

// The exported identifiers of the public packages are a golden file, so that a change to the
// public API is deliberate and reviewed (issue 24); every exported identifier, method and
// struct field has a doc comment; and no exported signature names an internal package.
//
// Refresh with: go test -run TestAPISurface -update .
func TestAPISurface(t *testing.T) {
	var lines, undocumented, internal []string
	for _, dir := range publicPackages {
		l, u, i := surface(t, dir)
		lines, undocumented, internal = append(lines, l...), append(undocumented, u...), append(internal, i...)
	}
	got := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "api-surface.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestAPISurface -update .)", err)
	}
	if got != string(want) {
		t.Errorf("the public API changed; if that is deliberate, run go test -run TestAPISurface -update . and review the diff:\n%s", diffLines(string(want), got))
	}
	if len(undocumented) > 0 {
		t.Errorf("%d exported identifiers have no doc comment:\n  %s", len(undocumented), strings.Join(undocumented, "\n  "))
	}
	if len(internal) > 0 {
		t.Errorf("public declarations name internal packages:\n  %s", strings.Join(internal, "\n  "))
	}
}

// `go doc` of the root package — what a newcomer reads first — fits on two screens.
func TestRootDocFitsTwoScreens(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go doc")
	}
	out, err := exec.Command("go", "doc", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go doc: %v\n%s", err, out)
	}
	if n := bytes.Count(out, []byte("\n")); n > 100 {
		t.Errorf("go doc . prints %d lines (two screens are 100):\n%s", n, out)
	}
}

// surface lists a package's exported API, one line per identifier: kind, name and, for funcs,
// the signature.
func surface(t *testing.T, dir string) (lines, undocumented, internal []string) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	prefix := filepath.Base(dir)
	if dir == "." {
		prefix = "codemode"
	}
	render := func(n any) string {
		var b bytes.Buffer
		_ = printer.Fprint(&b, fset, n)
		return strings.Join(strings.Fields(b.String()), " ")
	}
	var imports map[string]string // the current file's import name → path
	namesInternal := func(node ast.Node) bool {
		found := false
		ast.Inspect(node, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && strings.Contains(imports[id.Name], "/internal/") {
					found = true
				}
			}
			return !found
		})
		return found
	}
	add := func(line string, doc *ast.CommentGroup, node ast.Node) {
		lines = append(lines, prefix+"."+line)
		if doc == nil || strings.TrimSpace(doc.Text()) == "" {
			undocumented = append(undocumented, prefix+"."+line)
		}
		if node != nil && namesInternal(node) {
			internal = append(internal, prefix+"."+line)
		}
	}
	for _, f := range files {
		imports = map[string]string{}
		for _, im := range f.Imports {
			path := strings.Trim(im.Path.Value, `"`)
			name := filepath.Base(path)
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = path
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				name := d.Name.Name
				if d.Recv != nil {
					recv := render(d.Recv.List[0].Type)
					base := strings.TrimLeft(recv, "*")
					if i := strings.Index(base, "["); i >= 0 {
						base = base[:i]
					}
					if !ast.IsExported(base) {
						continue
					}
					name = base + "." + name
				}
				add("func "+name+strings.TrimPrefix(render(d.Type), "func"), d.Doc, d.Type)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						doc := s.Doc
						if doc == nil {
							doc = d.Doc
						}
						kind := "type"
						if s.Assign.IsValid() {
							kind = "alias"
						}
						switch tt := s.Type.(type) {
						case *ast.StructType:
							add(kind+" "+s.Name.Name+" struct", doc, nil)
							for _, fl := range tt.Fields.List {
								fdoc := fl.Doc
								if fdoc == nil {
									fdoc = fl.Comment
								}
								for _, n := range fl.Names {
									if n.IsExported() {
										add("field "+s.Name.Name+"."+n.Name+" "+render(fl.Type), fdoc, fl.Type)
									}
								}
								if len(fl.Names) == 0 { // embedded
									add("embed "+s.Name.Name+"."+render(fl.Type), fdoc, fl.Type)
								}
							}
						case *ast.InterfaceType:
							add(kind+" "+s.Name.Name+" interface", doc, nil)
							for _, m := range tt.Methods.List {
								mdoc := m.Doc
								if mdoc == nil {
									mdoc = m.Comment
								}
								for _, n := range m.Names {
									if n.IsExported() {
										add("method "+s.Name.Name+"."+n.Name+strings.TrimPrefix(render(m.Type), "func"), mdoc, m.Type)
									}
								}
							}
						default:
							add(kind+" "+s.Name.Name+" "+render(s.Type), doc, s.Type)
						}
					case *ast.ValueSpec:
						kind := "var"
						if d.Tok == token.CONST {
							kind = "const"
						}
						doc := s.Doc
						if doc == nil {
							doc = s.Comment
						}
						if doc == nil {
							doc = d.Doc
						}
						for _, n := range s.Names {
							if n.IsExported() {
								add(kind+" "+n.Name, doc, s.Type)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(lines)
	sort.Strings(undocumented)
	return lines, undocumented, internal
}

// diffLines shows the lines only in want (-) and only in got (+).
func diffLines(want, got string) string {
	w, g := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(want, "\n") {
		w[l] = true
	}
	for _, l := range strings.Split(got, "\n") {
		g[l] = true
	}
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}
