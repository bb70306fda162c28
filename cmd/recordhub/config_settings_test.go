package main

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSettingsTable fails when the settings table of this directory's
// README and the code disagree: it names every environment variable the
// recordhub binary reads that has no row, and every row that nothing reads.
//
// "The binary" is every package of this module that `go list -deps` finds
// behind ./cmd/recordhub, so the variables of the test helpers
// (RECORDHUB_TEST_*, in _test.go files and models/storetest) and of the
// bench and chaos harnesses, which the binary does not link, are left out.
// Variables read by libraries themselves (the OpenTelemetry SDK's other
// OTEL_* settings, libpq's PG* ones through pgx) are not the module's code
// and are described in the README's prose, not in the table.
func TestSettingsTable(t *testing.T) {
	t.Parallel()
	pkgs := binaryPackages(t)
	read, err := envReads(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	// The scan must find what config.go plainly reads; missing these means
	// the scan, not the table, is broken (TestEnvReadsFollowsHelpers checks
	// how it follows helpers).
	for _, name := range []string{"RECORDHUB_HTTP_ADDR", "DATABASE_URL"} {
		if _, ok := read[name]; !ok {
			t.Fatalf("the scan of the code found no read of %s: the scan is broken (found %v)", name, keys(read))
		}
	}
	table := settingsTable(t, "README.md")

	var missing, unread []string
	for name, where := range read {
		if !table[name] {
			missing = append(missing, fmt.Sprintf("%s (read at %s)", name, strings.Join(where, ", ")))
		}
	}
	for name := range table {
		if _, ok := read[name]; !ok {
			unread = append(unread, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(unread)
	for _, m := range missing {
		t.Errorf("setting %s has no row in the settings table of cmd/recordhub/README.md", m)
	}
	for _, u := range unread {
		t.Errorf("settings table of cmd/recordhub/README.md has a row for %s, which no code of the binary reads", u)
	}
}

// TestEnvReadsFollowsHelpers checks the scan on a small package: direct
// reads, names forwarded through helper functions and closures, constants
// of this and another package, a map of names, and a read it cannot
// resolve.
func TestEnvReadsFollowsHelpers(t *testing.T) {
	t.Parallel()
	const other = `package other
const Name = "OTHER_NAME"
func Get(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" { return v }
	return def
}
`
	const main = `package main
import (
	"os"
	"example.com/m/other"
)
const fromConst = "FROM_CONST"
var perKind = map[int]string{1: "MAP_ONE", 2: "MAP_TWO"}
func read(lookupEnv func(string) (string, bool)) {
	getenv := func(name string) string { v, _ := lookupEnv(name); return v }
	intVar := func(dst *int, name string, def int) { _ = getenv(name) }
	var n int
	intVar(&n, "VIA_CLOSURE", 1)
	_ = other.Get(getenv, "VIA_OTHER_PACKAGE", "x")
	_ = getenv(other.Name)
	_, _ = lookupEnv(fromConst)
	_ = getenv(perKind[1])
	_ = os.Getenv("DIRECT")
}
`
	pkgs := parsePackages(t, map[string]string{"example.com/m/other": other, "example.com/m": main})
	got, err := envReads(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DIRECT", "FROM_CONST", "MAP_ONE", "MAP_TWO", "OTHER_NAME", "VIA_CLOSURE", "VIA_OTHER_PACKAGE"}
	if diff := cmp.Diff(keys(got), want); diff != "" {
		t.Errorf("variables found (-got +want):\n%s", diff)
	}

	const unresolved = `package main
import "os"
func f(prefix string) { name := prefix + "_X"; _ = os.Getenv(name) }
`
	if _, err := envReads(parsePackages(t, map[string]string{"example.com/u": unresolved})); err == nil {
		t.Error("a read of a computed name was accepted; want an error naming it")
	}
}

func parsePackages(t *testing.T, srcs map[string]string) []goPackage {
	t.Helper()
	fset := token.NewFileSet()
	var pkgs []goPackage
	for path, src := range srcs {
		f, err := parser.ParseFile(fset, path+"/x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, goPackage{path: path, fset: fset, files: []*ast.File{f}})
	}
	return pkgs
}

// settingRow is a row of the settings table: its first cell is the
// variable's name in backquotes.
var settingRow = regexp.MustCompile("^\\|\\s*`([A-Z][A-Z0-9_]*)`\\s*\\|")

// settingsTable reads the names of the table under the README's
// "## Settings" heading.
func settingsTable(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Settings"
			continue
		}
		if !in {
			continue
		}
		if m := settingRow.FindStringSubmatch(line); m != nil {
			if names[m[1]] {
				t.Errorf("%s: %s has two rows", path, m[1])
			}
			names[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("%s: no settings table under a \"## Settings\" heading (rows start with | `NAME` |)", path)
	}
	return names
}

// goPackage is one package's parsed non-test files.
type goPackage struct {
	path  string
	fset  *token.FileSet
	files []*ast.File
}

// binaryPackages parses the non-test files of every package of this module
// that the recordhub binary is built from (all build variants' files: a
// file behind a build tag reads its settings in some build).
func binaryPackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.ImportPath}} {{.Dir}}{{end}}{{end}}", ".").Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	fset := token.NewFileSet()
	var pkgs []goPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		p := goPackage{path: path, fset: fset}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			p.files = append(p.files, f)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 3 {
		t.Fatalf("go list -deps found %d packages of the module behind ./cmd/recordhub; want the module's packages:\n%s", len(pkgs), out)
	}
	return pkgs
}

// envReads returns every environment variable name the packages read, with
// the positions of the reads. A read is a call of os.Getenv or
// os.LookupEnv, of a function value typed func(string) string or
// func(string) (string, bool) (the commands' lookupEnv and getenv), or of a
// function that passes one of its parameters to such a read (envOr,
// envDuration, config.go's intVar; found by following the calls until
// nothing new turns up). The name read must be a string literal, a string
// constant, or an index into a package-level map of string literals; any
// other argument is an error, so that no read escapes the table.
func envReads(pkgs []goPackage) (map[string][]string, error) {
	s := &envScan{
		consts:  map[string]string{},
		maps:    map[string][]string{},
		readers: map[string][]int{},
	}
	for _, p := range pkgs {
		s.collectNames(p)
	}
	// Follow forwarding until no function becomes a reader.
	for {
		before := s.count()
		for _, p := range pkgs {
			s.walk(p, false)
		}
		if s.count() == before {
			break
		}
	}
	s.found = map[string][]string{}
	for _, p := range pkgs {
		s.walk(p, true)
	}
	if len(s.errs) > 0 {
		return s.found, fmt.Errorf("reads whose variable name cannot be told:\n%s", strings.Join(s.errs, "\n"))
	}
	return s.found, nil
}

type envScan struct {
	consts  map[string]string   // "pkgpath.Name" → value
	maps    map[string][]string // "pkgpath.Name" → the map's string values
	readers map[string][]int    // function key → argument positions that name a variable
	found   map[string][]string
	errs    []string
}

func (s *envScan) count() int {
	n := 0
	for _, pos := range s.readers {
		n += len(pos)
	}
	return n
}

func (s *envScan) markReader(key string, i int) {
	if !slices.Contains(s.readers[key], i) {
		s.readers[key] = append(s.readers[key], i)
	}
}

// collectNames records the package-level string constants (and variables
// holding a literal) and maps of string literals.
func (s *envScan) collectNames(p goPackage) {
	for _, f := range p.files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || (gd.Tok != token.CONST && gd.Tok != token.VAR) {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					switch v := vs.Values[i].(type) {
					case *ast.BasicLit:
						if str, ok := stringLit(v); ok {
							s.consts[p.path+"."+name.Name] = str
						}
					case *ast.CompositeLit:
						var vals []string
						for _, e := range v.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok {
								e = kv.Value
							}
							if str, ok := stringLit(e); ok {
								vals = append(vals, str)
							}
						}
						if len(vals) > 0 {
							s.maps[p.path+"."+name.Name] = vals
						}
					}
				}
			}
		}
	}
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(bl.Value)
	return v, err == nil
}

// scope is a function being walked: its key (empty for a function literal
// that has no name to be called by) and its parameters.
type scope struct {
	key    string
	params map[string]int
}

// walk visits every call of p. Without collect it marks functions that
// forward a parameter to a read; with it, it records the names read.
func (s *envScan) walk(p goPackage, collect bool) {
	for _, f := range p.files {
		imports := map[string]string{}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = path
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			outer := fd.Name.Name
			key := p.path + "." + outer
			if fd.Recv != nil {
				key = "" // a method is not called by a name the scan can resolve
			}
			w := &funcWalker{s: s, p: p, imports: imports, outer: p.path + "." + outer, collect: collect}
			w.enter(key, fd.Type)
			ast.Inspect(fd.Body, w.visit)
		}
	}
}

type funcWalker struct {
	s       *envScan
	p       goPackage
	imports map[string]string
	outer   string // key prefix of the closures named inside the declaration
	collect bool
	stack   []scope
}

// enter pushes a function's scope and marks its lookup-typed parameters as
// reads of their first argument.
func (w *funcWalker) enter(key string, ft *ast.FuncType) {
	sc := scope{key: key, params: map[string]int{}}
	i := 0
	for _, field := range ft.Params.List {
		n := len(field.Names)
		if n == 0 {
			n = 1
		}
		for j := 0; j < n; j++ {
			if j < len(field.Names) {
				name := field.Names[j].Name
				sc.params[name] = i
				if isLookupType(field.Type) {
					w.s.markReader(w.outer+"."+name, 0)
				}
			}
			i++
		}
	}
	w.stack = append(w.stack, sc)
}

// isLookupType reports whether t is func(string) string or
// func(string) (string, bool).
func isLookupType(t ast.Expr) bool {
	ft, ok := t.(*ast.FuncType)
	if !ok || ft.Params.NumFields() != 1 || !isIdent(ft.Params.List[0].Type, "string") || ft.Results == nil {
		return false
	}
	var res []ast.Expr
	for _, r := range ft.Results.List {
		n := len(r.Names)
		if n == 0 {
			n = 1
		}
		for range n {
			res = append(res, r.Type)
		}
	}
	switch len(res) {
	case 1:
		return isIdent(res[0], "string")
	case 2:
		return isIdent(res[0], "string") && isIdent(res[1], "bool")
	}
	return false
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func (w *funcWalker) visit(n ast.Node) bool {
	if n == nil {
		return false
	}
	switch n := n.(type) {
	case *ast.AssignStmt:
		// name := func(...) {...}: a closure callable by name.
		for i, rhs := range n.Rhs {
			fl, ok := rhs.(*ast.FuncLit)
			if !ok || i >= len(n.Lhs) {
				ast.Inspect(rhs, w.visit)
				continue
			}
			key := ""
			if id, ok := n.Lhs[i].(*ast.Ident); ok {
				key = w.outer + "." + id.Name
			}
			w.pushLit(key, fl)
			ast.Inspect(fl.Body, w.visit)
			w.popLit()
		}
		for _, lhs := range n.Lhs {
			ast.Inspect(lhs, w.visit)
		}
		return false
	case *ast.FuncLit:
		w.pushLit("", n)
		ast.Inspect(n.Body, w.visit)
		w.popLit()
		return false
	case *ast.CallExpr:
		w.call(n)
	}
	return true
}

func (w *funcWalker) pushLit(key string, fl *ast.FuncLit) {
	if key != "" && isLookupType(fl.Type) {
		w.s.markReader(key, 0)
	}
	w.enter(key, fl.Type)
}

func (w *funcWalker) popLit() { w.stack = w.stack[:len(w.stack)-1] }

// calleeKey names the function a call calls, as readers are keyed.
func (w *funcWalker) calleeKey(fun ast.Expr) string {
	switch f := fun.(type) {
	case *ast.Ident:
		if local := w.outer + "." + f.Name; w.s.readers[local] != nil {
			return local
		}
		return w.p.path + "." + f.Name
	case *ast.SelectorExpr:
		x, ok := f.X.(*ast.Ident)
		if !ok {
			return ""
		}
		if path, ok := w.imports[x.Name]; ok {
			return path + "." + f.Sel.Name
		}
	}
	return ""
}

func (w *funcWalker) call(c *ast.CallExpr) {
	key := w.calleeKey(c.Fun)
	positions := w.s.readers[key]
	if key == "os.Getenv" || key == "os.LookupEnv" {
		positions = []int{0}
	}
	for _, i := range positions {
		if i >= len(c.Args) {
			continue
		}
		w.arg(c.Args[i])
	}
}

// arg handles the argument of a read that names the variable.
func (w *funcWalker) arg(e ast.Expr) {
	pos := w.p.fset.Position(e.Pos())
	where := fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line)
	if id, ok := e.(*ast.Ident); ok {
		// A parameter: the enclosing function forwards it, and is a read
		// itself at that position.
		for k := len(w.stack) - 1; k >= 0; k-- {
			if i, ok := w.stack[k].params[id.Name]; ok {
				if w.stack[k].key != "" {
					w.s.markReader(w.stack[k].key, i)
				}
				return
			}
		}
	}
	if !w.collect {
		return
	}
	names, ok := w.resolve(e)
	if !ok {
		w.s.errs = append(w.s.errs, fmt.Sprintf("%s: %s", where, exprString(w.p.fset, e)))
		return
	}
	for _, n := range names {
		w.s.found[n] = append(w.s.found[n], w.p.path[strings.LastIndex(w.p.path, "/")+1:]+"/"+where)
	}
}

func (w *funcWalker) resolve(e ast.Expr) ([]string, bool) {
	if v, ok := stringLit(e); ok {
		return []string{v}, true
	}
	name := ""
	switch x := e.(type) {
	case *ast.Ident:
		name = w.p.path + "." + x.Name
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			name = w.imports[id.Name] + "." + x.Sel.Name
		}
	case *ast.IndexExpr:
		var m string
		switch mx := x.X.(type) {
		case *ast.Ident:
			m = w.p.path + "." + mx.Name
		case *ast.SelectorExpr:
			if id, ok := mx.X.(*ast.Ident); ok {
				m = w.imports[id.Name] + "." + mx.Sel.Name
			}
		}
		vals, ok := w.s.maps[m]
		return vals, ok
	}
	v, ok := w.s.consts[name]
	return []string{v}, ok
}

func exprString(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	if err := printer.Fprint(&b, fset, e); err != nil {
		return fmt.Sprintf("%T", e)
	}
	return b.String()
}
