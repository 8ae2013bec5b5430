package git

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestByteLRU: what is kept counts the sizes of its entries through every change
// (a replace, a remove, an eviction, a purge); trim evicts the least recently used
// first, where get makes an entry the most recently used and peek does not.
func TestByteLRU(t *testing.T) {
	type state struct {
		Bytes   int64
		Len     int
		Kept    map[string]int
		Evicted []string
	}
	tests := []struct {
		name string
		do   func(c *byteLRU[string, int], evicted func(string, int))
		want state
	}{{
		name: "adds count",
		do: func(c *byteLRU[string, int], _ func(string, int)) {
			c.add("a", 1, 10)
			c.add("b", 2, 20)
		},
		want: state{Bytes: 30, Len: 2, Kept: map[string]int{"a": 1, "b": 2}},
	}, {
		name: "a replace counts the new size only",
		do: func(c *byteLRU[string, int], _ func(string, int)) {
			c.add("a", 1, 10)
			c.add("a", 2, 25)
		},
		want: state{Bytes: 25, Len: 1, Kept: map[string]int{"a": 2}},
	}, {
		name: "remove and purge uncount",
		do: func(c *byteLRU[string, int], _ func(string, int)) {
			c.add("a", 1, 10)
			c.add("b", 2, 20)
			c.remove("a")
			c.remove("absent")
			c.add("c", 3, 5)
			c.purge()
			c.add("d", 4, 7)
		},
		want: state{Bytes: 7, Len: 1, Kept: map[string]int{"d": 4}},
	}, {
		name: "trim evicts the least recently added first",
		do: func(c *byteLRU[string, int], evicted func(string, int)) {
			c.add("a", 1, 10)
			c.add("b", 2, 10)
			c.add("c", 3, 10)
			c.trim(15, evicted)
		},
		want: state{Bytes: 10, Len: 1, Kept: map[string]int{"c": 3}, Evicted: []string{"a", "b"}},
	}, {
		name: "get promotes",
		do: func(c *byteLRU[string, int], evicted func(string, int)) {
			c.add("a", 1, 10)
			c.add("b", 2, 10)
			c.get("a")
			c.trim(10, evicted)
		},
		want: state{Bytes: 10, Len: 1, Kept: map[string]int{"a": 1}, Evicted: []string{"b"}},
	}, {
		name: "peek does not promote",
		do: func(c *byteLRU[string, int], evicted func(string, int)) {
			c.add("a", 1, 10)
			c.add("b", 2, 10)
			c.peek("a")
			c.trim(10, evicted)
		},
		want: state{Bytes: 10, Len: 1, Kept: map[string]int{"b": 2}, Evicted: []string{"a"}},
	}, {
		name: "a replace promotes",
		do: func(c *byteLRU[string, int], evicted func(string, int)) {
			c.add("a", 1, 10)
			c.add("b", 2, 10)
			c.add("a", 3, 10)
			c.trim(10, evicted)
		},
		want: state{Bytes: 10, Len: 1, Kept: map[string]int{"a": 3}, Evicted: []string{"b"}},
	}, {
		name: "trim within the bound evicts nothing",
		do: func(c *byteLRU[string, int], evicted func(string, int)) {
			c.add("a", 1, 10)
			c.trim(10, evicted)
			c.trim(10, nil)
		},
		want: state{Bytes: 10, Len: 1, Kept: map[string]int{"a": 1}},
	}, {
		name: "trim to zero empties",
		do: func(c *byteLRU[string, int], evicted func(string, int)) {
			c.add("a", 1, 10)
			c.add("b", 2, 0)
			c.trim(0, evicted)
		},
		want: state{Bytes: 0, Len: 1, Kept: map[string]int{"b": 2}, Evicted: []string{"a"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newByteLRU[string, int]()
			var got state
			tt.do(c, func(k string, _ int) { got.Evicted = append(got.Evicted, k) })
			got.Bytes, got.Len, got.Kept = c.bytes, c.len(), map[string]int{}
			for _, k := range []string{"a", "b", "c", "d"} {
				if v, ok := c.peek(k); ok {
					got.Kept[k] = v
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
