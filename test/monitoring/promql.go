package monitoring

import (
	"slices"
	"strings"
)

// MetricNames returns the metric names a PromQL expression selects, sorted, each once.
//
// A lexer, not Prometheus's parser (github.com/prometheus/prometheus/promql/parser
// would bring k8s.io v0.37 into go.mod): it skips string literals, comments, label
// matchers (but reads a {__name__="..."} matcher), range and subquery brackets,
// Grafana's $variables and the label lists of by, without, on, ignoring,
// group_left and group_right; an identifier left that no '(' follows and that is no
// keyword is a metric name. promtool check rules, which the tests run, rejects what
// is not PromQL at all.
func MetricNames(expr string) []string {
	var names []string
	for i := 0; i < len(expr); {
		var name string
		switch c := expr[i]; {
		case c == '{':
			name, i = matchers(expr, i)
		case isIdentStart(c):
			name, i = identifier(expr, i)
		default:
			i = skip(expr, i)
		}
		if name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// skip returns the index after what starts at i and names no metric: a string, a
// comment, a range, a Grafana variable, a number, or one character.
func skip(expr string, i int) int {
	n := len(expr)
	switch c := expr[i]; {
	case c == '"' || c == '\'' || c == '`':
		_, i = skipString(expr, i)
	case c == '#':
		for i < n && expr[i] != '\n' {
			i++
		}
	case c == '[':
		for i < n && expr[i] != ']' {
			i++
		}
	case c == '$':
		i++
		if i < n && expr[i] == '{' {
			for i < n && expr[i] != '}' {
				i++
			}
		}
		for i < n && isIdentChar(expr[i]) {
			i++
		}
	case c >= '0' && c <= '9' || c == '.':
		for i < n && (isIdentChar(expr[i]) || expr[i] == '.') {
			i++
		}
	default:
		i++
	}
	return i
}

// identifier reads the identifier at i: the metric name it is, or "" for a keyword,
// a function or an aggregation (a by clause's labels skipped), and the index after it.
func identifier(expr string, i int) (string, int) {
	n, start := len(expr), i
	for i < n && isIdentChar(expr[i]) {
		i++
	}
	ident := expr[start:i]
	j := i
	for j < n && (expr[j] == ' ' || expr[j] == '\t' || expr[j] == '\n' || expr[j] == '\r') {
		j++
	}
	lower := strings.ToLower(ident)
	paren := j < n && expr[j] == '('
	switch {
	case labelListKeywords[lower]:
		if paren {
			return "", skipParens(expr, j)
		}
		return "", i
	case paren, keywords[lower]: // a function or an aggregation, or a keyword
		return "", i
	}
	return ident, i
}

// labelListKeywords take a list of label names in parentheses.
var labelListKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// keywords are PromQL's words that are no metric name: operators, modifiers, and the
// aggregations, which a by or without clause may part from their '('.
var keywords = map[string]bool{"and": true, "or": true, "unless": true, "offset": true, "bool": true, "inf": true, "nan": true, "atan2": true, "start": true, "end": true,
	"sum": true, "avg": true, "count": true, "min": true, "max": true, "group": true, "stddev": true, "stdvar": true, "topk": true, "bottomk": true,
	"quantile": true, "count_values": true, "limitk": true, "limit_ratio": true}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// skipString returns the string literal at i, unquoted loosely, and the index after it.
func skipString(s string, i int) (string, int) {
	q := s[i]
	var b strings.Builder
	for i++; i < len(s) && s[i] != q; i++ {
		if s[i] == '\\' && q != '`' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String(), i + 1
}

// skipParens returns the index after the parenthesis group at i.
func skipParens(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '"', '\'', '`':
			_, i = skipString(s, i)
			i--
		}
	}
	return i
}

// matchers skips the label matchers at i ('{') and returns the metric name of a
// __name__ equality matcher among them, and the index after the '}'.
func matchers(s string, i int) (string, int) {
	var name string
	for i++; i < len(s) && s[i] != '}'; {
		if strings.HasPrefix(s[i:], "__name__") {
			j := i + len("__name__")
			for j < len(s) && s[j] == ' ' {
				j++
			}
			if j+1 < len(s) && s[j] == '=' && s[j+1] != '~' {
				j++
				for j < len(s) && s[j] == ' ' {
					j++
				}
				if j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == '`') {
					name, i = skipString(s, j)
					continue
				}
			}
		}
		if s[i] == '"' || s[i] == '\'' || s[i] == '`' {
			_, i = skipString(s, i)
			continue
		}
		i++
	}
	return name, i + 1
}
