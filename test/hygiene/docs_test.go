package hygiene

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/fnops/func-operator/test/envtest"
)

// TestDocs_LinksResolve fails on a link of the repository's markdown (README.md,
// docs/, modules/) to a file that does not exist, or to a heading the file does
// not have: moving a section must move the links to it too.
func TestDocs_LinksResolve(t *testing.T) {
	root := envtest.RepoRoot()
	files := markdownFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no markdown files found")
	}
	anchors := map[string]map[string]bool{} // by absolute path
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := headingAnchors(string(mustRead(t, path)))
		anchors[path] = a
		return a
	}
	checked := 0
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		for _, link := range markdownLinks(string(mustRead(t, file))) {
			if isExternal(link) {
				continue
			}
			checked++
			target, anchor, _ := strings.Cut(link, "#")
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %v", rel, link, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s: link %q: an anchor into a file that is not markdown", rel, link)
				continue
			}
			if !anchorsOf(path)[anchor] {
				t.Errorf("%s: link %q: no heading with anchor %q in %s", rel, link, anchor, target)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links checked: the link parser finds nothing")
	}
}

// TestDocs_ListedInTheREADME fails when a page of docs/ is not linked from the
// README (its "Where to read on"), or when a page does not start with its title and
// a sentence saying what a reader comes to it for.
func TestDocs_ListedInTheREADME(t *testing.T) {
	root := envtest.RepoRoot()
	readme := string(mustRead(t, filepath.Join(root, "README.md")))
	linked := map[string]bool{}
	for _, link := range markdownLinks(readme) {
		target, _, _ := strings.Cut(link, "#")
		linked[target] = true
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	for _, page := range pages {
		name := "docs/" + filepath.Base(page)
		if !linked[name] {
			t.Errorf("README.md does not link %s", name)
		}
		lines := strings.Split(string(mustRead(t, page)), "\n")
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "# ") || lines[1] != "" || !startsProse(lines[2]) {
			t.Errorf("%s: want a title (# …), a blank line, then a sentence saying what the page is for", name)
		}
	}
}

// readmeMaxLines bounds the README: a front door (what it is, the demo, the two
// commands, installing, where to read on); reference material lives in docs/.
const readmeMaxLines = 150

// TestDocs_READMEIsAFrontDoor fails when the README grows past readmeMaxLines.
func TestDocs_READMEIsAFrontDoor(t *testing.T) {
	readme := strings.TrimRight(string(mustRead(t, filepath.Join(envtest.RepoRoot(), "README.md"))), "\n")
	lines := strings.Count(readme, "\n") + 1
	if lines > readmeMaxLines {
		t.Errorf("README.md has %d lines, want at most %d: move reference material to docs/", lines, readmeMaxLines)
	}
	if lines < 20 {
		t.Errorf("README.md has %d lines: not the README (the control)", lines)
	}
}

// TestDocs_Parsers checks the helpers above on small inputs.
func TestDocs_Parsers(t *testing.T) {
	doc := "# Title\n\n## What `config/` holds\n\n```sh\n# not a heading\n```\n\n## Tests: tiers and names\n## Tests: tiers and names\n" +
		"See [a](docs/a.md#x), `[not](a link)`, [web](https://example.com) and [here](#title).\n"
	gotAnchors := keys(headingAnchors(doc))
	wantAnchors := []string{"tests-tiers-and-names", "tests-tiers-and-names-1", "title", "what-config-holds"}
	if strings.Join(gotAnchors, " ") != strings.Join(wantAnchors, " ") {
		t.Errorf("anchors: want %v, got %v", wantAnchors, gotAnchors)
	}
	gotLinks := markdownLinks(doc)
	wantLinks := []string{"docs/a.md#x", "https://example.com", "#title"}
	if strings.Join(gotLinks, " ") != strings.Join(wantLinks, " ") {
		t.Errorf("links: want %v, got %v", wantLinks, gotLinks)
	}
}

// markdownFiles lists the repository's own markdown: not third_party/, bin/, testdata
// or hidden directories.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "third_party" || name == "bin" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	headingRE    = regexp.MustCompile(`^#{1,6} (.+)$`)
)

// prose returns the lines of a markdown document outside fenced code blocks.
func prose(doc string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// markdownLinks returns the targets of the inline links of doc, outside code.
func markdownLinks(doc string) []string {
	var links []string
	for _, line := range prose(doc) {
		for _, m := range linkRE.FindAllStringSubmatch(inlineCodeRE.ReplaceAllString(line, ""), -1) {
			links = append(links, m[1])
		}
	}
	return links
}

// headingAnchors returns the anchors GitHub gives the headings of doc: lower case,
// punctuation dropped, spaces as hyphens, a repeated one numbered.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(doc) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

func isExternal(link string) bool {
	return strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:")
}

func startsProse(line string) bool {
	return line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "|") &&
		!strings.HasPrefix(line, "```") && !strings.HasPrefix(line, "- ")
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
